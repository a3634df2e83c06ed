// Kafka's consumer group messages (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
// OffsetFetch) and the consumer protocol's subscription and assignment, which travel inside JoinGroup and SyncGroup
// as opaque bytes. Written by hand like messages.hpp, field by field with the version each appears in
// (lib/kafka/messages_group.cpp); none of the versions answered is flexible.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "moonmq/kafka/messages.hpp"

namespace moonmq::kafka {

/// The most partitions one OffsetCommit or OffsetFetch names, and members one LeaveGroup names: a request with more
/// is malformed (its connection is closed), so that one frame cannot turn into millions of commits or reads.
inline constexpr std::size_t max_group_request_entries = 10000;

// ---- FindCoordinator (10) -------------------------------------------------------------------------------------

struct find_coordinator_request {
  std::string key;
  std::int8_t key_type = 0;  ///< 0: a group, 1: a transactional id (v1+)
};
bool decode(reader& r, std::int16_t version, find_coordinator_request& f);

struct find_coordinator_response {
  std::int16_t error = error_code::none;
  std::optional<std::string> message;
  std::int32_t node_id = -1;
  std::string host;
  std::int32_t port = -1;
};
void encode(writer& w, std::int16_t version, const find_coordinator_response& f);

// ---- JoinGroup (11) -------------------------------------------------------------------------------------------

struct join_group_request {
  struct protocol {
    std::string name;
    std::string_view metadata;  ///< a view into the request's bytes: the member's subscription
  };
  std::string group_id;
  std::int32_t session_timeout_ms = 0;
  std::int32_t rebalance_timeout_ms = -1;
  std::string member_id;
  std::string protocol_type;
  std::vector<protocol> protocols;
};
bool decode(reader& r, std::int16_t version, join_group_request& j);

struct join_group_response {
  std::int16_t error = error_code::none;
  std::int32_t generation_id = -1;
  std::string protocol_name;
  std::string leader;
  std::string member_id;
  // No member list: the broker assigns, so no member is the leader and none is sent the others' subscriptions.
};
void encode(writer& w, std::int16_t version, const join_group_response& j);

// ---- SyncGroup (14) -------------------------------------------------------------------------------------------

struct sync_group_request {
  std::string group_id;
  std::int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;  ///< v3+
  // The assignments a leader would send are read past and ignored: the broker assigns.
};
bool decode(reader& r, std::int16_t version, sync_group_request& s);

struct sync_group_response {
  std::int16_t error = error_code::none;
  std::string assignment;  ///< the consumer protocol's assignment (encode_assignment)
};
void encode(writer& w, std::int16_t version, const sync_group_response& s);

// ---- Heartbeat (12) -------------------------------------------------------------------------------------------

struct heartbeat_request {
  std::string group_id;
  std::int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;  ///< v3+
};
bool decode(reader& r, std::int16_t version, heartbeat_request& h);

struct heartbeat_response {
  std::int16_t error = error_code::none;
};
void encode(writer& w, std::int16_t version, const heartbeat_response& h);

// ---- LeaveGroup (13) ------------------------------------------------------------------------------------------

struct leave_group_request {
  std::string group_id;
  std::vector<std::string> member_ids;  ///< one before v3, a list from v3
};
bool decode(reader& r, std::int16_t version, leave_group_request& l);

struct leave_group_response {
  std::int16_t error = error_code::none;
  std::vector<std::pair<std::string, std::int16_t>> members;  ///< v3+: each member's outcome
};
void encode(writer& w, std::int16_t version, const leave_group_response& l);

// ---- OffsetCommit (8) -----------------------------------------------------------------------------------------

struct offset_commit_request {
  struct partition {
    std::int32_t index = 0;
    std::int64_t offset = 0;
    std::optional<std::string> metadata;
  };
  struct topic {
    std::string name;
    std::vector<partition> partitions;
  };
  std::string group_id;
  std::int32_t generation_id = -1;  ///< v1+; -1: a commit from outside the group
  std::string member_id;            ///< v1+
  std::vector<topic> topics;
};
bool decode(reader& r, std::int16_t version, offset_commit_request& o);

struct offset_commit_response {
  struct topic {
    std::string name;
    std::vector<std::pair<std::int32_t, std::int16_t>> partitions;  ///< index, error
  };
  std::vector<topic> topics;
};
void encode(writer& w, std::int16_t version, const offset_commit_response& o);

// ---- OffsetFetch (9) ------------------------------------------------------------------------------------------

struct offset_fetch_request {
  struct topic {
    std::string name;
    std::vector<std::int32_t> partitions;
  };
  std::string group_id;
  std::optional<std::vector<topic>> topics;  ///< nullopt (v2+): every partition the group committed
};
bool decode(reader& r, std::int16_t version, offset_fetch_request& o);

struct offset_fetch_response {
  struct partition {
    std::int32_t index = 0;
    std::int64_t offset = -1;  ///< -1: none committed
    std::optional<std::string> metadata;
    std::int16_t error = error_code::none;
  };
  struct topic {
    std::string name;
    std::vector<partition> partitions;
  };
  std::vector<topic> topics;
  std::int16_t error = error_code::none;  ///< v2+
};
void encode(writer& w, std::int16_t version, const offset_fetch_response& o);

// ---- the consumer protocol (inside JoinGroup and SyncGroup) ---------------------------------------------------

struct subscription {
  std::vector<std::string> topics;
  std::vector<std::pair<std::string, std::int32_t>> owned;  ///< version 1+: what the member holds
};
/// A member's subscription (versions 0 to 3; later fields are not read). nullopt: malformed.
std::optional<subscription> decode_subscription(std::string_view bytes);
/// An assignment of version 0, its user data present and empty.
std::string encode_assignment(const std::vector<std::pair<std::string, std::int32_t>>& partitions);

}  // namespace moonmq::kafka
