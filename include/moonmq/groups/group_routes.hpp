// The consumer groups on one broker's network: the inter-broker /cluster/group/* routes (join, heartbeat, leave,
// describe, check, clear), the forwarding of a group call to its coordinator, and the fenced commit a partition's
// owner runs. Transport-independent, like cluster_service: the daemon's client API and in-process test clusters sit
// on top of the same object.
//
// A call arriving at a broker that does not coordinate the group is forwarded to the coordinator on the caller's
// thread (peer_client::call_now) and its answer relayed; an unreachable coordinator is 503 naming it. A member's
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

#include "moonmq/cluster/peer.hpp"
#include "moonmq/groups/group_service.hpp"

namespace moonmq::groups {

class group_routes {
 public:
  /// `brokers`: every configured broker, this one included. `clock`: milliseconds of a monotonic clock (default: the
  /// steady clock), passed to the coordinator and used for clearance back-off.
  group_routes(group_service& service, cluster::peer_client& peers, std::vector<broker_id> brokers,
               std::function<time_ms()> clock = {});

  /// Handles a /cluster/group/ROUTE request (on the coordinator, or `clear` on a partition's owner).
  transport::response handle_cluster(const transport::request& req);

  /// Runs a /cluster/group/ROUTE call with `body` on the coordinator of `group_id`: here, or forwarded. `describe`
  /// takes no body. 503 `coordinator_unavailable` naming the coordinator when it does not answer.
  transport::response on_coordinator(const std::string& group_id, const std::string& route, const std::string& body);

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
  /// The commit gate of (group, partition) on this broker (one of a fixed set).
  std::mutex& commit_gate(const std::string& group_id, const topic_partition& tp);

  group_service& service_;
  cluster::peer_client& peers_;
  std::vector<broker_id> brokers_;
  std::function<time_ms()> clock_;
  std::mutex clear_mu_;                      ///< one clear_pending at a time
  std::map<broker_id, time_ms> clear_retry_at_;  ///< under clear_mu_
  std::array<std::mutex, 256> commit_gates_;
};

}  // namespace moonmq::groups
