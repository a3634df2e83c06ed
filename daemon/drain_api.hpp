// Draining a broker: every partition it serves moves away (within the copy throttle and MaxMovesPerBroker), nothing
// is planned or moved onto it, and its progress says how much is left and why a partition cannot move.
//   POST   /v1/brokers/{id}/drain     drain `id` (admin; any broker may be asked: every broker is told)
//   DELETE /v1/brokers/{id}/drain     undrain: it may receive again (partitions already moved stay where they are)
//   GET    /v1/brokers/{id}/drain     its progress: partitions and bytes left, moves running, ETA, blocked partitions
// Cluster routes: POST /cluster/admin/drain {"broker","draining"} (a peer tells this broker), GET
// /cluster/admin/drain (this broker's own progress). The drain itself is cluster::drain_executor's: this file runs its
// rounds as a job on the broker's runtime (every second, and at once when told) and tells every broker.
// Thread safety: the routes may run concurrently with the job.
#pragma once

#include <httplib.h>

#include "api_routes.hpp"

#include <chrono>
#include <memory>
#include <set>
#include <string>

#include "cluster_view.hpp"
#include "moonmq/cluster/drain_executor.hpp"
#include "moonmq/core/runtime.hpp"

namespace moonmq::daemon {

class drain_api {
 public:
  /// `tick`: how often the executor's rounds run.
  drain_api(std::unique_ptr<cluster::drain_executor> executor, cluster_view& view, runtime& rt,
            std::chrono::milliseconds tick = std::chrono::milliseconds(1000));
  ~drain_api();

  void routes(api_routes& api);
  transport::response handle_cluster(const transport::request& req);

  /// The brokers this one knows to be draining.
  std::set<std::string> draining() const { return exec_->draining(); }

  /// This broker's drain progress as JSON (what GET /cluster/admin/drain answers).
  std::string progress_document() const { return exec_->progress_document(); }

 private:
  /// Sets `broker`'s mark here and wakes the rounds.
  status set(const std::string& broker, bool draining);
  void change(const std::string& broker, bool draining, httplib::Response& res);

  std::unique_ptr<cluster::drain_executor> exec_;
  cluster_view& view_;
  std::unique_ptr<scheduled_job> job_;  ///< last: stopped before what its ticks use goes
};

}  // namespace moonmq::daemon
