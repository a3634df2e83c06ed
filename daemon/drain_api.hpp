// Draining a broker: every partition it serves moves away (within the copy throttle and MaxMovesPerBroker), nothing
// is planned or moved onto it, and its progress says how much is left and why a partition cannot move.
//   POST   /v1/brokers/{id}/drain     drain `id` (admin; any broker may be asked: every broker is told)
//   DELETE /v1/brokers/{id}/drain     undrain: it may receive again (partitions already moved stay where they are)
//   GET    /v1/brokers/{id}/drain     its progress: partitions and bytes left, moves running, ETA, blocked partitions
// Cluster routes: POST /cluster/admin/drain {"broker","draining"} (a peer tells this broker), GET
// /cluster/admin/drain (this broker's own progress). Every broker keeps the set of draining brokers in
// DATA_DIR/drain-state.json; the draining broker itself runs the moves (it is their source), from a thread that plans
// the next ones every second (cluster::plan_drain).
// Thread safety: the routes may run concurrently with the thread.
#pragma once

#include <httplib.h>

#include "api_routes.hpp"

#include <asio/any_io_executor.hpp>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "cluster_view.hpp"
#include "moonmq/cluster/balance_loop.hpp"
#include "moonmq/cluster/reassigner.hpp"
#include "moonmq/core/logger.hpp"
#include "moonmq/storage/state_file.hpp"
#include "ticker.hpp"

namespace moonmq::daemon {

struct drain_options {
  std::size_t max_moves = 1;          ///< moves the draining broker runs at once (Autobalance.MaxMovesPerBroker)
  std::set<std::string> excluded;     ///< brokers that never receive (Autobalance.ExcludedBrokers)
  std::chrono::milliseconds tick{1000};
};

class drain_api {
 public:
  static result<std::unique_ptr<drain_api>> open(drain_options options, cluster_view& view,
                                                 cluster::reassigner& reassigner, asio::any_io_executor ex,
                                                 cluster::balance_loop* loop, std::unique_ptr<storage::state_file> state,
                                                 logger& log);
  ~drain_api();

  void routes(api_routes& api);
  transport::response handle_cluster(const transport::request& req);

  /// The brokers this one knows to be draining.
  std::set<std::string> draining() const;

  /// This broker's drain progress as JSON (what GET /cluster/admin/drain answers).
  std::string progress_document() const;

 private:
  drain_api(drain_options options, cluster_view& view, cluster::reassigner& reassigner, asio::any_io_executor ex,
            cluster::balance_loop* loop, std::unique_ptr<storage::state_file> state, logger& log);

  status set(const std::string& broker, bool draining);
  void tick();
  void change(const std::string& broker, bool draining, httplib::Response& res);

  drain_options opt_;
  cluster_view& view_;
  cluster::reassigner& reassigner_;
  asio::any_io_executor ex_;
  cluster::balance_loop* loop_;
  std::unique_ptr<storage::state_file> state_;
  logger& log_;

  mutable std::mutex mu_;
  std::set<std::string> draining_;
  std::string progress_;  ///< the last tick's report (JSON)
  std::unique_ptr<ticker> ticker_;  ///< last: stopped before what its ticks use goes
};

}  // namespace moonmq::daemon
