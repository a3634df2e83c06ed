// The built-in PARTITION_COUNT goal: every active broker holds mean ± Deviation partitions, the band rounded outward
// to whole partitions. It moves the partitions that carry the least load first, so that it disturbs the resource
// goals above it as little as possible (which must accept every move anyway).
// Defaults: Deviation 0.1, DetectThreshold 0.
// Thread safety: as distribution_goal.
#pragma once

#include <cmath>

#include "moonmq/autobalancer/goals/distribution_goal.hpp"

namespace moonmq::autobalancer {

class partition_count_goal final : public distribution_goal {
 public:
  explicit partition_count_goal(distribution_params params) : distribution_goal("PARTITION_COUNT", params) {}

  double partition_value(const snapshot&, partition_index) const override { return 1.0; }
  double broker_value(const snapshot& s, broker_index b) const override { return s.broker_partition_count(b); }

  band band_for(double mean) const override {
    return {std::floor(mean * (1.0 - params().deviation)), std::ceil(mean * (1.0 + params().deviation))};
  }

  bool uses_swaps() const override { return false; }

  void prepare(const snapshot& s) override {
    distribution_goal::prepare(s);
    for (std::size_t r = 0; r < resource_count; ++r) {
      double total = 0;
      for (partition_index p = 0; p < s.partition_count(); ++p) total += s.loads(p).v[r];
      scale_[r] = total > 0 ? static_cast<double>(s.partition_count()) / total : 0.0;
    }
  }

  /// Lighter partitions first: the negated sum of the partition's loads, each relative to the mean partition's.
  double preference(const snapshot& s, partition_index p) const override {
    double sum = 0;
    for (std::size_t r = 0; r < resource_count; ++r) sum += s.loads(p).v[r] * scale_[r];
    return -sum;
  }

 private:
  double scale_[resource_count] = {};
};

}  // namespace moonmq::autobalancer
