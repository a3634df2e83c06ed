// A state file whose contents live in a memory_state_file owned by the test: what a broker's "disk" is in an
// in-process test, so that it outlives the object using it (a restart rebuilds from it).
#pragma once

#include <memory>

#include "moonmq/storage/state_file.hpp"

namespace moonmq::test {

struct kept_file final : storage::state_file {
  storage::memory_state_file* f;
  explicit kept_file(storage::memory_state_file* file) : f(file) {}
  result<std::optional<std::string>> read() const override { return f->read(); }
  status replace(std::string_view c) override { return f->replace(c); }
  std::string name() const override { return f->name(); }
};

inline std::unique_ptr<storage::state_file> keep(storage::memory_state_file* f) { return std::make_unique<kept_file>(f); }

}  // namespace moonmq::test
