// The goal interface: what a distribution goal is, and the context it proposes actions through.
//
// The detector runs goals in priority order against one snapshot. A goal sees the snapshot through an
// `optimization`, and changes it only with `optimization::try_apply()`, which carries an action out only when it is
// valid (the partition may move, the destination may receive) and every goal of higher priority accepts it. That is
// the whole contract between goals: a later goal can never undo what an earlier one achieved.
//
// To write a goal, derive from `goal` and override `name()` and `optimize()`, and `accepts()` when later goals must
// not break what yours achieves. For "balance some per-partition figure across brokers", derive from
// `distribution_goal` instead and override only `partition_value()`. Register it in a `goal_registry` under a name and
// list that name in `Autobalance.Goals`.
// Thread safety: a goal instance is used by one detector run at a time.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "moonmq/autobalancer/action.hpp"
#include "moonmq/autobalancer/config.hpp"
#include "moonmq/autobalancer/model/snapshot.hpp"

namespace moonmq::autobalancer {

class optimization;

/// What moving partition `p` costs: the bytes the copy transfers, its size on disk.
inline double move_cost(const snapshot& s, partition_index p) { return s.load(p, resource::disk); }

/// How a plan from `before` changes in partitions moved when `q`, where `now` has it, ends on `to`: +1, 0 or -1.
inline int moved_change(const snapshot& before, const snapshot& now, partition_index q, broker_index to) {
  return static_cast<int>(to != before.owner(q)) - static_cast<int>(now.owner(q) != before.owner(q));
}

/// Partitions that `now` places elsewhere than `before`.
inline std::size_t moved_partitions(const snapshot& before, const snapshot& now) {
  std::size_t n = 0;
  for (partition_index p = 0; p < before.partition_count(); ++p) n += now.owner(p) != before.owner(p);
  return n;
}

class goal {
 public:
  virtual ~goal() = default;

  /// The registered name, e.g. "NW_IN".
  virtual std::string_view name() const = 0;

  /// Called once per detection, before any goal optimizes, with the snapshot as frozen. Goals compute what does not
  /// change while actions are tried (means and bands: moves conserve totals).
  virtual void prepare(const snapshot& /*snap*/) {}

  /// Proposes actions through `ctx.try_apply()` until the goal is met, nothing acceptable is left, or
  /// `ctx.exhausted()`.
  virtual void optimize(optimization& ctx) = 0;

  /// Whether this goal tolerates action `a` proposed by a goal of lower priority, judged on `snap` before `a` is
  /// applied. The default accepts everything.
  virtual bool accepts(const snapshot& /*snap*/, const action& /*a*/) const { return true; }

  /// Whether the goal is met on `snap` (for reports and tests). The default says yes.
  virtual bool satisfied(const snapshot& /*snap*/) const { return true; }

  /// Whether accepts() refuses every action that would undo what optimize() reached. The detector's economizer
  /// (economizer.hpp), which trades the goals' moves for cheaper ones, runs only when every goal says so; the
  /// default says no, so a custom goal that relies on its own moves alone keeps them.
  virtual bool guards_result() const { return false; }

  /// How far broker `b` is from what this goal wants on `snap`, relative to the goal's own scale (0 = met; for a
  /// distribution goal, the distance outside its band as a fraction of the mean). Goals that guard their result
  /// report it, so that the economizer can judge a sequence of actions as a whole by the rule accepts() applies to
  /// one: no broker that was met stops being met, and the sum over brokers does not grow. It must depend only on
  /// the partitions `b` holds (and on what prepare() computed). The default says 0.
  virtual double broker_violation(const snapshot& /*snap*/, broker_index /*b*/) const { return 0.0; }

  /// How far broker `b` is above the most this goal ever lets it hold (a ceiling, such as MaxUtilization of a
  /// capacity), on the same scale as broker_violation(); 0 below it. A sequence of actions judged as a whole may not
  /// raise it for any broker, as accepts() refuses any one action that adds to a broker above its ceiling. The
  /// default says 0: no ceiling.
  virtual double ceiling_excess(const snapshot& /*snap*/, broker_index /*b*/) const { return 0.0; }

  /// Whether broker_violation() says all that accepts() judges, so that a sequence of actions no single step of which
  /// this goal would accept may be judged as a whole by it (the economizer's repairs, the finisher's pairs). The
  /// default says no, and those steps then do not run. A distribution goal says yes; a subclass that adds rules of
  /// its own to accepts() must say no.
  virtual bool judges_sequences() const { return false; }

  /// Whether accepts() refuses a MOVE of a partition exactly when its move_measure() is at least some threshold that
  /// depends only on where the two brokers stand (so that once it refused a move of measure v between two brokers,
  /// it refuses every larger one until either broker changes). Goals below then remember refusals instead of asking
  /// again (move_refusals). The default says no. A distribution goal says so when it judges sequences.
  virtual bool refuses_by_measure() const { return false; }

  /// The figure of partition `p` that refuses_by_measure() speaks of (positive for a refusal to be remembered).
  virtual double move_measure(const snapshot& /*snap*/, partition_index /*p*/) const { return 0.0; }
};

/// The context a goal optimizes in: the shared snapshot, the goals above it, and the action budget.
class optimization {
 public:
  /// `higher` are the goals of higher priority than the one optimizing; `budget` caps the partition moves it may
  /// still take (a SWAP counts two).
  optimization(snapshot& snap, std::span<goal* const> higher, std::vector<action>& actions, std::size_t budget)
      : snap_(snap), higher_(higher), actions_(actions), budget_(budget), first_(actions.size()) {}

  const snapshot& snap() const noexcept { return snap_; }

  /// The goals of higher priority, in order: those whose acceptance try_apply() asks for.
  std::span<goal* const> higher() const noexcept { return higher_; }

  /// True when no further action may be taken in this detection.
  bool exhausted() const noexcept { return live_ >= budget_; }

  /// The part of the budget this goal's live actions use.
  std::size_t spent() const noexcept { return live_; }

  /// How many times the snapshot has changed through this context (actions carried out and taken back).
  std::size_t changes() const noexcept { return changes_; }

  /// Whether `a` is valid now and every higher-priority goal accepts it (nothing is changed).
  bool acceptable(const action& a) const {
    if (!snap_.valid(a)) return false;
    for (goal* g : higher_)
      if (!g->accepts(snap_, a)) return false;
    return true;
  }

  /// Carries out `a` if it is acceptable and the budget allows; returns whether it was carried out. A SWAP costs
  /// two of the budget: it may be split into two moves when the plan is chained.
  bool try_apply(const action& a) {
    if (live_ + cost(a) > budget_ || !acceptable(a)) return false;
    snap_.apply(a);
    actions_.push_back(a);
    live_ += cost(a);
    ++changes_;
    return true;
  }

  /// The actions this goal has taken so far (taken-back ones are left out).
  std::span<const action> own_actions() const { return {actions_.data() + first_, actions_.size() - first_}; }

  /// Takes back this goal's `i`-th action (index into own_actions()) if its partitions are still where it put them
  /// and the higher-priority goals accept the reversal. Returns whether it was taken back.
  bool take_back(std::size_t i) {
    const action a = actions_[first_ + i];
    const action r = a.reversed();
    // The reversal restores a placement that existed, so the destination's receive rule does not apply to it.
    if (snap_.owner(a.partition) != a.dest) return false;
    if (a.type == action_type::swap && snap_.owner(a.swap_partition) != a.src) return false;
    for (goal* g : higher_)
      if (!g->accepts(snap_, r)) return false;
    snap_.apply(r);
    actions_.erase(actions_.begin() + static_cast<std::ptrdiff_t>(first_ + i));
    live_ -= cost(a);
    ++changes_;
    return true;
  }

 private:
  static std::size_t cost(const action& a) { return a.type == action_type::swap ? 2 : 1; }

  snapshot& snap_;
  std::span<goal* const> higher_;
  std::vector<action>& actions_;
  std::size_t budget_;
  std::size_t first_;
  std::size_t live_ = 0;
  std::size_t changes_ = 0;
};

}  // namespace moonmq::autobalancer
