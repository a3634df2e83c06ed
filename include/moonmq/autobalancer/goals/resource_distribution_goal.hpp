// The built-in resource goals: NW_IN, NW_OUT and DISK keep each active broker's inbound byte rate, outbound byte
// rate and bytes on disk within mean ± Deviation.
// Defaults: Deviation 0.1; DetectThreshold 1 MiB/s for the network goals (an idle cluster stays still), 0 for DISK.
//
// Capacity-aware: when every active broker has a capacity for the resource (snapshot::capacity()), brokers are
// weighed by it, so that the goal balances utilisation (load / capacity) rather than load, and no broker's band
// reaches above MaxUtilization of its capacity (for DISK, less the bytes it holds without serving them: they take
// room, see snapshot::set_held_disk()). A cluster whose brokers lack capacities is balanced on load, as before.
// Thread safety: as distribution_goal.
#pragma once

#include <algorithm>

#include "moonmq/autobalancer/goals/distribution_goal.hpp"

namespace moonmq::autobalancer {

class resource_distribution_goal final : public distribution_goal {
 public:
  resource_distribution_goal(std::string name, resource r, distribution_params params)
      : distribution_goal(std::move(name), params), resource_(r) {}

  /// The defaults for a goal on `r`.
  static distribution_params defaults(resource r) {
    distribution_params p;
    if (r != resource::disk) p.detect_threshold = 1024.0 * 1024.0;
    return p;
  }

  resource balanced_resource() const noexcept { return resource_; }

  double partition_value(const snapshot& s, partition_index p) const override { return s.load(p, resource_); }
  double broker_value(const snapshot& s, broker_index b) const override { return s.broker_load(b, resource_); }

  void prepare(const snapshot& s) override {
    aware_ = s.capacity_known(resource_);
    mean_capacity_ = 0;
    if (aware_) {
      std::size_t active = 0;
      for (broker_index b = 0; b < s.broker_count(); ++b) {
        if (!s.active(b)) continue;
        mean_capacity_ += s.capacity(b, resource_);
        ++active;
      }
      mean_capacity_ /= static_cast<double>(active);
    }
    distribution_goal::prepare(s);
  }

  double broker_weight(const snapshot& s, broker_index b) const override {
    return aware_ ? s.capacity(b, resource_) / mean_capacity_ : 1.0;
  }

  double broker_ceiling(const snapshot& s, broker_index b) const override {
    if (!aware_) return distribution_goal::broker_ceiling(s, b);
    double room = s.max_utilization() * s.capacity(b, resource_);
    if (resource_ == resource::disk) room -= s.held_disk(b);
    return std::max(0.0, room);
  }

  /// Whether this detection balances utilisation (every active broker has a capacity for the resource).
  bool capacity_aware() const noexcept { return aware_; }

 private:
  resource resource_;
  bool aware_ = false;
  double mean_capacity_ = 0;
};

}  // namespace moonmq::autobalancer
