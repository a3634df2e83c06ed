// moonmqd's status routes: what a supervisor, a scraper and a person look at.
//   GET /v1/health · /livez · /readyz     alive, and ready to serve (under Raft: caught up with the ownership log)
//   GET /metrics                          Prometheus text (the storage gauges are worked out at each scrape)
//   GET /v1/cluster                       this broker's own view: peers and reachability, controller, Raft, its table
//   GET /ui, /ui/NAME                     the web console (daemon/console/, compiled in)
// Thread safety: the routes may run concurrently.
#pragma once

#include <httplib.h>

#include "api_routes.hpp"

#include <string>

#include "cluster_view.hpp"
#include "moonmq/cluster/controller_fence.hpp"
#include "moonmq/cluster/ownership_table.hpp"
#include "moonmq/raft/service.hpp"
#include "moonmq/storage/partition_store.hpp"
#include "prometheus_sink.hpp"

namespace moonmq::daemon {

struct status_api_parts {
  cluster_view* view;
  std::string client_address;  ///< Server.Host:Server.Port, for /readyz
  storage::partition_store* store;
  cluster::ownership_table* ownership;
  cluster::controller_fence* fence;
  raft::service* raft;  ///< null without Raft
  prometheus_sink* metrics;
};

class status_api {
 public:
  explicit status_api(status_api_parts parts) : p_(std::move(parts)) {}

  void routes(api_routes& api);

 private:
  void readyz(httplib::Response& res);
  void cluster_document(httplib::Response& res);
  void observe_storage();
  static void console(const httplib::Request& req, httplib::Response& res);

  status_api_parts p_;
};

}  // namespace moonmq::daemon
