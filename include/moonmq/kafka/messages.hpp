// Kafka's requests and responses for the APIs the listener answers, as typed messages: `decode_*` reads a request
// body of a given version (false: malformed), `encode_*` appends a response body of that version. The definitions are
// written here by hand for the subset in docs/kafka.md (a table per API in lib/kafka/*.cpp, field by field with the
// version each field appears in), and no field is sized from the input before the reader has checked it.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "moonmq/kafka/codec.hpp"

namespace moonmq::kafka {

enum class api : std::int16_t {
  produce = 0,
  fetch = 1,
  list_offsets = 2,
  metadata = 3,
  offset_commit = 8,
  offset_fetch = 9,
  find_coordinator = 10,
  join_group = 11,
  heartbeat = 12,
  leave_group = 13,
  sync_group = 14,
  sasl_handshake = 17,
  api_versions = 18,
  create_topics = 19,
  delete_topics = 20,
  init_producer_id = 22,
  offset_for_leader_epoch = 23,
  add_partitions_to_txn = 24,
  add_offsets_to_txn = 25,
  end_txn = 26,
  txn_offset_commit = 28,
  describe_configs = 32,
  sasl_authenticate = 36,
  create_partitions = 37,
};

/// Kafka's error codes this broker answers with.
namespace error_code {
inline constexpr std::int16_t none = 0;
inline constexpr std::int16_t unknown_server_error = -1;
inline constexpr std::int16_t offset_out_of_range = 1;
inline constexpr std::int16_t corrupt_message = 2;
inline constexpr std::int16_t unknown_topic_or_partition = 3;
inline constexpr std::int16_t leader_not_available = 5;
inline constexpr std::int16_t not_leader_or_follower = 6;
inline constexpr std::int16_t request_timed_out = 7;
inline constexpr std::int16_t message_too_large = 10;
inline constexpr std::int16_t offset_metadata_too_large = 12;
inline constexpr std::int16_t coordinator_load_in_progress = 14;
inline constexpr std::int16_t coordinator_not_available = 15;
inline constexpr std::int16_t not_coordinator = 16;
inline constexpr std::int16_t invalid_topic = 17;
inline constexpr std::int16_t record_list_too_large = 18;
inline constexpr std::int16_t invalid_required_acks = 21;
inline constexpr std::int16_t illegal_generation = 22;
inline constexpr std::int16_t inconsistent_group_protocol = 23;
inline constexpr std::int16_t invalid_group_id = 24;
inline constexpr std::int16_t unknown_member_id = 25;
inline constexpr std::int16_t invalid_session_timeout = 26;
inline constexpr std::int16_t rebalance_in_progress = 27;
inline constexpr std::int16_t topic_authorization_failed = 29;
inline constexpr std::int16_t group_authorization_failed = 30;
inline constexpr std::int16_t cluster_authorization_failed = 31;
inline constexpr std::int16_t unsupported_sasl_mechanism = 33;
inline constexpr std::int16_t illegal_sasl_state = 34;
inline constexpr std::int16_t unsupported_version = 35;
inline constexpr std::int16_t topic_already_exists = 36;
inline constexpr std::int16_t invalid_partitions = 37;
inline constexpr std::int16_t invalid_replication_factor = 38;
inline constexpr std::int16_t invalid_replica_assignment = 39;
inline constexpr std::int16_t invalid_config = 40;
inline constexpr std::int16_t invalid_request = 42;
inline constexpr std::int16_t unsupported_for_message_format = 43;
inline constexpr std::int16_t policy_violation = 44;
inline constexpr std::int16_t out_of_order_sequence_number = 45;
inline constexpr std::int16_t duplicate_sequence_number = 46;
inline constexpr std::int16_t invalid_producer_epoch = 47;
inline constexpr std::int16_t invalid_txn_state = 48;
inline constexpr std::int16_t invalid_producer_id_mapping = 49;
inline constexpr std::int16_t invalid_transaction_timeout = 50;
inline constexpr std::int16_t concurrent_transactions = 51;
inline constexpr std::int16_t transactional_id_authorization_failed = 53;
inline constexpr std::int16_t operation_not_attempted = 55;
inline constexpr std::int16_t producer_fenced = 90;
inline constexpr std::int16_t sasl_authentication_failed = 58;
inline constexpr std::int16_t unknown_producer_id = 59;
inline constexpr std::int16_t kafka_storage_error = 56;
inline constexpr std::int16_t fenced_leader_epoch = 74;
inline constexpr std::int16_t unknown_leader_epoch = 75;
inline constexpr std::int16_t unsupported_compression_type = 76;
inline constexpr std::int16_t member_id_required = 79;
inline constexpr std::int16_t group_max_size_reached = 81;
inline constexpr std::int16_t invalid_record = 87;
}  // namespace error_code

struct version_range {
  api key;
  std::int16_t min = 0;
  std::int16_t max = 0;
};

/// The APIs and versions this broker answers (ApiVersions' answer).
const std::vector<version_range>& supported_versions();
std::optional<version_range> supported(std::int16_t key);
/// Whether `version` of `key` uses the flexible encoding (compact types, tagged fields, request header v2).
bool flexible(api key, std::int16_t version);

// ---- framing --------------------------------------------------------------------------------------------------

struct request_header {
  std::int16_t api_key = 0;
  std::int16_t api_version = 0;
  std::int32_t correlation_id = 0;
  std::optional<std::string> client_id;
};

/// Reads the header of a request (whose size prefix is already taken off). For an API this broker does not answer,
/// or a version outside its range, only key, version and correlation id are read (enough to answer the refusal).
bool decode_header(reader& r, request_header& h);
/// Starts a response: the size prefix (patched by finish_response) and the response header.
void start_response(writer& w, const request_header& h);
void finish_response(writer& w);

// ---- ApiVersions (18) -----------------------------------------------------------------------------------------

struct api_versions_response {
  std::int16_t error = error_code::none;
};
void encode(writer& w, std::int16_t version, const api_versions_response& r);

// ---- Metadata (3) ---------------------------------------------------------------------------------------------

struct metadata_request {
  std::optional<std::vector<std::string>> topics;  ///< nullopt: every topic
  bool allow_auto_topic_creation = false;
};
bool decode(reader& r, std::int16_t version, metadata_request& m);

struct metadata_response {
  struct broker {
    std::int32_t node_id = 0;
    std::string host;
    std::int32_t port = 0;
  };
  struct partition {
    std::int16_t error = error_code::none;
    std::int32_t index = 0;
    std::int32_t leader = -1;
    std::int32_t leader_epoch = -1;
    std::vector<std::int32_t> replicas;  ///< also the in-sync replicas: one replica, the owner
  };
  struct topic {
    std::int16_t error = error_code::none;
    std::string name;
    std::vector<partition> partitions;
  };
  std::vector<broker> brokers;
  std::string cluster_id;
  std::int32_t controller_id = -1;
  std::vector<topic> topics;
};
void encode(writer& w, std::int16_t version, const metadata_response& m);

// ---- Produce (0) ----------------------------------------------------------------------------------------------

struct produce_request {
  struct partition {
    std::int32_t index = 0;
    std::optional<std::string_view> records;  ///< a view into the request's bytes
  };
  struct topic {
    std::string name;
    std::vector<partition> partitions;
  };
  std::optional<std::string> transactional_id;
  std::int16_t acks = -1;
  std::int32_t timeout_ms = 0;
  std::vector<topic> topics;
};
bool decode(reader& r, std::int16_t version, produce_request& p);

struct produce_response {
  struct partition {
    std::int32_t index = 0;
    std::int16_t error = error_code::none;
    std::int64_t base_offset = -1;
    std::int64_t log_start_offset = -1;
  };
  struct topic {
    std::string name;
    std::vector<partition> partitions;
  };
  std::vector<topic> topics;
};
void encode(writer& w, std::int16_t version, const produce_response& p);

// ---- Fetch (1) ------------------------------------------------------------------------------------------------

struct fetch_request {
  struct partition {
    std::int32_t index = 0;
    std::int64_t offset = 0;
    std::int32_t max_bytes = 0;
  };
  struct topic {
    std::string name;
    std::vector<partition> partitions;
  };
  std::int32_t max_wait_ms = 0;
  std::int32_t min_bytes = 0;
  std::int32_t max_bytes = 0x7fffffff;
  bool read_committed = false;
  std::int32_t session_id = 0;
  std::int32_t session_epoch = -1;
  std::vector<topic> topics;
};
bool decode(reader& r, std::int16_t version, fetch_request& f);

struct fetch_response {
  struct partition {
    std::int32_t index = 0;
    std::int16_t error = error_code::none;
    std::int64_t high_watermark = -1;
    std::int64_t last_stable_offset = -1;
    std::int64_t log_start_offset = -1;
    std::string records;  ///< record batches
  };
  struct topic {
    std::string name;
    std::vector<partition> partitions;
  };
  std::int16_t error = error_code::none;
  std::vector<topic> topics;
};
void encode(writer& w, std::int16_t version, const fetch_response& f);

// The same response written piece by piece, so that a partition's record batches are encoded straight into it (a
// fetch of 1 MB is not copied once more): the head with the number of topics, then each topic's name with its
// number of partitions, then each partition's fields up to its records (p.records is not written), then its batches
// appended to w.bytes(), then their length patched at the position encode_fetch_partition returned.
void encode_fetch_head(writer& w, std::int16_t version, std::int16_t error, std::size_t topics);
void encode_fetch_topic(writer& w, const std::string& name, std::size_t partitions);
std::size_t encode_fetch_partition(writer& w, std::int16_t version, const fetch_response::partition& p);
void end_fetch_partition(writer& w, std::size_t records_at);

// ---- ListOffsets (2) ------------------------------------------------------------------------------------------

inline constexpr std::int64_t latest_timestamp = -1;
inline constexpr std::int64_t earliest_timestamp = -2;

struct list_offsets_request {
  struct partition {
    std::int32_t index = 0;
    std::int64_t timestamp = latest_timestamp;
  };
  struct topic {
    std::string name;
    std::vector<partition> partitions;
  };
  bool read_committed = false;
  std::vector<topic> topics;
};
bool decode(reader& r, std::int16_t version, list_offsets_request& l);

struct list_offsets_response {
  struct partition {
    std::int32_t index = 0;
    std::int16_t error = error_code::none;
    std::int64_t timestamp = -1;
    std::int64_t offset = -1;
  };
  struct topic {
    std::string name;
    std::vector<partition> partitions;
  };
  std::vector<topic> topics;
};
void encode(writer& w, std::int16_t version, const list_offsets_response& l);

// ---- InitProducerId (22) --------------------------------------------------------------------------------------

struct init_producer_id_request {
  std::optional<std::string> transactional_id;
  std::int32_t transaction_timeout_ms = 0;
  std::int64_t producer_id = -1;
  std::int16_t producer_epoch = -1;
};
bool decode(reader& r, std::int16_t version, init_producer_id_request& i);

struct init_producer_id_response {
  std::int16_t error = error_code::none;
  std::int64_t producer_id = -1;
  std::int16_t producer_epoch = -1;
};
void encode(writer& w, std::int16_t version, const init_producer_id_response& i);

// ---- SaslHandshake (17), SaslAuthenticate (36) ----------------------------------------------------------------

struct sasl_handshake_request {
  std::string mechanism;
};
bool decode(reader& r, std::int16_t version, sasl_handshake_request& s);
struct sasl_handshake_response {
  std::int16_t error = error_code::none;
  std::vector<std::string> mechanisms;
};
void encode(writer& w, std::int16_t version, const sasl_handshake_response& s);

struct sasl_authenticate_request {
  std::string auth_bytes;
};
bool decode(reader& r, std::int16_t version, sasl_authenticate_request& s);
struct sasl_authenticate_response {
  std::int16_t error = error_code::none;
  std::optional<std::string> message;
  std::string auth_bytes;
};
void encode(writer& w, std::int16_t version, const sasl_authenticate_response& s);

// ---- CreateTopics (19) ----------------------------------------------------------------------------------------

struct create_topics_request {
  struct topic {
    std::string name;
    std::int32_t partitions = -1;          ///< -1: the broker's default
    std::int16_t replication_factor = -1;  ///< -1: the broker's default
    std::vector<std::pair<std::int32_t, std::vector<std::int32_t>>> assignments;  ///< partition -> brokers
    std::vector<std::pair<std::string, std::optional<std::string>>> configs;
  };
  std::vector<topic> topics;
  std::int32_t timeout_ms = 0;
  bool validate_only = false;
};
bool decode(reader& r, std::int16_t version, create_topics_request& c);

struct create_topics_response {
  struct topic {
    std::string name;
    std::int16_t error = error_code::none;
    std::optional<std::string> message;
  };
  std::vector<topic> topics;
};
void encode(writer& w, std::int16_t version, const create_topics_response& c);

// ---- CreatePartitions (37) ------------------------------------------------------------------------------------

struct create_partitions_request {
  struct topic {
    std::string name;
    std::int32_t count = 0;  ///< the new total
    std::optional<std::vector<std::vector<std::int32_t>>> assignments;  ///< per new partition, its brokers
  };
  std::vector<topic> topics;
  std::int32_t timeout_ms = 0;
  bool validate_only = false;
};
bool decode(reader& r, std::int16_t version, create_partitions_request& c);

struct create_partitions_response {
  struct result {
    std::string name;
    std::int16_t error = error_code::none;
    std::optional<std::string> message;
  };
  std::vector<result> results;
};
void encode(writer& w, std::int16_t version, const create_partitions_response& c);

// ---- DeleteTopics (20) ----------------------------------------------------------------------------------------

struct delete_topics_request {
  std::vector<std::string> names;
  std::int32_t timeout_ms = 0;
};
bool decode(reader& r, std::int16_t version, delete_topics_request& d);

struct delete_topics_response {
  struct topic {
    std::string name;
    std::int16_t error = error_code::none;
  };
  std::vector<topic> responses;
};
void encode(writer& w, std::int16_t version, const delete_topics_response& d);

// ---- DescribeConfigs (32) -------------------------------------------------------------------------------------

struct describe_configs_request {
  static constexpr std::int8_t topic_resource = 2;
  static constexpr std::int8_t broker_resource = 4;
  struct resource {
    std::int8_t type = 0;
    std::string name;
    std::optional<std::vector<std::string>> keys;  ///< none: every config
  };
  std::vector<resource> resources;
  bool include_synonyms = false;
};
bool decode(reader& r, std::int16_t version, describe_configs_request& d);

struct describe_configs_response {
  static constexpr std::int8_t static_broker_config = 4;
  static constexpr std::int8_t default_config = 5;
  struct config {
    std::string name;
    std::optional<std::string> value;
    bool read_only = true;
    std::int8_t source = default_config;
  };
  struct result {
    std::int16_t error = error_code::none;
    std::optional<std::string> message;
    std::int8_t type = 0;
    std::string name;
    std::vector<config> configs;
  };
  std::vector<result> results;
};
void encode(writer& w, std::int16_t version, const describe_configs_response& d);

// ---- OffsetForLeaderEpoch (23) --------------------------------------------------------------------------------

struct offset_for_leader_epoch_request {
  struct partition {
    std::int32_t index = 0;
    std::int32_t current_leader_epoch = -1;  ///< v2+; -1: not checked
    std::int32_t leader_epoch = -1;
  };
  struct topic {
    std::string name;
    std::vector<partition> partitions;
  };
  std::int32_t replica_id = -1;  ///< v3+
  std::vector<topic> topics;
};
bool decode(reader& r, std::int16_t version, offset_for_leader_epoch_request& o);

struct offset_for_leader_epoch_response {
  struct partition {
    std::int16_t error = error_code::none;
    std::int32_t index = 0;
    std::int32_t leader_epoch = -1;  ///< v1+
    std::int64_t end_offset = -1;
  };
  struct topic {
    std::string name;
    std::vector<partition> partitions;
  };
  std::vector<topic> topics;
};
void encode(writer& w, std::int16_t version, const offset_for_leader_epoch_response& o);

}  // namespace moonmq::kafka
