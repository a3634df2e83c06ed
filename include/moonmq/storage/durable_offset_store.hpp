// An offset_store kept in a state_file (`<data_dir>/committed-offsets.json` in the daemon): each commit rewrites the
// document atomically before it is acknowledged. A corrupt document is an error naming the file; it is never
// silently read as empty. Implemented in lib/ (RapidJSON).
// Thread safety: all methods may be called concurrently (commits are serialized).
#pragma once

#include <memory>

#include "moonmq/storage/offset_store.hpp"
#include "moonmq/storage/state_file.hpp"

namespace moonmq::storage {

result<std::unique_ptr<offset_store>> open_durable_offset_store(std::unique_ptr<state_file> file);

}  // namespace moonmq::storage
