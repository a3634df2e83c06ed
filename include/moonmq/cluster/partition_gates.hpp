// Per-partition gates that make a cutover exact.
//
// Every local append to a partition holds its gate shared for the whole of "am I still the owner? then append"; the
// reassigner's cutover holds it exclusive while it flips and persists the ownership entry. So no local append begins
// after the flip, and every append that began before it has finished, and is in the tail the drain copies.
// Gates are created on first use and never removed (one small object per partition ever touched).
//
// `topics()` serializes changes to a topic's partition count on this broker (a client's create or grow, a peer's
// ensure), so that a peer's ensure can record the partitions it creates as the peer's before they exist.
// Thread safety: all methods may be called concurrently.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>

#include "moonmq/core/ids.hpp"

namespace moonmq::cluster {

class partition_gates {
 public:
  /// The gate of `tp` (stable for the life of this object).
  std::shared_mutex& gate(const topic_partition& tp) {
    std::lock_guard lock(mu_);
    auto& g = gates_[tp];
    if (!g) g = std::make_unique<std::shared_mutex>();
    return *g;
  }

  /// Held across every creation or growth of a topic on this broker.
  std::mutex& topics() { return topics_; }

 private:
  std::mutex mu_;
  std::mutex topics_;
  std::map<topic_partition, std::unique_ptr<std::shared_mutex>> gates_;
};

}  // namespace moonmq::cluster
