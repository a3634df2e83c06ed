// The detector's last step: fewer bytes for the same result.
//
// The goals choose partitions for what they balance, not for what moving them costs, and a later goal's moves may
// make an earlier one's unnecessary. After they have run, the partitions the plan moves (largest first) are offered
// cheaper alternatives, each step carried out only when every goal accepts it (so nothing any goal reached is given
// up, by the same rule the goals live by):
//   - going back to where it was (its move is not needed any more);
//   - trading places with a smaller partition on the broker it left, which then makes the trip instead (the saving
//     is the difference in size), or with one that was itself moved there (the saving is the whole partition);
//   - one cheaper move first that makes room (a smaller partition leaves the broker it left, for any broker, or one
//     from a third broker comes to take its place), then going back or trading as above;
//   - going back although no goal accepts that alone, then repairing what it breaks with a few smaller moves, each
//     the one that mends the goals most per byte it copies (or, tried as well, the one that mends them most); the
//     cheaper repair is kept, and the sequence is kept only when, taken as a whole, it
//     passes the rule every goal applies to one action (standings.hpp) and copies fewer bytes than the move it
//     replaces.
// A move costs the partition's bytes on disk: that is what the copy transfers.
//
// The work is bounded whatever the cluster's size: at most `max_examined` moved partitions per round,
// `candidate_tries` candidates per alternative, and for a repair `max_repaired` partitions per round, `repair_steps`
// moves each, `repair_scanned` partitions of a broker searched per move; and `max_looked_at` candidates looked at in
// all per run.
// Thread safety: pure function over its arguments.
#pragma once

#include <algorithm>
#include <optional>
#include <span>
#include <vector>

#include "moonmq/autobalancer/action.hpp"
#include "moonmq/autobalancer/goals/goal.hpp"
#include "moonmq/autobalancer/model/snapshot.hpp"
#include "moonmq/autobalancer/standings.hpp"

namespace moonmq::autobalancer {

class economizer {
 public:
  /// Candidates tried per alternative (stand-ins, room makers).
  static constexpr std::size_t candidate_tries = 48;
  /// Moved partitions examined per round, largest first.
  static constexpr std::size_t max_examined = 512;
  /// Partitions of one broker scanned for candidates.
  static constexpr std::size_t max_scanned = 512;
  /// Candidates (partition and destination) looked at per run, in all alternatives together.
  static constexpr std::size_t max_looked_at = 300'000;
  /// Rounds over the moved partitions (each may open savings for the next).
  static constexpr int rounds = 3;
  /// Moved partitions per round that are sent back and repaired, moves per repair, partitions of a broker searched
  /// for one repair move, and the cluster size up to which every broker is searched (above it, only those involved).
  static constexpr std::size_t max_repaired = 64;
  static constexpr int repair_steps = 10;
  static constexpr std::size_t repair_scanned = 1024;
  static constexpr std::size_t small_cluster = 32;

  /// `before` is the placement the plan starts from, `work` the placement the goals reached (changed here), `goals`
  /// all goals in priority order and `raw` the actions taken so far (appended to). Returns the bytes saved.
  /// `budget` caps the partitions the plan may move in all (MaxActionsPerDetect). Does nothing unless every goal
  /// guards what it reaches (goal::guards_result()): an alternative is only as safe as the goals' judgement of it.
  static double run(const snapshot& before, snapshot& work, std::span<goal* const> goals, std::vector<action>& raw,
                    std::size_t budget) {
    for (goal* g : goals)
      if (!g->guards_result()) return 0;
    economizer e{before, work, goals, raw, budget};
    // A repair is judged against where the goals got to; when some goal has not got there yet, leave its path open
    // for the next detection (a repair may trade the violation it left for one no goal can then remove).
    const bool met = std::all_of(goals.begin(), goals.end(), [&](goal* g) { return g->satisfied(work); }) &&
                     std::all_of(goals.begin(), goals.end(), [](goal* g) { return g->judges_sequences(); });
    double saved = 0;
    for (int round = 0; round < rounds; ++round) {
      double gained = 0;
      std::size_t repaired = 0;
      for (partition_index p : e.moved()) {
        if (e.looked_at_ >= max_looked_at) break;
        if (work.owner(p) == before.owner(p)) continue;  // returned by a step earlier in this round
        double g = e.improve(p);
        if (g <= 0 && met && repaired < max_repaired && work.owner(p) != before.owner(p)) {
          ++repaired;
          g = e.send_home_and_repair(p);
        }
        gained += g;
      }
      saved += gained;
      if (gained <= 0) break;
    }
    return saved;
  }

 private:
  struct candidate {
    double extra;  ///< bytes the plan copies in addition if the candidate is taken (negative: saved)
    partition_index q;
    broker_index to;
  };

  economizer(const snapshot& before, snapshot& work, std::span<goal* const> goals, std::vector<action>& raw,
             std::size_t budget)
      : before_(before), work_(work), goals_(goals), raw_(raw), budget_(budget),
        moved_count_(moved_partitions(before, work)) {}

  double cost(partition_index p) const { return move_cost(work_, p); }

  /// Partitions placed elsewhere than in `before`, largest first (index breaks ties), at most max_examined.
  std::vector<partition_index> moved() const {
    std::vector<partition_index> out;
    for (partition_index p = 0; p < work_.partition_count(); ++p)
      if (work_.owner(p) != before_.owner(p)) out.push_back(p);
    auto larger = [&](partition_index x, partition_index y) {
      double cx = cost(x), cy = cost(y);
      return cx != cy ? cx > cy : x < y;
    };
    if (out.size() > max_examined) {
      std::partial_sort(out.begin(), out.begin() + max_examined, out.end(), larger);
      out.resize(max_examined);
    } else {
      std::sort(out.begin(), out.end(), larger);
    }
    return out;
  }

  bool acceptable(const action& a) const {
    if (!work_.valid(a)) return false;
    for (goal* g : goals_)
      if (!g->accepts(work_, a)) return false;
    return true;
  }

  /// Bytes the plan copies in addition if `q` ends on `b` instead of where it is now.
  double extra(partition_index q, broker_index b) const { return moved_delta(q, b) * cost(q); }

  int moved_delta(partition_index q, broker_index b) const { return moved_change(before_, work_, q, b); }

  void take(const action& a) {
    moved_count_ += moved_delta(a.partition, a.dest);
    if (a.type == action_type::swap) moved_count_ += moved_delta(a.swap_partition, a.src);
    work_.apply(a);
    raw_.push_back(a);
  }

  /// Takes back the actions after raw_[mark].
  void rewind(std::size_t mark) {
    while (raw_.size() > mark) {
      action r = raw_.back().reversed();
      raw_.pop_back();
      moved_count_ += moved_delta(r.partition, r.dest);
      if (r.type == action_type::swap) moved_count_ += moved_delta(r.swap_partition, r.src);
      work_.apply(r);
    }
  }

  /// Up to candidate_tries partitions of `from` (other than `p`) that would move to `to` for less than `limit`
  /// extra bytes, cheapest first; `to` = no_index means every other broker except `skip`.
  std::vector<candidate> candidates(broker_index from, broker_index to, broker_index skip, partition_index p,
                                    double limit) const {
    std::vector<candidate> out;
    const auto& members = work_.partitions_on(from);
    const std::size_t n = std::min(members.size(), max_scanned);
    for (std::size_t i = 0; i < n; ++i) {
      partition_index q = members[i];
      if (q == p || !work_.movable(q)) continue;
      const broker_index first = to == no_index ? 0 : to;
      const broker_index last = to == no_index ? static_cast<broker_index>(work_.broker_count()) : to + 1;
      for (broker_index b = first; b < last; ++b) {
        if (b == from || b == skip || !work_.can_receive(b)) continue;
        if (looked_at_ >= max_looked_at) break;
        ++looked_at_;
        double e = extra(q, b);
        if (e < limit) out.push_back({e, q, b});
      }
    }
    auto cheaper = [](const candidate& x, const candidate& y) {
      if (x.extra != y.extra) return x.extra < y.extra;
      return x.q != y.q ? x.q < y.q : x.to < y.to;
    };
    if (out.size() > candidate_tries) {
      std::partial_sort(out.begin(), out.begin() + candidate_tries, out.end(), cheaper);
      out.resize(candidate_tries);
    } else {
      std::sort(out.begin(), out.end(), cheaper);
    }
    return out;
  }

  /// Sends `p` back, or trades it for a stand-in from its first broker that costs under `budget` extra bytes;
  /// returns the extra bytes the step costs (negative: it saves more), or nothing when no step was acceptable.
  std::optional<double> back_or_trade(partition_index p, double budget) {
    const broker_index home = before_.owner(p), now = work_.owner(p);
    action back = action::move(p, now, home);
    if (acceptable(back)) {
      take(back);
      return 0;
    }
    for (const candidate& k : candidates(home, now, no_index, p, budget)) {
      action trade = action::swap(p, now, home, k.q);
      if (!acceptable(trade)) continue;
      take(trade);
      return k.extra;
    }
    return std::nullopt;
  }

  /// Tries the alternatives for moved partition `p`; returns the bytes saved.
  double improve(partition_index p) {
    const broker_index home = before_.owner(p), now = work_.owner(p);
    const double c = cost(p);
    const std::size_t mark = raw_.size();
    if (auto spent = back_or_trade(p, c)) return c - *spent;

    // A room maker first: a partition leaves `home` (for `now` too: two small ones may stand in for one large), or
    // one comes to `now` from a third broker.
    std::vector<candidate> makers = candidates(home, no_index, no_index, p, c);
    for (broker_index x = 0; x < work_.broker_count(); ++x) {
      if (x == home || x == now) continue;
      for (const candidate& k : candidates(x, now, no_index, p, c)) makers.push_back(k);
    }
    std::stable_sort(makers.begin(), makers.end(),
                     [](const candidate& x, const candidate& y) { return x.extra < y.extra; });
    if (makers.size() > candidate_tries) makers.resize(candidate_tries);
    for (const candidate& k : makers) {
      action maker = action::move(k.q, work_.owner(k.q), k.to);
      if (!acceptable(maker)) continue;
      take(maker);
      if (auto spent = back_or_trade(p, c - k.extra); spent && moved_count_ <= budget_) return c - k.extra - *spent;
      rewind(mark);
    }
    return 0;
  }

  // ---- sending home and repairing ------------------------------------------------------------------------------

  /// The goals' violations of the brokers `a` touches, each goal weighing 8 times the next (priority order).
  double weighted_violation(const action& a) const {
    double sum = 0;
    for (goal* g : goals_) {
      sum *= 8;
      sum += g->broker_violation(work_, a.src) + g->broker_violation(work_, a.dest);
    }
    return sum;
  }

  struct repair_move {
    action a;
    double extra;
    double gain;  ///< weighted violation removed
  };

  /// The move, other than of `p`, that removes the most weighted violation per extra byte (moves that save bytes
  /// first; with `per_byte` false, the most weighted violation), adding less than `limit` bytes; partitions of the
  /// brokers in `involved` leave for any broker, and any broker's partitions may come to them (in a cluster over
  /// small_cluster brokers, only among `involved`).
  std::optional<repair_move> best_repair(partition_index p, const std::vector<broker_index>& involved, double limit,
                                         bool per_byte) {
    const std::size_t n = work_.broker_count();
    std::vector<char> in(n, 0);
    for (broker_index b : involved) in[b] = 1;
    const bool everywhere = n <= small_cluster;
    std::optional<repair_move> best;
    auto better = [per_byte](const repair_move& x, const repair_move& y) {
      if (!per_byte) return x.gain != y.gain ? x.gain > y.gain : x.extra < y.extra;
      const bool xs = x.extra <= 0, ys = y.extra <= 0;
      if (xs != ys) return xs;
      if (xs) return x.gain > y.gain;
      return x.gain / x.extra > y.gain / y.extra;
    };
    std::vector<broker_index> sources, all_brokers;
    for (broker_index b = 0; b < n; ++b) all_brokers.push_back(b);
    sources = everywhere ? all_brokers : involved;
    const std::vector<broker_index>& dests = everywhere ? all_brokers : involved;
    for (broker_index from : sources) {
      // A copy: trying a move reorders the broker's list (apply and undo swap with its last entry).
      const auto& list = work_.partitions_on(from);
      const std::vector<partition_index> members(list.begin(),
                                                 list.begin() + static_cast<std::ptrdiff_t>(
                                                                    std::min(list.size(), repair_scanned)));
      for (const partition_index q : members) {
        if (q == p || !work_.movable(q)) continue;
        for (broker_index to : dests) {
          if (to == from || !work_.can_receive(to) || (!in[from] && !in[to])) continue;
          const double e = extra(q, to);
          if (e >= limit) continue;
          if (looked_at_ >= max_looked_at) return best;
          ++looked_at_;
          const action a = action::move(q, from, to);
          const double was = weighted_violation(a);
          double is = 0;
          {
            const snapshot::trial tried(work_);
            work_.apply(a);
            is = weighted_violation(a);
            work_.undo(a);
          }
          const repair_move m{a, e, was - is};
          if (m.gain <= 1e-9) continue;
          if (!best || better(m, *best)) best = m;
        }
      }
    }
    return best;
  }

  /// Sends moved partition `p` home and repairs what that breaks (see the file comment); returns the bytes saved.
  double send_home_and_repair(partition_index p) {
    const broker_index home = before_.owner(p), now = work_.owner(p);
    if (!work_.valid(action::move(p, now, home))) return 0;
    // Two ways of choosing each repair move: most violation mended per byte, or most violation mended. The one whose
    // repair copies fewer bytes is kept.
    const std::size_t mark = raw_.size();
    const std::optional<double> per_byte = repair_after_return(p, true);
    std::vector<action> kept(raw_.begin() + static_cast<std::ptrdiff_t>(mark), raw_.end());
    rewind(mark);
    const std::optional<double> most = repair_after_return(p, false);
    if (most && (!per_byte || *most <= *per_byte)) return cost(p) - *most;
    rewind(mark);
    if (!per_byte) return 0;
    for (const action& a : kept) take(a);
    return cost(p) - *per_byte;
  }

  /// Sends `p` home and repairs; returns the extra bytes the repair copies (less than p's), with the actions taken,
  /// or nothing (and nothing taken).
  std::optional<double> repair_after_return(partition_index p, bool per_byte) {
    const broker_index home = before_.owner(p), now = work_.owner(p);
    const double c = cost(p);
    const std::size_t mark = raw_.size();
    const standings base(work_, goals_);
    std::vector<broker_index> involved{home, now};
    take(action::move(p, now, home));
    double spent = 0;
    for (int step = 0; step < repair_steps; ++step) {
      auto m = best_repair(p, involved, c - spent, per_byte);
      if (!m) break;
      take(m->a);
      spent += m->extra;
      for (broker_index b : {m->a.src, m->a.dest})
        if (std::find(involved.begin(), involved.end(), b) == involved.end()) involved.push_back(b);
      if (base.no_worse_at(work_, goals_, goals_.size(), involved)) {
        if (spent < c && moved_count_ <= budget_) return spent;
        break;
      }
    }
    rewind(mark);
    return std::nullopt;
  }

  const snapshot& before_;
  snapshot& work_;
  std::span<goal* const> goals_;
  std::vector<action>& raw_;
  std::size_t budget_;
  mutable std::size_t looked_at_ = 0;  ///< candidates looked at so far (max_looked_at)
  std::size_t moved_count_ = 0;  ///< partitions placed elsewhere than in before_
};

}  // namespace moonmq::autobalancer
