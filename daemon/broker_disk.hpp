// What a broker keeps in its data directory, opened in order at start: the directory's lock (one moonmqd per
// directory), the partition logs, the producer table over them, the groups' committed offsets, the ownership table,
// the controller fence (without Raft; under Raft the term is the fence, set up with it) and the move journal.
// Members are declared in that order, so that they are closed in the reverse one and the lock goes last.
#pragma once

#include <memory>

#include "data_dir_lock.hpp"
#include "moonmq/cluster/config.hpp"
#include "moonmq/cluster/controller_fence.hpp"
#include "moonmq/cluster/move_journal.hpp"
#include "moonmq/cluster/ownership_table.hpp"
#include "moonmq/cluster/producer_states.hpp"
#include "moonmq/core/logger.hpp"
#include "moonmq/storage/offset_store.hpp"
#include "moonmq/storage/partition_store.hpp"

namespace moonmq::daemon {

struct broker_disk {
  data_dir_lock lock;
  std::unique_ptr<storage::partition_store> store;
  std::unique_ptr<cluster::producer_states> producers;  ///< every append to a served partition passes it
  std::unique_ptr<storage::offset_store> offsets;
  std::unique_ptr<cluster::ownership_table> ownership;
  std::unique_ptr<cluster::controller_fence> fence;
  std::unique_ptr<cluster::move_journal> journal;

  /// Opens everything above under `config.data_dir` for broker `self`; an error names the file at fault.
  status open(const cluster::server_config& config, const broker_id& self, std::shared_ptr<logger> log);
};

}  // namespace moonmq::daemon
