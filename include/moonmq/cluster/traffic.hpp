// Cumulative per-partition traffic counters: bytes produced to and consumed from the partitions this broker owns.
//
// The produce path counts every append it makes as owner (a forwarded produce counts on the owner that appends it,
// never on the broker that forwarded it); the fetch path counts bytes served. Migration copies are deliberately not
// counted: they are not client load and would make a move look like a hot spot. Counters only grow; they restart
// from zero with the process, which the balance loop's rate helper (counter_rate.hpp) treats as a reset.
// Thread safety: all methods may be called concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

#include "moonmq/core/ids.hpp"

namespace moonmq::cluster {

struct traffic_counters {
  std::uint64_t produced_bytes = 0;
  std::uint64_t consumed_bytes = 0;
  bool operator==(const traffic_counters&) const = default;
};

class traffic {
 public:
  void count_produce(const topic_partition& tp, std::uint64_t bytes) {
    std::lock_guard lock(mu_);
    counters_[tp].produced_bytes += bytes;
  }
  void count_consume(const topic_partition& tp, std::uint64_t bytes) {
    std::lock_guard lock(mu_);
    counters_[tp].consumed_bytes += bytes;
  }
  traffic_counters get(const topic_partition& tp) const {
    std::lock_guard lock(mu_);
    auto it = counters_.find(tp);
    return it == counters_.end() ? traffic_counters{} : it->second;
  }
  /// Forgets every counter, as a restart of the broker does.
  void reset() {
    std::lock_guard lock(mu_);
    counters_.clear();
  }
  /// Every partition counted so far, sorted.
  std::map<topic_partition, traffic_counters> all() const {
    std::lock_guard lock(mu_);
    return {counters_.begin(), counters_.end()};
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<topic_partition, traffic_counters> counters_;
};

}  // namespace moonmq::cluster
