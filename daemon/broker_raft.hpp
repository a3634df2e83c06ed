// With Cluster.Raft: the replicated ownership table over the broker's local table (its sidecar), the replicated
// topic directory, the Raft service over DataDir's log, and the term as the controller fence. Raft's fsyncs get a
// thread pool of their own: a move's cutover waits on a blocking-pool thread for its entry to commit, and the commit
// must never queue behind such waits.
#pragma once

#include <asio/io_context.hpp>
#include <asio/thread_pool.hpp>
#include <functional>
#include <memory>

#include "broker_disk.hpp"
#include "moonmq/cluster/raft_ownership_table.hpp"
#include "moonmq/cluster/topic_directory.hpp"
#include "moonmq/raft/service.hpp"

namespace moonmq::daemon {

struct broker_raft {
  std::unique_ptr<raft::storage> disk;
  cluster::raft_ownership_table* table = nullptr;  ///< owned by the broker's disk (its ownership table)
  std::unique_ptr<raft::service> service;

  /// Replaces `broker.ownership` and `broker.fence` with their Raft-backed versions and makes `topics` from the parts
  /// `topic_parts` makes once the replicated table is in place (the directory must withhold strays, and record
  /// entries, in the table every reader asks).
  status open(const cluster::server_config& cfg, const broker_id& self, broker_disk& broker,
              const std::function<cluster::topic_directory::parts()>& topic_parts,
              std::unique_ptr<cluster::topic_directory>& topics, transport::peer_client& peers, asio::io_context& io,
              asio::thread_pool& pool, runtime& rt, logger& log, metrics_sink& metrics);
};

}  // namespace moonmq::daemon
