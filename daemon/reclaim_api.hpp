// Giving back the disk that moves leave behind (cluster::reclaim_executor does it): its rounds run as a job on the broker's runtime, and
// an operator can list the copies and reclaim the eligible ones at once:
//   GET  /v1/brokers/{id}/reclaim    the copies `id` holds without serving them: size, idle time, and what holds
//                                    back each one that may not go yet
//   POST /v1/brokers/{id}/reclaim    reclaim every eligible copy on `id` now (admin)
// Cluster routes: GET and POST /cluster/admin/reclaim (this broker's own).
// Thread safety: the routes may run concurrently with the job.
#pragma once

#include <httplib.h>

#include "api_routes.hpp"

#include <memory>

#include "cluster_view.hpp"
#include "moonmq/cluster/reclaim_executor.hpp"
#include "moonmq/core/runtime.hpp"

namespace moonmq::daemon {

class reclaim_api {
 public:
  reclaim_api(std::unique_ptr<cluster::reclaim_executor> executor, cluster_view& view, runtime& rt);
  ~reclaim_api();

  void routes(api_routes& api);
  transport::response handle_cluster(const transport::request& req);

 private:
  std::unique_ptr<cluster::reclaim_executor> exec_;
  cluster_view& view_;
  std::unique_ptr<scheduled_job> job_;  ///< last: stopped before what its ticks use goes
};

}  // namespace moonmq::daemon
