// The file behind a keyed_log: `path` holds record frames (key, value), appended with pwrite (a kill -9 loses
// nothing written) and fdatasync'ed on request. Compacted when it passes `compact_at` bytes and holds more than four
// times what one record per key takes: rewritten to `path.compacting`, synced, renamed over `path`, directory synced.
#pragma once

#include <memory>
#include <string>

#include "moonmq/core/logger.hpp"
#include "moonmq/storage/keyed_log.hpp"

namespace moonmq::storage {

result<std::unique_ptr<keyed_log>> open_file_keyed_log(const std::string& path, std::shared_ptr<logger> log,
                                                       std::size_t compact_at = 4u << 20);

}  // namespace moonmq::storage
