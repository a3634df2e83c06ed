// The durable state_file: one JSON (or any text) document in a file, replaced atomically
// (write `<path>.tmp`, fsync, rename over `<path>`, fsync the directory). A `<path>.tmp` left by a crash before the
// rename is ignored and removed on the next replace: the document at `<path>` is the last one that was acknowledged.
// Implemented in lib/.
// Thread safety: calls on one object are serialized internally.
#pragma once

#include <memory>
#include <string>

#include "moonmq/storage/state_file.hpp"

namespace moonmq::storage {

/// A state_file at `path`. The parent directory must exist.
std::unique_ptr<state_file> make_file_state_file(std::string path);

}  // namespace moonmq::storage
