#include "storage/descriptor_cache.hpp"

#include <fcntl.h>

namespace moonmq::storage {

result<descriptor_cache::lease> descriptor_cache::acquire(const std::string& path) {
  std::lock_guard lock(mu_);
  if (auto it = open_.find(path); it != open_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.age);
    return it->second.fd;
  }
  auto f = posix::open_file(path, O_RDWR);
  if (!f) return f.err();
  auto fd = std::make_shared<const posix::fd>(std::move(*f));
  lru_.push_front(path);
  open_.emplace(path, slot{fd, lru_.begin()});
  while (open_.size() > capacity_) {
    open_.erase(lru_.back());  // closes when its last lease goes
    lru_.pop_back();
  }
  return fd;
}

void descriptor_cache::forget(const std::string& path) {
  std::lock_guard lock(mu_);
  auto it = open_.find(path);
  if (it == open_.end()) return;
  lru_.erase(it->second.age);
  open_.erase(it);
}

std::size_t descriptor_cache::open_count() const {
  std::lock_guard lock(mu_);
  return open_.size();
}

}  // namespace moonmq::storage
