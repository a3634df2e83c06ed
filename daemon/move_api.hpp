// moonmqd's client routes for moves, cluster-wide from any broker:
//   POST   /v1/reassignments {"topic","partition","dest"}  validated first (404 unknown partition or broker, 409
//                                                          already there, already moving, or dest draining), then
//                                                          started on the
//                                                          partition's owner, wherever it is: 202 {"id","source"}
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

namespace moonmq::daemon {

class move_api {
 public:
  /// `start_here`: starts a hand-driven move on this broker
  /// (kept so that it resumes after a restart). `set_throttle` applies (and keeps across restarts) this broker's
  /// throttle. `draining`: whether a broker is being drained.
  move_api(cluster_view& view, cluster::reassigner& reassigner,
           std::function<result<std::uint64_t>(const topic_partition&, const broker_id&)> start_here,
           std::function<status(std::uint64_t)> set_throttle, std::function<bool(const std::string&)> draining)
      : view_(view),
        reassigner_(reassigner),
        start_here_(std::move(start_here)),
        set_throttle_(std::move(set_throttle)),
        draining_(std::move(draining)) {}

  void routes(api_routes& api);

 private:
  void start(const httplib::Request& req, httplib::Response& res);
  void list(const httplib::Request& req, httplib::Response& res);
  void cancel(const httplib::Request& req, httplib::Response& res);
  void put_throttle(const httplib::Request& req, httplib::Response& res);
  void get_throttle(httplib::Response& res);

  cluster_view& view_;
  cluster::reassigner& reassigner_;
  std::function<result<std::uint64_t>(const topic_partition&, const broker_id&)> start_here_;
  std::function<status(std::uint64_t)> set_throttle_;
  std::function<bool(const std::string&)> draining_;
};

}  // namespace moonmq::daemon
