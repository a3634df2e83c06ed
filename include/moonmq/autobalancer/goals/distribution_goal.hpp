// A goal that keeps every active broker's total of one per-partition figure inside a band around the mean.
//
// This is the shape of all four built-in goals (NW_IN, NW_OUT, DISK, PARTITION_COUNT) and the easiest base for a
// custom one: override `partition_value()` (and `broker_value()` when the total is known in O(1)).
//
// The band is mean * (1 ± Deviation) over the active brokers. A goal may give brokers weights (broker_weight(): the
// resource goals weigh brokers by their capacity, when every active broker has one): a broker's band is then the
// band around the load per unit of weight, times its weight, so that the goal balances utilisation; and a ceiling
// (broker_ceiling()) caps a broker's band from above. While the mean is below DetectThreshold the goal is met and
// tolerates anything. A broker's violation is its distance outside its band divided by its weight (so that brokers'
// violations are comparable); every action this goal takes
// strictly lowers the summed violation of the two brokers it touches (so optimizing always terminates), and as a
// higher-priority goal it refuses any action that takes an in-band broker out of band or raises that sum.
//
// Optimizing runs in two phases. Shedding: brokers above the band, heaviest first, move their largest partitions
// that help to the lightest brokers that may receive; when no single move is acceptable, a partition is swapped for
// a lighter one on a light broker (of the trades tried, the one that copies the fewest bytes for the violation it
// removes). Filling: brokers below the band, lightest first, take partitions from the heaviest brokers. Finally,
// the net change of every broker that started out of band is checked: one under
// MinChange of the mean is not worth the data it moves, and this goal's actions touching that broker are taken back.
// Thread safety: one detector run at a time.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "moonmq/autobalancer/goals/goal.hpp"
#include "moonmq/autobalancer/goals/move_refusals.hpp"
#include "moonmq/autobalancer/goals/ranked_lists.hpp"

namespace moonmq::autobalancer {

/// The tunables every distribution goal takes (`Autobalance.Goals[i]`).
struct distribution_params {
  double deviation = 0.1;
  double detect_threshold = 0.0;
  double min_change = 0.05;

  /// Fills the unset fields of `c` from `defaults`.
  static distribution_params from(const goal_config& c, distribution_params defaults) {
    if (c.deviation) defaults.deviation = *c.deviation;
    if (c.detect_threshold) defaults.detect_threshold = *c.detect_threshold;
    if (c.min_change) defaults.min_change = *c.min_change;
    return defaults;
  }
};

/// The interval a broker's total should lie in.
struct band {
  double lower = 0;
  double upper = 0;
};

class distribution_goal : public goal {
 public:
  distribution_goal(std::string name, distribution_params params) : name_(std::move(name)), params_(params) {}

  std::string_view name() const override { return name_; }
  const distribution_params& params() const noexcept { return params_; }

  /// The figure this goal balances, for one partition. Must not depend on where the partition is.
  virtual double partition_value(const snapshot& s, partition_index p) const = 0;

  /// A broker's total of partition_value(). The default sums over its partitions; override when it is known in O(1).
  virtual double broker_value(const snapshot& s, broker_index b) const {
    double sum = 0;
    for (partition_index p : s.partitions_on(b)) sum += partition_value(s, p);
    return sum;
  }

  /// The band for a given mean. The default is mean * (1 ± deviation).
  virtual band band_for(double mean) const {
    return {mean * (1.0 - params_.deviation), mean * (1.0 + params_.deviation)};
  }

  /// A broker's share of the load relative to the others, positive (called in prepare() for active brokers). The
  /// default weighs all alike.
  virtual double broker_weight(const snapshot& /*s*/, broker_index /*b*/) const { return 1.0; }

  /// The most this goal lets a broker hold, whatever the band (called in prepare()). The default: no ceiling.
  virtual double broker_ceiling(const snapshot& /*s*/, broker_index /*b*/) const {
    return std::numeric_limits<double>::infinity();
  }

  /// Among partitions of equal value, those with the higher key are tried first. Default: none preferred. Read once
  /// per partition and kept while optimize() runs: it may depend on the partition and on what prepare() saw, not on
  /// where partitions are.
  virtual double preference(const snapshot& /*s*/, partition_index /*p*/) const { return 0.0; }

  /// Whether trading two partitions can help (not when every partition weighs the same).
  virtual bool uses_swaps() const { return true; }

  // ---- goal -------------------------------------------------------------------------------------------------------

  void prepare(const snapshot& s) override {
    double total = 0, weights = 0;
    std::size_t active = 0;
    weight_.assign(s.broker_count(), 1.0);
    for (broker_index b = 0; b < s.broker_count(); ++b) {
      if (!s.active(b)) continue;
      total += broker_value(s, b);
      weight_[b] = broker_weight(s, b);
      weights += weight_[b];
      ++active;
    }
    mean_ = active ? total / static_cast<double>(active) : 0.0;
    unit_ = weights > 0 ? total / weights : 0.0;
    enabled_ = active > 0 && mean_ > 0 && unit_ > 0 && mean_ >= params_.detect_threshold;
    band_ = band_for(mean_);
    const band unit_band = band_for(unit_);
    bands_.assign(s.broker_count(), unit_band);
    ceiling_.assign(s.broker_count(), std::numeric_limits<double>::infinity());
    for (broker_index b = 0; b < s.broker_count(); ++b) {
      band& bb = bands_[b];
      ceiling_[b] = broker_ceiling(s, b);
      bb = {unit_band.lower * weight_[b], std::min(unit_band.upper * weight_[b], ceiling_[b])};
      if (bb.lower > bb.upper) bb.lower = bb.upper;
    }
    eps_ = 1e-9 * std::max(1.0, mean_);
    lists_.forget();
  }

  bool accepts(const snapshot& s, const action& a) const override {
    if (!enabled_) return true;
    if (raises_over_ceiling(s, a)) return false;
    auto [before_src, before_dest, after_src, after_dest] = violations(s, a);
    if (before_src <= eps_ && after_src > eps_) return false;
    if (before_dest <= eps_ && after_dest > eps_) return false;
    return after_src + after_dest <= before_src + before_dest + eps_;
  }

  /// accepts() keeps every in-band broker in band and never lets the summed violation grow.
  bool guards_result() const override { return true; }

  bool judges_sequences() const override { return true; }

  /// A distribution goal refuses a move by the partition's value (move_refusals.hpp says why), unless a subclass adds
  /// rules of its own to accepts() (it then says no to judges_sequences(), and so to this).
  bool refuses_by_measure() const override { return judges_sequences(); }
  double move_measure(const snapshot& s, partition_index p) const override { return partition_value(s, p); }

  double broker_violation(const snapshot& s, broker_index b) const override {
    if (!enabled_ || !s.active(b)) return 0.0;
    return violation(b, broker_value(s, b)) / unit_;
  }

  double ceiling_excess(const snapshot& s, broker_index b) const override {
    if (!enabled_ || !s.active(b)) return 0.0;
    return std::max(0.0, broker_value(s, b) - ceiling_[b]) / weight_[b] / unit_;
  }

  bool satisfied(const snapshot& s) const override {
    if (!enabled_) return true;
    for (broker_index b = 0; b < s.broker_count(); ++b)
      if (s.active(b) && violation(b, broker_value(s, b)) > eps_) return false;
    return true;
  }

  void optimize(optimization& ctx) override {
    if (!enabled_) return;
    const snapshot& s = ctx.snap();
    start_value_.assign(s.broker_count(), 0.0);
    lists_.start_run(s);
    by_value_.clear();
    for (broker_index b = 0; b < s.broker_count(); ++b) {
      start_value_[b] = broker_value(s, b);
      if (s.active(b)) by_value_.emplace(relative(b, start_value_[b]), b);
    }

    std::vector<broker_index> over_band, under_band;
    for (auto it = by_value_.rbegin(); it != by_value_.rend(); ++it)
      if (over(s, it->second)) over_band.push_back(it->second);
    for (broker_index b : over_band) {
      if (ctx.exhausted()) break;
      shed(ctx, b);
    }
    for (auto it = by_value_.begin(); it != by_value_.end(); ++it)
      if (under(s, it->second) && s.can_receive(it->second)) under_band.push_back(it->second);
    for (broker_index b : under_band) {
      if (ctx.exhausted()) break;
      fill(ctx, b);
    }
    take_back_trivial(ctx);
  }

  // ---- observers (reports, tests) -----------------------------------------------------------------------------------

  /// The mean over the active brokers of what they hold.
  double mean() const noexcept { return mean_; }
  /// The band around the mean, for brokers all weighted alike.
  const band& current_band() const noexcept { return band_; }
  /// Broker `b`'s own band (weighted and capped by its ceiling).
  const band& band_of(broker_index b) const { return bands_[b]; }
  /// Broker `b`'s weight (1 unless the goal weighs brokers).
  double weight_of(broker_index b) const { return weight_[b]; }
  /// False while the mean is below DetectThreshold (the goal is then met whatever the placement).
  bool enabled() const noexcept { return enabled_; }
  /// Distance of `value` outside broker `b`'s band (0 inside), divided by its weight.
  double violation(broker_index b, double value) const {
    const band& bb = bands_[b];
    return (std::max(0.0, value - bb.upper) + std::max(0.0, bb.lower - value)) / weight_[b];
  }

 protected:
  /// How many destinations (or sources) are tried for one partition, and partitions for one pairing.
  static constexpr int broker_tries = 8;
  static constexpr int partition_tries = 32;

 private:
  using ranked_partition = ranked_lists::entry;
  struct violation_change {
    double before_src, before_dest, after_src, after_dest;
  };

  double delta(const snapshot& s, const action& a) const {
    double d = partition_value(s, a.partition);
    if (a.type == action_type::swap) d -= partition_value(s, a.swap_partition);
    return d;
  }

  violation_change violations(const snapshot& s, const action& a) const {
    double d = delta(s, a);
    double vs = broker_value(s, a.src), vd = broker_value(s, a.dest);
    return {violation(a.src, vs), violation(a.dest, vd), violation(a.src, vs - d), violation(a.dest, vd + d)};
  }

  /// Whether `a` adds to a broker that is, or would then be, above its ceiling (a band's weights may make that look
  /// cheap in summed violation; the ceiling is a limit, not a preference).
  bool raises_over_ceiling(const snapshot& s, const action& a) const {
    const double d = delta(s, a);
    if (d > 0) return broker_value(s, a.dest) + d > ceiling_[a.dest] + eps_;
    if (d < 0) return broker_value(s, a.src) - d > ceiling_[a.src] + eps_;
    return false;
  }

  /// This goal's own rule for its actions: the two brokers' summed violation must strictly drop.
  bool improves(const snapshot& s, const action& a) const {
    if (raises_over_ceiling(s, a)) return false;
    auto [bs, bd, as, ad] = violations(s, a);
    return as + ad < bs + bd - eps_;
  }

  bool apply(optimization& ctx, const action& a) {
    const snapshot& s = ctx.snap();
    double vs = broker_value(s, a.src), vd = broker_value(s, a.dest);
    if (!ctx.try_apply(a)) return false;
    reorder(a.src, vs, broker_value(s, a.src));
    reorder(a.dest, vd, broker_value(s, a.dest));
    lists_.note_arrival(s, a.dest, a.partition, *this);
    if (a.type == action_type::swap) lists_.note_arrival(s, a.src, a.swap_partition, *this);
    return true;
  }

  /// Moves broker `b` in by_value_ from where `before` put it to where `after` does (reusing its node: this runs
  /// for every action a goal takes).
  void reorder(broker_index b, double before, double after) {
    auto node = by_value_.extract({relative(b, before), b});
    if (node.empty()) {
      by_value_.emplace(relative(b, after), b);
      return;
    }
    node.value().first = relative(b, after);
    by_value_.insert(std::move(node));
  }

  /// `b`'s list (ranked_lists.hpp) and the first entry of it that may be live.
  const std::vector<ranked_partition>& ranked(const snapshot& s, broker_index b) { return lists_.of(s, b, *this); }
  std::size_t first_live(const snapshot& s, broker_index b) { return lists_.first_live(s, b); }

  bool over(const snapshot& s, broker_index b) const { return broker_value(s, b) > bands_[b].upper + eps_; }
  bool under(const snapshot& s, broker_index b) const { return broker_value(s, b) < bands_[b].lower - eps_; }
  /// What broker `b` holds per unit of its weight: brokers are ordered by it, lightest first.
  double relative(broker_index b, double value) const { return value / weight_[b]; }
  /// What broker `b` would hold at the mean.
  double target(broker_index b) const { return unit_ * weight_[b]; }

  void shed(optimization& ctx, broker_index b) {
    const snapshot& s = ctx.snap();
    const std::vector<ranked_partition> candidates = ranked(s, b);  // copy: arrivals are inserted into b's list
    move_refusals refusals(ctx);
    for (std::size_t i = first_live(s, b); i < candidates.size(); ++i) {
      const auto& c = candidates[i];
      if (ctx.exhausted() || !over(s, b)) return;
      if (s.owner(c.p) != b) continue;
      refusals.consider(c.p);
      int tries = 0;
      for (auto it = by_value_.begin(); it != by_value_.end() && tries < broker_tries; ++it) {
        broker_index d = it->second;
        if (d == b || !s.can_receive(d)) continue;
        ++tries;
        if (refusals.known_refused(b, d)) continue;
        action a = action::move(c.p, b, d);
        // Brokers are tried lightest (per unit of weight) first; with weights and ceilings, a heavier one may still
        // have room where a lighter one has none.
        if (!improves(s, a)) continue;
        if (apply(ctx, a)) break;
        refusals.note_refused(a);
      }
    }
    if (!uses_swaps()) return;
    while (!ctx.exhausted() && over(s, b)) {
      std::optional<action> best = cheapest_swap(ctx, b);
      if (!best || !apply(ctx, *best)) return;
    }
  }

  /// Among the trades of `heavy`'s partitions (the first partition_tries that may move) with lighter partitions of
  /// the lightest brokers, the acceptable one that copies the fewest bytes per unit of violation it removes.
  std::optional<action> cheapest_swap(optimization& ctx, broker_index heavy) {
    const snapshot& s = ctx.snap();
    std::optional<action> best;
    double best_score = 0;
    int scanned = 0;
    const std::vector<ranked_partition> candidates = ranked(s, heavy);
    for (std::size_t i = first_live(s, heavy); i < candidates.size(); ++i) {
      const auto& c = candidates[i];
      if (scanned >= partition_tries) break;
      if (s.owner(c.p) != heavy) continue;
      ++scanned;
      int tries = 0;
      for (auto it = by_value_.begin(); it != by_value_.end() && tries < broker_tries; ++it) {
        broker_index light = it->second;
        if (light == heavy || !s.can_receive(light)) continue;
        ++tries;
        for (partition_index q : swap_partners(s, c, heavy, light)) {
          action a = action::swap(c.p, heavy, light, q);
          auto [bs, bd, as, ad] = violations(s, a);
          double gain = (bs + bd) - (as + ad);
          if (gain <= eps_) continue;
          double score = (move_cost(s, c.p) + move_cost(s, q)) / gain;
          if (best && score >= best_score) continue;
          if (!ctx.acceptable(a)) continue;
          best = a;
          best_score = score;
        }
      }
    }
    return best;
  }

  /// Lighter partitions of `light` whose trade for `c` would transfer about what centres the lighter side (or brings
  /// the heavier into the band): the one nearest that, a few heavier ones, then lighter ones (at most partition_tries).
  std::vector<partition_index> swap_partners(const snapshot& s, const ranked_partition& c, broker_index heavy,
                                             broker_index light) {
    double vh = broker_value(s, heavy), vl = broker_value(s, light);
    double wanted = std::min(vh - target(heavy), target(light) - vl);
    if (wanted <= 0) wanted = vh - bands_[heavy].upper;
    const auto& list = ranked(s, light);
    std::size_t ideal = ranked_lists::first_at_most(list, c.value - wanted);
    std::size_t from = std::max(ideal > partition_tries / 2 ? ideal - partition_tries / 2 : 0, first_live(s, light));
    std::vector<partition_index> out;
    for (std::size_t i = from; i < list.size() && out.size() < static_cast<std::size_t>(partition_tries); ++i)
      if (list[i].value < c.value && s.owner(list[i].p) == light) out.push_back(list[i].p);
    return out;
  }

  /// Trades heavy partition `c` on `heavy` for a lighter one on `light` that brings both nearer the band.
  bool try_swap(optimization& ctx, const ranked_partition& c, broker_index heavy, broker_index light) {
    for (partition_index q : swap_partners(ctx.snap(), c, heavy, light)) {
      action a = action::swap(c.p, heavy, light, q);
      if (improves(ctx.snap(), a) && apply(ctx, a)) return true;
    }
    return false;
  }

  void fill(optimization& ctx, broker_index u) {
    const snapshot& s = ctx.snap();
    move_refusals refusals(ctx);
    while (!ctx.exhausted() && under(s, u)) {
      bool moved = false;
      int tries = 0;
      for (auto it = by_value_.rbegin(); it != by_value_.rend() && tries < broker_tries && !moved; ++it) {
        broker_index src = it->second;
        if (src == u) continue;
        if (it->first <= unit_) break;  // the rest are no heavier than the mean: nothing to give
        ++tries;
        double vu = broker_value(s, u);
        const auto& list = ranked(s, src);
        // First the partitions that would bring `u` no further than the mean, largest first; then the larger ones
        // that still keep it inside the band.
        std::size_t centred = ranked_lists::first_at_most(list, std::min(target(u) - vu, broker_value(s, src) - target(src)));
        std::size_t fitting = ranked_lists::first_at_most(list, bands_[u].upper - vu);
        moved = move_one_of(ctx, refusals, list, centred, list.size(), src, u) ||
                move_one_of(ctx, refusals, list, fitting, centred, src, u);
        if (!moved && uses_swaps()) {
          // By index and by value: a successful swap inserts into this list (and ends the loop).
          int swaps = 0;
          for (std::size_t i = first_live(s, src); i < ranked(s, src).size() && swaps < partition_tries; ++i) {
            const ranked_partition c = ranked(s, src)[i];
            if (s.owner(c.p) != src) continue;
            ++swaps;
            if (try_swap(ctx, c, src, u)) {
              moved = true;
              break;
            }
          }
        }
      }
      if (!moved) return;
    }
  }

  /// Tries moves of list[from, to) from `src` to `dest` (at most partition_tries of them); true when one was taken.
  bool move_one_of(optimization& ctx, move_refusals& refusals, const std::vector<ranked_partition>& list,
                   std::size_t from, std::size_t to, broker_index src, broker_index dest) {
    const snapshot& s = ctx.snap();
    int scanned = 0;
    for (std::size_t i = std::max(from, first_live(s, src)); i < to && scanned < partition_tries; ++i) {
      if (s.owner(list[i].p) != src) continue;
      ++scanned;
      refusals.consider(list[i].p);
      if (refusals.known_refused(src, dest)) continue;
      action a = action::move(list[i].p, src, dest);
      if (!improves(s, a)) continue;
      if (apply(ctx, a)) return true;
      refusals.note_refused(a);
    }
    return false;
  }

  /// Takes back this goal's actions around brokers that started out of band but changed by less than MinChange of
  /// the mean: moving data for so small a correction is churn.
  void take_back_trivial(optimization& ctx) {
    if (params_.min_change <= 0) return;
    const snapshot& s = ctx.snap();
    for (broker_index b = 0; b < s.broker_count(); ++b) {
      if (violation(b, start_value_[b]) <= eps_) continue;
      const double threshold = params_.min_change * target(b);
      double net = broker_value(s, b) - start_value_[b];
      if (std::abs(net) <= eps_ || std::abs(net) >= threshold) continue;
      for (std::size_t i = ctx.own_actions().size(); i-- > 0;) {
        const action& a = ctx.own_actions()[i];
        if (a.src == b || a.dest == b) (void)ctx.take_back(i);
      }
    }
  }

  std::string name_;
  distribution_params params_;
  double mean_ = 0;
  double unit_ = 0;  ///< load per unit of weight over the active brokers (the mean when all weigh 1)
  band band_;
  std::vector<double> weight_;  ///< per broker
  std::vector<band> bands_;     ///< per broker
  std::vector<double> ceiling_;  ///< per broker: broker_ceiling()
  double eps_ = 1e-9;
  bool enabled_ = false;

  // Working state of one optimize() run.
  std::vector<double> start_value_;
  ranked_lists lists_;
  std::set<std::pair<double, broker_index>> by_value_;
};

}  // namespace moonmq::autobalancer
