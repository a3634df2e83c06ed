// The file-backed partition_store: one append-only log file per partition under `<data_dir>/topics/<topic>/`, frames
// as in record.hpp, offsets are byte positions, and each topic's partition count in `topic.json` (replaced
// atomically).
//
// Durability. Every append reaches the kernel (one pwrite) before it returns, so a crash of the process loses no
// acknowledged record. `fsync` decides when it reaches the disk: `always` (before the append returns), `interval`
// (a background flusher syncs partitions written since its last round every `fsync_interval_ms`), `never` (the
// kernel decides). `sync()` forces one partition.
//
// Descriptors. A log is opened when it is used and closed again, least recently used first, once more than
// `max_open_files` are open, so a broker holds any number of partitions within a fixed number of descriptors.
// Limits. A topic has at most `max_partitions_per_topic` partitions and the store at most `max_partitions_per_broker`
// in all: ensure_topic past either is refused (invalid_argument, resource_exhausted) naming the limit.
//
// Recovery. Opening scans every log. A torn tail (an incomplete last frame, a zero-filled tail, or a last frame that
// fails its checksum) is truncated back to the last whole record and reported through the logger; a bad frame
// followed by more data is corruption, reported as an error naming the file and offset, and the store does not open.
// Thread safety: all methods may be called concurrently; appends to one partition are serialized by a per-partition
// lock, reads of already written bytes take no lock on the file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "moonmq/core/logger.hpp"
#include "moonmq/core/topic_name.hpp"
#include "moonmq/storage/partition_store.hpp"

namespace moonmq::storage {

enum class fsync_policy { always, interval, never };

/// "always" | "interval" | "never".
result<fsync_policy> parse_fsync_policy(std::string_view s);
const char* fsync_policy_name(fsync_policy p);

struct file_store_options {
  std::string data_dir;
  fsync_policy fsync = fsync_policy::interval;
  std::uint32_t fsync_interval_ms = 1000;
  std::shared_ptr<logger> log = default_logger();
  std::int32_t max_partitions_per_topic = max_partitions_per_topic_hard;  ///< Server.Limits.MaxPartitionsPerTopic
  std::size_t max_partitions_per_broker = 20000;                           ///< Server.Limits.MaxPartitionsPerBroker
  std::size_t max_open_files = 1000;  ///< partition logs open at once; the rest are opened on use (LRU)
};

/// Opens (creating the directories if needed) and recovers the store.
result<std::unique_ptr<partition_store>> open_file_partition_store(const file_store_options& options);

}  // namespace moonmq::storage
