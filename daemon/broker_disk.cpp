#include "broker_disk.hpp"

#include "moonmq/cluster/file_controller_fence.hpp"
#include "moonmq/cluster/local_ownership_table.hpp"
#include "moonmq/storage/durable_offset_store.hpp"
#include "moonmq/storage/file_partition_store.hpp"
#include "moonmq/storage/file_state_file.hpp"
#include "storage/posix_file.hpp"

namespace moonmq::daemon {

status broker_disk::open(const cluster::server_config& config, const broker_id& self, std::shared_ptr<logger> log) {
  const std::string& dir = config.data_dir;
  if (auto s = posix::make_directories(dir); !s) return s;
  if (auto s = lock.acquire(dir); !s) return s;
  auto policy = storage::parse_fsync_policy(config.storage.fsync);
  auto opened = storage::open_file_partition_store(
      {dir, *policy, config.storage.fsync_interval_ms, log,
       static_cast<std::int32_t>(config.limits.max_partitions_per_topic), config.limits.max_partitions_per_broker,
       config.limits.max_open_partition_files});
  if (!opened) return opened.err();
  store = std::move(*opened);
  producers = std::make_unique<cluster::producer_states>(*store, config.limits.max_producers_per_partition);
  auto committed = storage::open_durable_offset_store(dir, log);
  if (!committed) return committed.err();
  offsets = std::move(*committed);
  auto table =
      cluster::open_local_ownership_table(self, storage::make_file_state_file(dir + "/cluster-assignments.json"));
  if (!table) return table.err();
  ownership = std::move(*table);
  if (!config.cluster || !config.cluster->raft.enabled) {
    auto f = cluster::open_file_controller_fence(self, storage::make_file_state_file(dir + "/controller-epoch.json"));
    if (!f) return f.err();
    fence = std::move(*f);
  }
  auto j = cluster::open_move_journal(storage::make_file_state_file(dir + "/cluster-moves.json"));
  if (!j) return j.err();
  journal = std::move(*j);
  return {};
}

}  // namespace moonmq::daemon
