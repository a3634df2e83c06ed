// moonmqd's cluster-wide read routes, answered by any broker from what every broker says now (cluster_view):
//   GET /v1/brokers                 every broker: address, reachable (or why not), partitions and bytes it serves,
//                                   whether it is the controller, whether it is draining (and the drain's progress)
//                                   and how many strays it holds
//   GET /v1/partitions[?topic=T]    every partition some broker serves: owner, size, open transactions; and every
//                                   stray (a log the topic catalog did not make where it is, never served)
// A broker that does not answer is listed as unreachable; its partitions are missing, never guessed.
// Thread safety: the routes may run concurrently.
#pragma once

#include <httplib.h>

#include "api_routes.hpp"

#include <functional>
#include <set>
#include <string>

#include "cluster_view.hpp"

namespace moonmq::daemon {

class cluster_api {
 public:
  /// `controller`: the broker this one knows as the controller ("" if none). `draining`: the brokers being drained;
  /// `drain_report(id)`: that broker's drain progress as JSON ("" when it does not answer).
  cluster_api(cluster_view& view, std::function<std::string()> controller,
              std::function<std::set<std::string>()> draining,
              std::function<std::string(const std::string&)> drain_report)
      : view_(view),
        controller_(std::move(controller)),
        draining_(std::move(draining)),
        drain_report_(std::move(drain_report)) {}

  void routes(api_routes& api);

 private:
  void brokers(httplib::Response& res);
  void partitions(const httplib::Request& req, httplib::Response& res);

  cluster_view& view_;
  std::function<std::string()> controller_;
  std::function<std::set<std::string>()> draining_;
  std::function<std::string(const std::string&)> drain_report_;
};

}  // namespace moonmq::daemon
