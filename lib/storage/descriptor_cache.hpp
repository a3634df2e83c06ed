// A bounded set of open file descriptors for many files (the partition logs of a broker): a file is opened when it
// is used and closed again, least recently used first, once more than `capacity` are open. A descriptor in use is
// never closed under its user: acquire() hands out a shared lease, and an evicted descriptor closes when its last
// lease goes. So a broker holds any number of partitions within a fixed number of descriptors (plus those in use at
// that instant). Closing loses nothing: data written through one descriptor is synced by fdatasync through the next
// (it syncs the file, not the descriptor). Internal to lib/.
// Thread safety: all methods may be called concurrently.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "storage/posix_file.hpp"

namespace moonmq::storage {

class descriptor_cache {
 public:
  using lease = std::shared_ptr<const posix::fd>;

  explicit descriptor_cache(std::size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

  /// An open read-write descriptor of `path` (which must exist), opened now if it is not open.
  result<lease> acquire(const std::string& path);

  /// Closes `path`'s descriptor (when no lease holds it any more), e.g. before the file is removed.
  void forget(const std::string& path);

  /// How many descriptors the cache keeps open (not counting evicted ones still leased).
  std::size_t open_count() const;

 private:
  struct slot {
    lease fd;
    std::list<std::string>::iterator age;
  };
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::list<std::string> lru_;  // most recently used first
  std::unordered_map<std::string, slot> open_;
};

}  // namespace moonmq::storage
