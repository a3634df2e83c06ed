// The consumer groups on one broker's network, and the group membership front end every client protocol calls:
// typed calls (join, heartbeat, leave, describe) run on the group's coordinator, directly when that is this broker
// and over /cluster/group/* otherwise (serialised only then, lib/groups/group_wire.hpp); the inter-broker routes
// themselves (join, heartbeat, leave, describe, check, clear); and the fenced commit a partition's owner runs.
// Transport-independent, like cluster_service: the daemon's client API, the in-process test clusters and the
// simulation sit on top of the same object.
//
// A call arriving at a broker that does not coordinate the group is forwarded to the coordinator on the caller's
// thread (peer_client::call_now); an unreachable coordinator is errc::unavailable naming it. A member's
// connection lives on the broker it joined through: a forwarded join must name the forwarding broker as the
// member's, and the member is handed only partitions that broker owns (fetches are served by the owner).
// Thread safety: every method may be called concurrently.
#pragma once

#include <array>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "moonmq/transport/list_page.hpp"
#include "moonmq/transport/peer_client.hpp"
#include "moonmq/core/outcome.hpp"
#include "moonmq/groups/group_service.hpp"

namespace moonmq::groups {

/// A member's join through this broker (`broker`: where its connection lives; the broker the call comes through).
struct join_call {
  std::string group;
  std::string member_id;  ///< empty: a new member (the coordinator picks its id)
  broker_id broker;
  std::vector<std::string> topics;
};

struct heartbeat_call {
  std::string group;
  std::string member_id;
  std::uint64_t member_epoch = 0;
  std::vector<topic_partition> owned;  ///< what the member holds now
};

/// A Kafka classic-protocol call (JoinGroup, SyncGroup, Heartbeat) through this broker.
struct classic_call {
  enum class step { join, sync, heartbeat };
  step what = step::join;
  std::string group;
  classic_join join;             ///< join: all of it (member_id empty: a new member); sync, heartbeat: member_id
  std::uint64_t generation = 0;  ///< sync, heartbeat
};

class group_routes {
 public:
  /// `brokers`: every configured broker, this one included. `clock`: milliseconds of a monotonic clock (default: the
  /// steady clock), passed to the coordinator and used for clearance back-off.
  group_routes(group_service& service, transport::peer_client& peers, std::vector<broker_id> brokers,
               std::function<time_ms()> clock = {});

  /// Handles a /cluster/group/ROUTE request (on the coordinator, `clear` on a partition's owner, `list` on any
  /// broker: the groups it coordinates).
  transport::response handle_cluster(const transport::request& req);

  /// The membership calls, on the group's coordinator. Errors: invalid_argument (the call's shape), not_found (an
  /// unknown member, or group for describe), conflict (a fenced member: it must join again), not_owner (a
  /// coordinator that says it is not one: the brokers disagree on the cluster), unavailable (the coordinator did not
  /// answer: refusal::coordinator_silent). Every refusal is the coordinator's (by_coordinator).
  outcome<member_answer> join(const join_call& c);
  outcome<member_answer> heartbeat(const heartbeat_call& c);
  outcome<done> leave(const std::string& group_id, const std::string& member_id);
  /// Kafka's classic protocol, on the coordinator (errors as join's; not_found: Kafka's UNKNOWN_MEMBER_ID,
  /// conflict: ILLEGAL_GENERATION).
  outcome<classic_answer> classic(const classic_call& c);
  outcome<group_description> describe(const std::string& group_id);
  /// The groups this broker coordinates.
  /// This broker's groups as `/cluster/group/list` answers them: {"coordinator","groups":[names],"more"}, one page.
  std::string list_document(const transport::list_page& page) const;

  /// On the partition's owner: asks the group's coordinator (here, or over /cluster/group/check) whether
  /// `member_id` at `member_epoch` may commit `tp`, and runs `write` if so, all under the (group, partition) commit
  /// gate that a clearance (/cluster/group/clear) passes through. errc::conflict when fenced, errc::unavailable when
  /// the coordinator does not answer; otherwise what `write` returns.
  status fenced_commit(const std::string& group_id, const std::string& member_id, std::uint64_t member_epoch,
                       const topic_partition& tp, const std::function<status()>& write);

  /// Asks the owners of partitions waiting for clearance and reports their answers to the service (the ticker). An
  /// owner that did not answer is asked again only after `clear_retry`.
  void clear_pending();

  broker_id coordinator_of(const std::string& group_id) const { return groups::coordinator_of(group_id, brokers_); }
  const broker_id& self() const { return peers_.directory().self; }

  static constexpr time_ms clear_retry = 5000;

 private:
  status check_commit(const std::string& group_id, const std::string& member_id, std::uint64_t member_epoch,
                      const topic_partition& tp);
  /// `route` with `body` sent to the coordinator of `group_id`; its error when it refuses or does not answer.
  outcome<transport::response> forward(const std::string& group_id, const std::string& route, std::string body);
  result<member_answer> join_here(const join_call& c, const std::string& forwarded_by);
  result<member_answer> heartbeat_here(const heartbeat_call& c);
  result<classic_answer> classic_here(const classic_call& c);
  /// The commit gate of (group, partition) on this broker (one of a fixed set).
  std::mutex& commit_gate(const std::string& group_id, const topic_partition& tp);

  group_service& service_;
  transport::peer_client& peers_;
  std::vector<broker_id> brokers_;
  std::function<time_ms()> clock_;
  std::mutex clear_mu_;                      ///< one clear_pending at a time
  std::map<broker_id, time_ms> clear_retry_at_;  ///< under clear_mu_
  std::array<std::mutex, 256> commit_gates_;
};

}  // namespace moonmq::groups
