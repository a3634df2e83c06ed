// moonmqd's client routes for moves, cluster-wide from any broker:
//   POST   /v1/reassignments {"topic","partition","dest"}  checked and started by frontend/move_requests (404 unknown
//                                                          partition or broker, 409 already there, already moving,
//                                                          two logs, or dest draining): 202 {"id","source"}
//   GET    /v1/reassignments[?active=true]                 every broker's moves with step, bytes, rate, ETA, stall
//   DELETE /v1/reassignments/{id}[?source=B]               cancel before cutover, rolled back (202); 409 after
//   PUT    /v1/reassignments/throttle {"bytes_per_sec"}    the copy throttle on every broker (0 = unlimited)
//   GET    /v1/reassignments/throttle                      each broker's throttle
// A broker that does not answer is named in the answer ("unreachable"); nothing is guessed for it.
// Thread safety: the routes may run concurrently.
#pragma once

#include <httplib.h>

#include "api_routes.hpp"

#include <functional>

#include "cluster_view.hpp"
#include "moonmq/cluster/ownership_table.hpp"
#include "moonmq/cluster/reassigner.hpp"
#include "moonmq/frontend/move_requests.hpp"

namespace moonmq::daemon {

class move_api {
 public:
  /// `requests`: where a move request is checked and started (frontend/move_requests.hpp). `set_throttle` applies
  /// (and keeps across restarts) this broker's throttle.
  move_api(cluster_view& view, cluster::reassigner& reassigner, frontend::move_requests& requests,
           std::function<status(std::uint64_t)> set_throttle)
      : view_(view), reassigner_(reassigner), requests_(requests), set_throttle_(std::move(set_throttle)) {}

  void routes(api_routes& api);

 private:
  void start(const httplib::Request& req, httplib::Response& res);
  void list(const httplib::Request& req, httplib::Response& res);
  void cancel(const httplib::Request& req, httplib::Response& res);
  void put_throttle(const httplib::Request& req, httplib::Response& res);
  void get_throttle(httplib::Response& res);

  cluster_view& view_;
  cluster::reassigner& reassigner_;
  frontend::move_requests& requests_;
  std::function<status(std::uint64_t)> set_throttle_;
};

}  // namespace moonmq::daemon
