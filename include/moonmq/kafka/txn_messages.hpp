// Kafka's transaction messages: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn (versions 0-1) and TxnOffsetCommit
// (0-3, flexible in 3). Written by hand like messages.hpp, field by field with the version each appears in
// (lib/kafka/messages_txn.cpp). InitProducerId is in messages.hpp, with the idempotent producer's.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "moonmq/kafka/messages.hpp"

namespace moonmq::kafka {

/// The most partitions one AddPartitionsToTxn or TxnOffsetCommit names: more is malformed (the connection is
/// closed), as for the group messages.
inline constexpr std::size_t max_txn_request_entries = 10000;

/// The producer a transactional request speaks for.
struct txn_producer {
  std::string transactional_id;
  std::int64_t producer_id = -1;
  std::int16_t producer_epoch = -1;
};

// ---- AddPartitionsToTxn (24) ----------------------------------------------------------------------------------

struct add_partitions_to_txn_request {
  struct topic {
    std::string name;
    std::vector<std::int32_t> partitions;
  };
  txn_producer producer;
  std::vector<topic> topics;
};
bool decode(reader& r, std::int16_t version, add_partitions_to_txn_request& a);

/// An error code per partition, by topic: AddPartitionsToTxn's and TxnOffsetCommit's answers.
struct partition_errors {
  struct partition {
    std::int32_t index = 0;
    std::int16_t error = error_code::none;
  };
  struct topic {
    std::string name;
    std::vector<partition> partitions;
  };
  std::vector<topic> topics;
};

struct add_partitions_to_txn_response : partition_errors {};
void encode(writer& w, std::int16_t version, const add_partitions_to_txn_response& a);

// ---- AddOffsetsToTxn (25) -------------------------------------------------------------------------------------

struct add_offsets_to_txn_request {
  txn_producer producer;
  std::string group_id;
};
bool decode(reader& r, std::int16_t version, add_offsets_to_txn_request& a);

// ---- EndTxn (26) ----------------------------------------------------------------------------------------------

struct end_txn_request {
  txn_producer producer;
  bool committed = false;
};
bool decode(reader& r, std::int16_t version, end_txn_request& e);

/// AddOffsetsToTxn's and EndTxn's answer: throttle time and an error code.
struct txn_error_response {
  std::int16_t error = error_code::none;
};
void encode(writer& w, std::int16_t version, const txn_error_response& e);

// ---- TxnOffsetCommit (28) -------------------------------------------------------------------------------------

struct txn_offset_commit_request {
  struct partition {
    std::int32_t index = 0;
    std::int64_t offset = 0;
    std::optional<std::string> metadata;
  };
  struct topic {
    std::string name;
    std::vector<partition> partitions;
  };
  txn_producer producer;
  std::string group_id;
  std::int32_t generation_id = -1;  ///< v3+: the member's generation (-1: not given)
  std::string member_id;            ///< v3+ (empty: not given)
  std::optional<std::string> group_instance_id;
  std::vector<topic> topics;
};
bool decode(reader& r, std::int16_t version, txn_offset_commit_request& t);

struct txn_offset_commit_response : partition_errors {};
void encode(writer& w, std::int16_t version, const txn_offset_commit_response& t);

}  // namespace moonmq::kafka
