// Giving back the disk that moves leave behind. A thread watches this broker's copies of partitions it does not
// serve (cluster::reclaim_tracker) and deletes each one Cluster.ReclaimAfterSeconds after it was last seen to change,
// when nothing may still need it; an operator can list them and reclaim the eligible ones at once:
//   GET  /v1/brokers/{id}/reclaim    the copies `id` holds without serving them: size, idle time, and what holds
//                                    back each one that may not go yet
//   POST /v1/brokers/{id}/reclaim    reclaim every eligible copy on `id` now (admin)
// Cluster routes: GET and POST /cluster/admin/reclaim (this broker's own). A copy goes only when, under the
// partition's gate (migration appends take it too, so nothing lands meanwhile), nothing here needs it (not served or
// handed over here, no move of it running, journaled or recovering here) and the broker this one believes serves it
// confirms that it does, with no move of it under way there.
// Thread safety: the routes may run concurrently with the thread.
#pragma once

#include <httplib.h>

#include "api_routes.hpp"

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "cluster_view.hpp"
#include "moonmq/cluster/cluster_service.hpp"
#include "moonmq/cluster/move_journal.hpp"
#include "moonmq/cluster/reassigner.hpp"
#include "moonmq/cluster/reclaim_plan.hpp"
#include "ticker.hpp"

namespace moonmq::daemon {

class reclaim_api {
 public:
  reclaim_api(double after_seconds, cluster_view& view, cluster::cluster_state state, cluster::move_journal& journal,
              cluster::reassigner& reassigner);
  ~reclaim_api();

  void routes(api_routes& api);
  transport::response handle_cluster(const transport::request& req);

 private:
  /// Observes the copies now. With `ask_peers`, moves running towards this broker count (one request per peer).
  std::vector<cluster::reclaim_candidate> observe(bool ask_peers);
  /// Deletes the copies `pick` selects from a fresh observation; returns the document listing what went.
  std::string reclaim(bool due_only);
  std::string list_document();
  /// Whether the broker named as the owner confirms, now, that it serves `tp` with no move of it under way.
  status owner_confirms(const topic_partition& tp);

  double after_;
  cluster_view& view_;
  cluster::cluster_state st_;
  cluster::move_journal& journal_;
  cluster::reassigner& reassigner_;

  std::mutex mu_;  ///< one observation or reclaim at a time (the tracker is not shared)
  cluster::reclaim_tracker tracker_;
  std::unique_ptr<ticker> ticker_;  ///< last: stopped before what its ticks use goes
};

}  // namespace moonmq::daemon
