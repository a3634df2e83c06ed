// The coordinators this broker runs and the threads that keep them moving: the consumer groups it coordinates
// (group-state.log) with their routes, the transactions it coordinates (txn-state.log, and its side of every
// transaction on its partitions), and the placement directory both the groups and the produce front end read.
// Their schedule is frontend/coordinator_jobs, on the broker's runtime.
// Thread safety: start() and stop() from the composition root; the services are thread-safe.
#pragma once

#include <asio/any_io_executor.hpp>
#include <memory>
#include <mutex>
#include <vector>

#include "moonmq/cluster/cluster_service.hpp"
#include "moonmq/cluster/config.hpp"
#include "moonmq/cluster/topic_directory.hpp"
#include "moonmq/core/runtime.hpp"
#include "moonmq/frontend/coordinator_jobs.hpp"
#include "moonmq/frontend/placement_directory.hpp"
#include "moonmq/groups/group_routes.hpp"
#include "moonmq/groups/group_service.hpp"
#include "moonmq/storage/keyed_log.hpp"
#include "moonmq/txn/txn_service.hpp"

namespace moonmq::daemon {

struct coordinators_parts {
  const cluster::server_config* config;
  broker_id self;
  std::vector<broker_id> brokers;  ///< every broker, this one first
  cluster::cluster_state state;
  transport::peer_client* peers;
  asio::any_io_executor blocking;  ///< where a transaction's markers are delivered after its end is answered
  std::function<std::vector<cluster::partition_load>()> local_loads;  ///< this broker's own report
  std::shared_ptr<logger> log;
  metrics_sink* metrics;
  runtime* rt;  ///< the clocks the coordinators read, and where their jobs run
  const cluster::topic_directory* topics;  ///< what the placement directory's answers are checked against
};

class coordinators {
 public:
  /// Opens the groups' and the transactions' durable state; an error names the file at fault.
  static result<std::unique_ptr<coordinators>> open(coordinators_parts parts);
  ~coordinators() { stop(); }
  coordinators(const coordinators&) = delete;
  coordinators& operator=(const coordinators&) = delete;

  /// Starts the jobs.
  void start();
  /// Stops and joins them (idempotent).
  void stop();

  groups::group_service& groups() { return *groups_; }
  groups::group_routes& group_routes() { return *group_routes_; }
  txn::txn_service& txns() { return *txns_; }
  frontend::placement_directory& directory() { return *directory_; }

  /// Steady milliseconds: the groups' clock.

 private:
  explicit coordinators(coordinators_parts parts) : p_(std::move(parts)) {}
  status open_groups();
  status open_transactions();

  coordinators_parts p_;
  std::unique_ptr<frontend::placement_directory> directory_;
  std::unique_ptr<storage::keyed_log> group_log_;  ///< the groups' state (outlives groups_)
  std::unique_ptr<groups::group_service> groups_;
  std::unique_ptr<groups::group_routes> group_routes_;
  std::unique_ptr<storage::keyed_log> txn_log_;  ///< the coordinator's transactions (outlives txns_)
  std::unique_ptr<txn::txn_service> txns_;
  frontend::coordinator_jobs jobs_;  ///< last: stopped before what their ticks use goes
};

}  // namespace moonmq::daemon
