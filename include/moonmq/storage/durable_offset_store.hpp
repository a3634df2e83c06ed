// The committed offsets of a broker, durable (`<dir>/committed-offsets.log`): each commit is appended to a log of
// checksummed frames (record.hpp) and fdatasync'ed before it is acknowledged, so a commit costs one small write and
// one sync whatever the number of groups and partitions. When the log has grown past `compact_at_bytes` and holds
// more than four times what the latest commits need, it is rewritten with one commit per (group, partition) (a new
// file, synced, renamed over the old, the directory synced). On open, a torn last commit is truncated; damage before
// it is an error naming the file, never read as "no offsets". A `committed-offsets.json` written by an older version
// is carried into the log and renamed `committed-offsets.json.migrated`. Group ids are 1 to 255 bytes of UTF-8 without
// control characters; anything else is refused (invalid_argument). Implemented in lib/.
// Thread safety: all methods may be called concurrently (commits are serialized).
#pragma once

#include <memory>
#include <string>

#include "moonmq/core/logger.hpp"
#include "moonmq/storage/offset_store.hpp"

namespace moonmq::storage {

result<std::unique_ptr<offset_store>> open_durable_offset_store(const std::string& dir,
                                                                std::shared_ptr<logger> log = default_logger(),
                                                                std::size_t compact_at_bytes = 4u << 20);

}  // namespace moonmq::storage
