// moonmqd's consumer group routes: the client API's join, heartbeat, leave and describe, and the inter-broker
// /cluster/group/* routes that carry them to a group's coordinator, plus the commit check the partition owner asks.
//
// A call arriving at a broker that does not coordinate the group is forwarded to the coordinator, on the caller's
// thread (a listener thread), and its answer relayed; an unreachable coordinator is 503 naming it. A member's
// connection lives on the broker it joined through: that broker is named in the join, and the member is handed only
// partitions that broker owns (fetches are served by the owner).
// Thread safety: every method may be called concurrently.
#pragma once

#include <httplib.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "moonmq/cluster/peer.hpp"
#include "moonmq/groups/group_service.hpp"

namespace moonmq::daemon {

class group_api {
 public:
  group_api(groups::group_service& service, cluster::peer_client& peers, std::vector<broker_id> brokers)
      : service_(service), peers_(peers), brokers_(std::move(brokers)) {}

  /// Registers POST /v1/groups/{g}/{join,heartbeat,leave}, GET /v1/groups and GET /v1/groups/{g}.
  void routes(httplib::Server& api);

  /// The /cluster/group/* routes (join, heartbeat, leave, describe, check), on the coordinator.
  transport::response handle_cluster(const transport::request& req);

  /// On the partition's owner: asks the group's coordinator (here, or over /cluster/group/check) whether
  /// `member_id` at `member_epoch` may commit `tp`, and runs `write` if so, all under the (group, partition) commit
  /// gate that a clearance (/cluster/group/clear) passes through. errc::conflict when fenced, errc::unavailable when
  /// the coordinator does not answer; otherwise what `write` returns.
  status fenced_commit(const std::string& group_id, const std::string& member_id, std::uint64_t member_epoch,
                       const topic_partition& tp, const std::function<status()>& write);

  /// Asks the owners of partitions waiting for clearance and reports their answers to the service (the ticker).
  void clear_pending();

  broker_id coordinator_of(const std::string& group_id) const { return groups::coordinator_of(group_id, brokers_); }

 private:
  /// Runs `body` (a /cluster/group/ROUTE request body) on the coordinator of `group_id`: here, or forwarded.
  transport::response on_coordinator(const std::string& group_id, const std::string& route, const std::string& body);
  status check_commit(const std::string& group_id, const std::string& member_id, std::uint64_t member_epoch,
                      const topic_partition& tp);
  /// The commit gate of (group, partition) on this broker.
  std::mutex& commit_gate(const std::string& group_id, const topic_partition& tp);

  groups::group_service& service_;
  cluster::peer_client& peers_;
  std::vector<broker_id> brokers_;  ///< every configured broker, this one included
  std::map<broker_id, std::chrono::steady_clock::time_point> clear_retry_at_;  ///< clear_pending's only
  std::mutex gates_mu_;
  std::map<std::pair<std::string, topic_partition>, std::unique_ptr<std::mutex>> commit_gates_;
};

}  // namespace moonmq::daemon
