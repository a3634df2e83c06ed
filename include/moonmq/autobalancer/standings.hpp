// Every goal's violation of every broker at one moment, and the rule that judges a sequence of actions as a whole.
//
// A goal judges one action at a time (goal::accepts()). The economizer and the finisher take short sequences of
// actions whose single steps a goal might refuse although the sequence as a whole leaves it no worse off. They
// capture the goals' standings before the sequence and judge the placement after it by the same rule a distribution
// goal applies to one action: no broker that met the goal stops meeting it, no broker gets further above a ceiling
// the goal sets (goal::ceiling_excess()), and the goal's violation summed over the brokers does not grow. Only goals that guard their result (goal::guards_result()) report standings.
// Thread safety: plain values; the goals and snapshot belong to one detector run.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "moonmq/autobalancer/goals/goal.hpp"
#include "moonmq/autobalancer/model/snapshot.hpp"

namespace moonmq::autobalancer {

class standings {
 public:
  /// Violations smaller than this (relative to each goal's scale) are none.
  static constexpr double eps = 1e-9;

  /// The standings of `goals` on `s` now.
  standings(const snapshot& s, std::span<goal* const> goals) : brokers_(s.broker_count()) {
    values_.reserve(goals.size() * brokers_);
    sums_.reserve(goals.size());
    excess_.reserve(goals.size() * brokers_);
    for (goal* g : goals) {
      double sum = 0;
      for (broker_index b = 0; b < brokers_; ++b) {
        values_.push_back(g->broker_violation(s, b));
        excess_.push_back(g->ceiling_excess(s, b));
        sum += values_.back();
      }
      sums_.push_back(sum);
    }
  }

  /// Goal `g`'s ceiling_excess() of broker `b` at the capture.
  double excess(std::size_t g, broker_index b) const { return excess_[g * brokers_ + b]; }

  /// Goal `g`'s (index into the goals captured) violation summed over the brokers.
  double sum(std::size_t g) const { return sums_[g]; }

  /// Whether `s` is no worse than these standings for the first `count` goals (by the rule in the file comment),
  /// when only the brokers in `touched` changed since the capture (a broker's violation depends
  /// on its own partitions only): O(goals x touched). With `sums`, each goal's summed violation now is written
  /// there.
  bool no_worse_at(const snapshot& s, std::span<goal* const> goals, std::size_t count,
                   std::span<const broker_index> touched, double* sums = nullptr) const {
    bool ok = true;
    for (std::size_t g = 0; g < count; ++g) {
      double after = sums_[g];
      for (std::size_t i = 0; i < touched.size(); ++i) {
        const broker_index b = touched[i];
        bool seen = false;  // a broker listed twice counts once
        for (std::size_t j = 0; j < i && !seen; ++j) seen = touched[j] == b;
        if (seen) continue;
        const double was = values_[g * brokers_ + b], is = goals[g]->broker_violation(s, b);
        if (was <= eps && is > eps) ok = false;
        if (goals[g]->ceiling_excess(s, b) > excess_[g * brokers_ + b] + eps) ok = false;
        after += is - was;
      }
      if (after > sums_[g] + eps) ok = false;
      if (sums) sums[g] = after;
      if (!ok && !sums) return false;
    }
    return ok;
  }

 private:
  std::size_t brokers_;
  std::vector<double> values_;  ///< goal-major
  std::vector<double> excess_;  ///< goal-major: ceiling_excess()
  std::vector<double> sums_;
};

}  // namespace moonmq::autobalancer
