// moonmqd's balance-loop routes:
//   GET  /v1/autobalancer                  the loop's state: controller, last pass, plan, broker loads, moves; a
//                                          broker that is not the controller asks the controller
//                                          (GET /cluster/admin/autobalancer), so any broker answers alike;
//                                          ?scope=broker: the broker's own loop (standing by, superseded)
//   GET  /v1/autobalancer/snapshot         the controller's model, asked of it the same way
//   POST /v1/autobalancer/pause · /resume  on every broker (whichever becomes controller stays paused): no pass
//                                          runs, so nothing new is planned or started; moves in flight finish
// and the cluster routes POST /cluster/admin/autobalancer {"paused"} a peer's pause or resume arrives on, and
// GET /cluster/admin/autobalancer[/snapshot], which answer this broker's own. The paused
// state is kept in DATA_DIR/autobalancer-state.json, so a restarted broker stays paused.
// Thread safety: the routes may run concurrently.
#pragma once

#include <httplib.h>

#include "api_routes.hpp"

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "cluster_view.hpp"
#include "moonmq/cluster/balance_loop.hpp"
#include "moonmq/storage/state_file.hpp"
#include "moonmq/transport/message.hpp"

namespace moonmq::daemon {

class balancer_api {
 public:
  /// `loop` is null when Server.Autobalance is off (the pause is still kept, for when it is turned on).
  /// `controller`: the controller as this broker knows it.
  static result<std::unique_ptr<balancer_api>> open(cluster_view& view, cluster::balance_loop* loop,
                                                    const autobalancer::autobalance_config& config,
                                                    std::unique_ptr<storage::state_file> state,
                                                    std::function<std::string()> controller);

  void routes(api_routes& api);

  /// POST /cluster/admin/autobalancer.
  transport::response handle_cluster(const transport::request& req);

 private:
  balancer_api(cluster_view& view, cluster::balance_loop* loop, bool dry_run,
               std::unique_ptr<storage::state_file> state, std::function<std::string()> controller)
      : view_(view), loop_(loop), dry_run_(dry_run), state_(std::move(state)), controller_(std::move(controller)) {}

  /// Applies and keeps the paused state here.
  status set_paused(bool paused);
  /// The loop's state, from the controller when this broker is not it (its own, marked, when the controller does
  /// not answer), so that every broker answers alike.
  void status_route(httplib::Response& res);
  /// The controller's model (`/v1/autobalancer/snapshot`), asked of it in the same way.
  void snapshot_route(httplib::Response& res);
  /// This broker's own state document.
  std::string own_status() const;
  /// The controller when it is a peer (not this broker, and known); empty otherwise.
  std::string remote_controller() const;
  void pause_route(bool paused, httplib::Response& res);

  cluster_view& view_;
  cluster::balance_loop* loop_;
  bool dry_run_;
  std::unique_ptr<storage::state_file> state_;
  std::function<std::string()> controller_;
  mutable std::mutex mu_;
  bool paused_ = false;
  std::vector<autobalancer::goal_config> goals_;
};

}  // namespace moonmq::daemon
