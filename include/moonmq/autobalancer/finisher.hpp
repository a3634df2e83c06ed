// The detector's step for a goal the goals left unmet: a pair of actions where no single one helps.
//
// A distribution goal takes one action at a time, each of which must lower its own violation while every goal above
// it accepts it. That can leave it stuck: a broker below the PARTITION_COUNT band whose network load is at the top
// of its band can take no partition, although trading one of its busier partitions for a quieter one first would
// make room. For the first goal still unmet, the finisher looks for such pairs around the brokers that violate it:
// a first action (a move to or from such a broker, or a trade with it), then a move to or from the same broker, after
// which, judged as a whole (standings.hpp), the goals above it are no worse off than before the pair, and the goal
// itself no worse off and its summed violation strictly lower. The first action alone may leave any of them worse
// off for the moment: that is what makes room. A single action that already does it is a pair without a second step. A broker out of band by less than the goal's MinChange is left
// there, as the goal itself leaves it. Of the pairs found it takes the one that removes the most
// violation per byte it adds to the plan (pairs that save bytes first), and repeats while the budget lasts and
// something helps; each pair lowers a goal's violation without raising any above it, so this terminates. Neither step
// may add to a broker that then passes a goal's ceiling (MaxUtilization), as no goal's action may.
//
// The work is bounded whatever the cluster's size: `max_targets` violating brokers, `max_scanned` partitions per
// broker and side, `max_partners` other brokers (in a larger cluster, those violating the goal), `max_steps` pairs,
// and `max_evaluations` candidate placements judged in all, at most `max_step_evaluations` of them for one pair
// (shared by its targets, so that every target gets looked at). It does nothing when the budget is spent: a goal that is
// unmet only because the plan is full continues in the next detection.
// Thread safety: pure function over its arguments.
#pragma once

#include <algorithm>
#include <optional>
#include <span>
#include <vector>

#include "moonmq/autobalancer/action.hpp"
#include "moonmq/autobalancer/goals/distribution_goal.hpp"
#include "moonmq/autobalancer/goals/goal.hpp"
#include "moonmq/autobalancer/model/snapshot.hpp"
#include "moonmq/autobalancer/standings.hpp"

namespace moonmq::autobalancer {

class finisher {
 public:
  static constexpr std::size_t max_targets = 4;
  static constexpr std::size_t max_scanned = 16;
  static constexpr std::size_t max_partners = 16;
  static constexpr int max_steps = 16;
  /// Candidate placements judged per run, whatever the cluster's size, and per step (shared by its targets).
  static constexpr std::size_t max_evaluations = 400'000;
  static constexpr std::size_t max_step_evaluations = 100'000;

  /// `before` is the placement the plan starts from, `work` where the goals got to (changed here), `goals` all
  /// goals in priority order, `raw` the actions so far (appended to), `budget` the partitions the plan may move in
  /// all. Returns the number of pairs taken. Does nothing unless every goal guards its result.
  static int run(const snapshot& before, snapshot& work, std::span<goal* const> goals, std::vector<action>& raw,
                 std::size_t budget) {
    for (goal* g : goals)
      if (!g->guards_result() || !g->judges_sequences()) return 0;
    finisher f{before, work, goals, raw, budget};
    int taken = 0;
    while (taken < max_steps && f.evaluations_ < max_evaluations && f.step()) ++taken;
    return taken;
  }

 private:
  struct pair {
    action first;
    std::optional<action> second;
    double extra;  ///< bytes added to the plan (negative: saved)
    double gain;   ///< the goal's summed violation removed
  };

  finisher(const snapshot& before, snapshot& work, std::span<goal* const> goals, std::vector<action>& raw,
           std::size_t budget)
      : before_(before), work_(work), goals_(goals), raw_(raw), budget_(budget) {}

  /// Bytes the plan copies in addition when `a` is carried out now, and the change in partitions moved.
  std::pair<double, long> cost_of(const action& a) const {
    auto one = [&](partition_index q, broker_index to, double& bytes, long& count) {
      const int d = moved_change(before_, work_, q, to);
      bytes += d * move_cost(work_, q);
      count += d;
    };
    double bytes = 0;
    long count = 0;
    one(a.partition, a.dest, bytes, count);
    if (a.type == action_type::swap) one(a.swap_partition, a.src, bytes, count);
    return {bytes, count};
  }

  /// Whether `a`, just carried out, took neither of its brokers further above any goal's ceiling than `base` saw.
  bool raises_no_ceiling(const standings& base, const action& a) const {
    for (std::size_t g = 0; g < goals_.size(); ++g)
      for (broker_index b : {a.src, a.dest})
        if (goals_[g]->ceiling_excess(work_, b) > base.excess(g, b) + standings::eps) return false;
    return true;
  }

  /// Up to max_scanned movable partitions of `b`.
  std::vector<partition_index> some_of(broker_index b) const {
    std::vector<partition_index> out;
    for (partition_index q : work_.partitions_on(b)) {
      if (out.size() >= max_scanned) break;
      if (work_.movable(q)) out.push_back(q);
    }
    return out;
  }

  /// Moves to and from `u` (and, when `trades`, trades with it) with the brokers in `partners`.
  std::vector<action> actions_around(broker_index u, const std::vector<broker_index>& partners, bool trades) const {
    std::vector<action> out;
    const std::vector<partition_index> mine = some_of(u);
    for (broker_index x : partners) {
      if (x == u) continue;
      const std::vector<partition_index> theirs = some_of(x);
      for (partition_index q : mine) out.push_back(action::move(q, u, x));
      for (partition_index r : theirs) out.push_back(action::move(r, x, u));
      if (trades)
        for (partition_index q : mine)
          for (partition_index r : theirs) out.push_back(action::swap(q, u, x, r));
    }
    return out;
  }

  bool better(const pair& x, const pair& y) const {
    const bool xs = x.extra <= 0, ys = y.extra <= 0;
    if (xs != ys) return xs;
    if (xs) return x.gain > y.gain;
    return x.gain / x.extra > y.gain / y.extra;
  }

  /// Finds and takes the best pair for the first unmet goal; false when every goal is met or nothing helps.
  bool step() {
    std::size_t k = 0;
    while (k < goals_.size() && goals_[k]->satisfied(work_)) ++k;
    if (k == goals_.size()) return false;
    const std::size_t n = work_.broker_count();
    // A broker out of a distribution goal's band by less than its MinChange stays there: the goal itself takes
    // back a correction that small as churn (distribution_goal::take_back_trivial), and so does the finisher.
    const auto* dist = dynamic_cast<const distribution_goal*>(goals_[k]);
    const double worth = dist ? std::max(standings::eps, dist->params().min_change) : standings::eps;
    std::vector<broker_index> violating;
    for (broker_index b = 0; b < n; ++b)
      if (goals_[k]->broker_violation(work_, b) >= worth) violating.push_back(b);
    if (violating.empty()) return false;
    std::stable_sort(violating.begin(), violating.end(), [&](broker_index x, broker_index y) {
      return goals_[k]->broker_violation(work_, x) > goals_[k]->broker_violation(work_, y);
    });
    std::vector<broker_index> partners;
    if (n <= max_partners) {
      for (broker_index b = 0; b < n; ++b) partners.push_back(b);
    } else {
      // The violating brokers, then those with the most room either way: the lightest and heaviest per unit of
      // weight (for a distribution goal; by index otherwise), ties by index.
      partners.assign(violating.begin(), violating.begin() + std::min(violating.size(), max_partners / 2));
      std::vector<broker_index> others;
      for (broker_index b = 0; b < n; ++b)
        if (work_.active(b) && std::find(partners.begin(), partners.end(), b) == partners.end()) others.push_back(b);
      if (dist)
        std::stable_sort(others.begin(), others.end(), [&](broker_index x, broker_index y) {
          return dist->broker_value(work_, x) / dist->weight_of(x) < dist->broker_value(work_, y) / dist->weight_of(y);
        });
      for (std::size_t i = 0, j = others.size(); partners.size() < max_partners && i < j; ++i) {
        partners.push_back(others[i]);
        if (partners.size() < max_partners && j - 1 > i) partners.push_back(others[--j]);
      }
    }
    const long room = static_cast<long>(budget_) - static_cast<long>(moved_partitions(before_, work_));
    if (room <= 0) return false;
    const standings base(work_, goals_);
    std::vector<double> sums(k + 1);
    std::optional<pair> best;
    {
      const snapshot::trial trying(work_);  // every action tried here is taken back
      const std::size_t step_end = std::min(max_evaluations, evaluations_ + max_step_evaluations);
      for (std::size_t t = 0; t < violating.size() && t < max_targets; ++t) {
        const broker_index u = violating[t];
        // Each target may use its share of what the step has left, and leaves what it does not use to the next.
        const std::size_t targets_left = std::min(violating.size(), max_targets) - t;
        const std::size_t target_end = evaluations_ + (step_end - std::min(step_end, evaluations_)) / targets_left;
        for (const action& a1 : actions_around(u, partners, true)) {
          if (evaluations_ >= target_end) break;
          if (!work_.valid(a1)) continue;
          ++evaluations_;
          const auto [bytes1, count1] = cost_of(a1);
          if (count1 > room) continue;
          work_.apply(a1);
          const broker_index touched1[] = {a1.src, a1.dest};
          if (base.no_worse_at(work_, goals_, k + 1, touched1, sums.data()) && sums[k] < base.sum(k) - standings::eps) {
            pair p{a1, std::nullopt, bytes1, base.sum(k) - sums[k]};
            if (!best || better(p, *best)) best = p;
          }
          // A second step follows any first one that takes no broker further above a ceiling (a ceiling is a limit,
          // not a preference): a trade that leaves some goal worse off for the moment may make room for a move after
          // which the pair, judged as a whole, leaves it no worse off.
          if (raises_no_ceiling(base, a1)) {
            for (const action& a2 : actions_around(u, partners, false)) {
              if (evaluations_ >= target_end) break;
              if (!work_.valid(a2)) continue;
              ++evaluations_;
              const auto [bytes2, count2] = cost_of(a2);
              if (count1 + count2 > room) continue;
              work_.apply(a2);
              const broker_index touched2[] = {a1.src, a1.dest, a2.src, a2.dest};
              if (base.no_worse_at(work_, goals_, k + 1, touched2, sums.data()) &&
                  sums[k] < base.sum(k) - standings::eps) {
                pair p{a1, a2, bytes1 + bytes2, base.sum(k) - sums[k]};
                if (!best || better(p, *best)) best = p;
              }
              work_.undo(a2);
            }
          }
          work_.undo(a1);
        }
      }
    }
    if (!best) return false;
    work_.apply(best->first);
    raw_.push_back(best->first);
    if (best->second) {
      work_.apply(*best->second);
      raw_.push_back(*best->second);
    }
    return true;
  }

  const snapshot& before_;
  snapshot& work_;
  std::span<goal* const> goals_;
  std::vector<action>& raw_;
  std::size_t budget_;
  std::size_t evaluations_ = 0;
};

}  // namespace moonmq::autobalancer
