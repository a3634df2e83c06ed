// The built-in resource goals: NW_IN, NW_OUT and DISK keep each active broker's inbound byte rate, outbound byte
// rate and bytes on disk within mean ± Deviation.
// Defaults: Deviation 0.1; DetectThreshold 1 MiB/s for the network goals (an idle cluster stays still), 0 for DISK.
// Thread safety: as distribution_goal.
#pragma once

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

 private:
  resource resource_;
};

}  // namespace moonmq::autobalancer
