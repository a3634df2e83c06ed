// Why a broker is still out of a goal's band after planning: the explain half of `moonmq-plan --explain` and of the
// balance loop's last plan.
//
// For every distribution goal and every active broker outside its band, `find_shortfalls()` looks at the moves that
// would bring that broker nearer its band (partitions leaving a broker above it, arriving at one below it) and says
// what stands in the way, in this order: the broker may not receive (excluded, draining) or has nothing that may move
// (internal or excluded topics, partitions not measured yet or moving), or what would help is settling after a move
// (with how many samples the first still waits for); no other broker can take part; every move that
// would help is refused by an earlier goal (named, with how many moves it refused); the plan reached
// MaxActionsPerDetect; or moves exist that no goal refuses but none lowers both brokers' violation (the band is
// narrower than the partitions are large). A band capped by MaxUtilization of the broker's capacity says so too.
// Goals other than distribution goals report only that they are not met.
// The work is bounded: `max_partitions` partitions per broker and `max_peers` other brokers are looked at.
// Thread safety: pure function over its arguments (the goals must be prepared on `s`).
#pragma once

#include <charconv>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "moonmq/autobalancer/goals/distribution_goal.hpp"
#include "moonmq/autobalancer/goals/goal.hpp"
#include "moonmq/autobalancer/model/snapshot.hpp"

namespace moonmq::autobalancer {

/// One broker outside one goal's band, and why.
struct shortfall {
  std::string broker;
  std::string goal;
  double value = 0;  ///< what the broker holds of the goal's figure
  double lower = 0;  ///< its band
  double upper = 0;
  std::string why;
};

namespace detail {

inline constexpr std::size_t shortfall_max_partitions = 64;
inline constexpr std::size_t shortfall_max_peers = 64;

/// Up to shortfall_max_partitions partitions of `b` that may move, and whether `b` holds any at all.
inline std::vector<partition_index> movable_on(const snapshot& s, broker_index b) {
  std::vector<partition_index> out;
  for (partition_index p : s.partitions_on(b)) {
    if (out.size() >= shortfall_max_partitions) break;
    if (s.movable(p)) out.push_back(p);
  }
  return out;
}

/// Partitions of `b` that only settling keeps from moving and that carry some of `g`'s figure.
struct settling_count {
  std::size_t partitions = 0;
  std::uint16_t fewest_samples = 0;  ///< the least any of them still waits for
};
inline void count_settling(const snapshot& s, broker_index b, const distribution_goal& g, settling_count& c) {
  for (partition_index p : s.partitions_on(b)) {
    if (!s.only_settling(p) || g.partition_value(s, p) <= 0) continue;
    ++c.partitions;
    const std::uint16_t n = s.settling(p);
    if (c.fewest_samples == 0 || n < c.fewest_samples) c.fewest_samples = n;
  }
}

inline std::string settling_text(const settling_count& c) {
  return std::to_string(c.partitions) + (c.partitions == 1 ? " partition" : " partitions") +
         " that would help settling after a move: the first may move again once its new owner has reported " +
         std::to_string(c.fewest_samples) + " more load sample" + (c.fewest_samples == 1 ? "" : "s") +
         " (Autobalance.SettleSamples)";
}

inline std::string number_text(double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);  // as %g
  return std::string(buf, r.ptr);
}

}  // namespace detail

/// `goals` in priority order, prepared on `s` (the placement the plan reaches); `budget_spent` = the plan holds
/// MaxActionsPerDetect moves.
inline std::vector<shortfall> find_shortfalls(const snapshot& s, std::span<goal* const> goals, bool budget_spent) {
  std::vector<shortfall> out;
  for (std::size_t k = 0; k < goals.size(); ++k) {
    const auto* g = dynamic_cast<const distribution_goal*>(goals[k]);
    if (!g) {
      if (!goals[k]->satisfied(s))
        out.push_back({"", std::string(goals[k]->name()), 0, 0, 0, "not met (a custom goal: it gives no detail)"});
      continue;
    }
    if (!g->enabled()) continue;
    for (broker_index b = 0; b < s.broker_count(); ++b) {
      if (!s.active(b)) continue;
      const double value = g->broker_value(s, b);
      if (g->violation(b, value) <= 1e-9 * std::max(1.0, g->mean())) continue;
      const band& bb = g->band_of(b);
      shortfall f{s.broker_id(b), std::string(g->name()), value, bb.lower, bb.upper, {}};
      const bool over = value > bb.upper;
      std::string capped;
      const band unit = g->band_for(g->mean());
      if (std::isfinite(g->broker_ceiling(s, b)) && bb.upper + 1e-9 < unit.upper * g->weight_of(b))
        capped = "; its band is capped at MaxUtilization of its capacity";

      // The moves that would bring b nearer its band.
      std::vector<action> helpful;
      std::size_t peers = 0;
      bool any_partition = false, any_peer = false;
      detail::settling_count settling;  // what would help but waits after a move
      const std::vector<partition_index> own = over ? detail::movable_on(s, b) : std::vector<partition_index>{};
      if (over) detail::count_settling(s, b, *g, settling);
      for (broker_index x = 0; x < s.broker_count() && peers < detail::shortfall_max_peers; ++x) {
        if (x == b || !s.active(x)) continue;
        if (over) {
          if (!s.can_receive(x)) continue;  // not counted: the peers looked at are those that could take part
          ++peers;
          any_peer = true;
          for (partition_index p : own) {
            any_partition = true;
            if (g->partition_value(s, p) > 0) helpful.push_back(action::move(p, b, x));
          }
        } else {
          if (!s.can_receive(b)) break;
          ++peers;
          any_peer = true;
          detail::count_settling(s, x, *g, settling);
          for (partition_index p : detail::movable_on(s, x)) {
            any_partition = true;
            if (g->partition_value(s, p) > 0) helpful.push_back(action::move(p, x, b));
          }
        }
      }
      if (!over && !s.can_receive(b)) {
        f.why = "it may not receive (ExcludedBrokers, or draining)";
      } else if (!any_peer) {
        f.why = over ? "no other broker may receive (excluded, draining or unreachable)"
                     : "no other broker can give (unreachable)";
      } else if ((!any_partition || helpful.empty()) && settling.partitions > 0) {
        f.why = "it waits: " + detail::settling_text(settling);
        settling = {};
      } else if (!any_partition || helpful.empty()) {
        f.why = over ? "none of its partitions may move (internal or excluded topics, not yet measured, moving, or settling "
                       "after a move)"
                     : "no partition that would help may move (internal or excluded topics, not yet measured, moving, "
                       "or settling after a move)";
      } else {
        std::map<std::string, std::size_t> refused;  // by the earlier goal that refused first
        std::size_t open = 0;
        for (const action& a : helpful) {
          std::size_t j = 0;
          while (j < k && goals[j]->accepts(s, a)) ++j;
          if (j < k) {
            ++refused[std::string(goals[j]->name())];
            continue;
          }
          ++open;
        }
        if (open == 0) {
          std::string names;
          for (const auto& [name, n] : refused) names += (names.empty() ? "" : ", ") + name + " (" + std::to_string(n) + ")";
          f.why = "every move that would help is refused by an earlier goal: " + names;
        } else if (budget_spent) {
          f.why = "the plan reached MaxActionsPerDetect; the next pass continues";
        } else if (g->broker_violation(s, b) < g->params().min_change) {
          f.why = "it is out of band by less than MinChange (" + detail::number_text(g->params().min_change * 100) +
                  "% of its target), and no single move helps: the goal and the finisher leave a correction this "
                  "small, as not worth the data it would copy";
        } else {
          f.why = "no single move brings it nearer without taking another broker as far out (the band is narrow "
                  "for the partitions' sizes)";
        }
      }
      if (settling.partitions > 0 && any_peer && (over || s.can_receive(b)))
        f.why += "; also " + detail::settling_text(settling);
      f.why += capped;
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace moonmq::autobalancer
