// What the goals above an optimizing goal refused of its moves, remembered until the snapshot changes.
//
// A goal that refuses by measure (goal::refuses_by_measure(); every distribution goal) refuses a MOVE of a partition
// between two brokers exactly when the partition's measure is at least some threshold set by where the two brokers
// stand. For a distribution goal: the source leaves its band, the destination leaves its band or passes its ceiling,
// or the two brokers' summed violation grows. Each of these, once it holds for a value v, holds for every larger one
// (a broker's violation is convex in what it holds, so the summed violation is convex in v, and is no higher than at
// v = 0 only on an interval that starts at 0). So after such a goal refused a move of measure v from `src` to `dest`,
// every move between the same two brokers of a partition that measures at least v to it is refused too, until
// something moves. A goal that tries many partitions against the same few brokers (PARTITION_COUNT, to which every
// partition weighs the same) then asks the goals above it about a few partition sizes instead of every partition.
//
// Only refusals are remembered, and only those of goals that refuse by measure, so a remembered answer is the one
// acceptable() would give: exactly for the band and ceiling conditions, and for the summed violation up to rounding
// (computed in floating point it is convex only to within a few ulps, far inside the goal's own tolerance eps).
// Thread safety: one optimize() at a time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

#include "moonmq/autobalancer/goals/goal.hpp"

namespace moonmq::autobalancer {

class move_refusals {
 public:
  explicit move_refusals(const optimization& ctx) : ctx_(ctx), seen_(ctx.changes()) {
    for (goal* g : ctx.higher()) remembers_.push_back(g->refuses_by_measure() ? 1 : 0);
    measure_.assign(remembers_.size(), 0.0);
  }

  /// Starts asking about moves of partition `p`: reads its measure to each goal above that refuses by measure.
  void consider(partition_index p) {
    const auto higher = ctx_.higher();
    for (std::size_t k = 0; k < remembers_.size(); ++k)
      if (remembers_[k]) measure_[k] = higher[k]->move_measure(ctx_.snap(), p);
  }

  /// Whether a goal above is known to refuse moving the considered partition from `src` to `dest`.
  bool known_refused(broker_index src, broker_index dest) {
    forget_if_changed();
    const std::size_t k = measure_.size();
    for (std::size_t i = 0; i < pairs_.size(); ++i) {
      if (pairs_[i].src != src || pairs_[i].dest != dest) continue;
      for (std::size_t j = 0; j < k; ++j)
        if (measure_[j] >= floor_[i * k + j]) return true;
      return false;
    }
    return false;
  }

  /// Records why `a`, a MOVE of the considered partition that acceptable() just refused, was refused.
  void note_refused(const action& a) {
    forget_if_changed();
    const snapshot& s = ctx_.snap();
    if (a.type != action_type::move || !s.valid(a)) return;
    const auto higher = ctx_.higher();
    for (std::size_t j = 0; j < higher.size(); ++j) {
      if (higher[j]->accepts(s, a)) continue;
      if (remembers_[j] && measure_[j] > 0) {
        double& f = floor_at(a.src, a.dest, j);
        f = std::min(f, measure_[j]);
      }
      return;
    }
  }

 private:
  struct broker_pair {
    broker_index src, dest;
  };

  void forget_if_changed() {
    if (ctx_.changes() == seen_) return;
    pairs_.clear();
    floor_.clear();
    seen_ = ctx_.changes();
  }

  double& floor_at(broker_index src, broker_index dest, std::size_t j) {
    const std::size_t k = measure_.size();
    for (std::size_t i = 0; i < pairs_.size(); ++i)
      if (pairs_[i].src == src && pairs_[i].dest == dest) return floor_[i * k + j];
    pairs_.push_back({src, dest});
    floor_.resize(floor_.size() + k, std::numeric_limits<double>::infinity());
    return floor_[(pairs_.size() - 1) * k + j];
  }

  const optimization& ctx_;
  std::size_t seen_;                 ///< ctx_.changes() when the floors were recorded
  std::vector<char> remembers_;      ///< per goal above: refuses by measure
  std::vector<double> measure_;      ///< per goal above: the considered partition's measure
  std::vector<broker_pair> pairs_;   ///< the broker pairs with a refusal on record
  std::vector<double> floor_;        ///< per pair, per goal above: the smallest measure refused
};

}  // namespace moonmq::autobalancer
