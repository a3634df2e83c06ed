// The Kafka listener's consumer groups: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit
// and OffsetFetch, on the group coordinators and committed offsets the HTTP API uses (groups::group_routes,
// frontend::offsets_frontend). The broker assigns: JoinGroup names a leader that is no member, so no client runs its
// assignor, and SyncGroup hands each member what the group hands it. Commits go to each partition's owner (relayed
// there when this broker does not serve it), fenced by the member's generation. What a client sees is in
// docs/kafka.md, "Consumer groups".
// Thread safety: every method may be called concurrently (the coordinators serialize decisions).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>

#include "moonmq/frontend/offsets.hpp"
#include "moonmq/groups/group_routes.hpp"
#include "moonmq/kafka/group_messages.hpp"

namespace moonmq::daemon {

struct kafka_groups_parts {
  groups::group_routes* routes = nullptr;
  frontend::offsets_frontend* offsets = nullptr;
  /// A broker's Kafka node id and advertised address (nullopt: not known, its listener's address never heard of).
  std::function<std::optional<kafka::find_coordinator_response>(const broker_id&)> locate;
};

/// Kafka's bounds on a member's session timeout (group.min/max.session.timeout.ms, at their defaults).
inline constexpr std::int32_t min_session_timeout_ms = 6'000;
inline constexpr std::int32_t max_session_timeout_ms = 1'800'000;
/// The leader JoinGroup names: no member has this id, so every member waits for the broker's assignment.
inline constexpr const char* broker_assigns = "moonmq-broker-assigns";

class kafka_groups {
 public:
  explicit kafka_groups(kafka_groups_parts parts) : p_(std::move(parts)) {}

  /// `authorized`: the connection's role may use groups; without it each answer is GROUP_AUTHORIZATION_FAILED.
  kafka::find_coordinator_response find_coordinator(const kafka::find_coordinator_request& req, bool authorized);
  kafka::join_group_response join(const kafka::join_group_request& req, std::int16_t version, bool authorized);
  kafka::sync_group_response sync(const kafka::sync_group_request& req, bool authorized);
  kafka::heartbeat_response heartbeat(const kafka::heartbeat_request& req, bool authorized);
  kafka::leave_group_response leave(const kafka::leave_group_request& req, bool authorized);
  kafka::offset_commit_response commit(const kafka::offset_commit_request& req, bool authorized);
  kafka::offset_fetch_response fetch_offsets(const kafka::offset_fetch_request& req, std::int16_t version,
                                             bool authorized);
  /// Whether `member_id` is the group's member at `generation` (TxnOffsetCommit v3): 0, or the code a heartbeat
  /// would get (a rebalance under way is no refusal here).
  std::int16_t check_member(const std::string& group_id, const std::string& member_id, std::int32_t generation);

 private:
  /// A member's SyncGroup or Heartbeat on the coordinator, or the Kafka code that refuses it (checked here first:
  /// the role, the group id, the member id, the generation).
  std::variant<groups::classic_answer, std::int16_t> member_step(groups::classic_call::step what,
                                                                 const std::string& group_id,
                                                                 const std::string& member_id, std::int32_t generation,
                                                                 bool authorized);

  kafka_groups_parts p_;
};

}  // namespace moonmq::daemon
