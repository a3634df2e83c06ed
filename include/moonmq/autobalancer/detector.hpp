// The anomaly detector: the pure decision engine. Snapshot in, plan out.
//
// `detect()` runs the configured goals in priority order on a copy of the snapshot (each goal may only take actions
// every goal above it accepts; see goal.hpp), lets the economizer look for cheaper ways to the same result (a move no
// longer needed goes back, a smaller partition stands in for a larger one, only when every goal accepts it; see
// economizer.hpp), and when a goal is still unmet, the finisher tries pairs of actions where no single one helps (see
// finisher.hpp); goals, economizer and finisher run again on what they reached while that makes progress (up to
// goal_rounds times). Then it turns what they did into a plan: the moves of one partition are chained (A->B then B->C
// becomes A->C), moves that end where they started are dropped, and a SWAP stays a SWAP only when neither of its
// partitions moved otherwise. The goals stop once MaxActionsPerDetect partition moves are live
// (a SWAP counts two, since chaining may split it), so a plan never holds more actions than that. The same snapshot and
// configuration give the same plan, byte for byte: every choice is ordered by value with the index as tie-break, and no
// hash order is ever consulted.
//
// The detector owns no thread, clock or I/O; `cluster::balance_loop` is the backend that feeds and executes it.
// Thread safety: one detect() at a time per detector (goals keep per-run state).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "moonmq/autobalancer/action.hpp"
#include "moonmq/autobalancer/config.hpp"
#include "moonmq/autobalancer/economizer.hpp"
#include "moonmq/autobalancer/finisher.hpp"
#include "moonmq/autobalancer/goals/goal.hpp"
#include "moonmq/autobalancer/goals/goal_registry.hpp"
#include "moonmq/autobalancer/model/snapshot.hpp"
#include "moonmq/autobalancer/shortfalls.hpp"
#include "moonmq/core/result.hpp"

namespace moonmq::autobalancer {

/// What one detection decided: actions against the snapshot it was given, in execution order.
struct plan {
  std::vector<action> actions;
  /// Parallel to `actions`: the steps that chose each one, in order ("NW_IN", "DISK, economizer", "finisher for
  /// PARTITION_COUNT").
  std::vector<std::string> chosen_by;
  /// Partition moves the plan holds (a SWAP is two): what MaxActionsPerDetect caps.
  std::size_t partition_moves() const {
    std::size_t n = 0;
    for (const action& a : actions) n += a.type == action_type::swap ? 2 : 1;
    return n;
  }
  bool empty() const noexcept { return actions.empty(); }
};

/// Applies a plan's actions, in order, to the snapshot it was planned against.
inline void apply_plan(snapshot& s, const plan& p) {
  for (const action& a : p.actions) s.apply(a);
}

class anomaly_detector {
 public:
  /// Builds the goals listed in `config.goals` from `registry`. Errors name the entry ("Goals[2]: unknown goal ..").
  static result<anomaly_detector> create(const autobalance_config& config,
                                         const goal_registry& registry = goal_registry::with_builtins()) {
    anomaly_detector d;
    d.config_ = config;
    for (std::size_t i = 0; i < config.goals.size(); ++i) {
      auto g = registry.create(config.goals[i]);
      if (!g) return error{g.code(), "Goals[" + std::to_string(i) + "]: " + g.message()};
      d.goals_.push_back(std::move(g.value()));
    }
    return d;
  }

  const autobalance_config& config() const noexcept { return config_; }
  std::size_t goal_count() const noexcept { return goals_.size(); }
  const goal& goal_at(std::size_t i) const { return *goals_[i]; }

  /// Runs every goal on a copy of `snap` and returns the plan. `snap` is not changed.
  plan detect(const snapshot& snap) {
    snapshot work = snap;
    configure(work);
    work.record_arrivals();  // lets a goal's later runs catch up on what moved instead of ranking afresh

    std::vector<goal*> order;
    for (auto& g : goals_) order.push_back(g.get());
    for (goal* g : order) g->prepare(work);

    std::vector<action> raw;
    std::vector<std::string> origin;  // parallel to raw: which step took each action
    auto label = [&](const std::string& who) { origin.resize(raw.size(), who); };
    const std::size_t budget = config_.max_actions_per_detect;
    for (int round = 0; round < goal_rounds; ++round) {
      // Partition moves live so far (a SWAP is two, as it may be split when chained).
      std::size_t spent = moved_partitions(snap, work);
      const std::size_t mark = raw.size();
      for (std::size_t i = 0; i < order.size(); ++i) {
        if (spent >= budget) break;
        optimization ctx(work, std::span<goal* const>(order.data(), i), raw, budget - spent);
        order[i]->optimize(ctx);
        spent += ctx.spent();
        label(std::string(order[i]->name()));
      }
      // The economizer's own steps can complete what the goals left, which opens its repairs to a second run.
      auto economize = [&] {
        for (int run = 0; run < 2; ++run) {
          const double saved = economizer::run(snap, work, order, raw, budget);
          label("economizer");
          if (saved <= 0) break;
        }
      };
      economize();
      if (!all_met(work)) {
        std::size_t unmet = 0;
        while (unmet < order.size() && order[unmet]->satisfied(work)) ++unmet;
        const int pairs = finisher::run(snap, work, order, raw, budget);
        label("finisher for " + std::string(order[unmet]->name()));
        if (pairs > 0) economize();
      }
      if (raw.size() == mark || all_met(work)) break;
    }
    return chain(snap, work, raw, origin);
  }

  /// Why brokers are still out of band on `snap` (a placement a plan reached; see shortfalls.hpp). `budget_spent`:
  /// the plan that reached it held MaxActionsPerDetect moves.
  std::vector<shortfall> shortfalls(const snapshot& snap, bool budget_spent) {
    snapshot work = snap;
    configure(work);
    std::vector<goal*> order;
    for (auto& g : goals_) {
      g->prepare(work);
      order.push_back(g.get());
    }
    return find_shortfalls(work, order, budget_spent);
  }

  /// Goal runs per detection: when the goals (and the economizer after them) leave a goal unmet, they run again on
  /// what they reached, as a next detection would, so that one plan gets as far as the goals can.
  static constexpr int goal_rounds = 3;

  /// Whether every goal is met on `snap` (as the goals judge it; excluded brokers and topics applied).
  bool satisfied(const snapshot& snap) {
    snapshot work = snap;
    configure(work);
    for (auto& g : goals_) g->prepare(work);
    for (auto& g : goals_)
      if (!g->satisfied(work)) return false;
    return true;
  }

 private:
  anomaly_detector() = default;

  /// Applies the configuration to a working copy: excluded topics and brokers, MaxUtilization, and the configured
  /// capacity of each broker for the resources the snapshot states none for.
  void configure(snapshot& work) const {
    for (const auto& t : config_.excluded_topics) work.exclude_topic(t);
    for (const auto& b : config_.excluded_brokers) work.exclude_broker(b);
    work.set_max_utilization(config_.max_utilization);
    for (broker_index b = 0; b < work.broker_count(); ++b) {
      const broker_capacity c = config_.capacity_of(work.broker_id(b));
      const double values[resource_count] = {c.nw_in, c.nw_out, c.disk};
      for (std::size_t r = 0; r < resource_count; ++r)
        if (work.capacity(b, static_cast<resource>(r)) <= 0 && values[r] > 0)
          work.set_capacity(b, static_cast<resource>(r), values[r]);
    }
  }

  /// Whether every goal is met on `work` (already prepared, exclusions applied).
  bool all_met(const snapshot& work) const {
    for (const auto& g : goals_)
      if (!g->satisfied(work)) return false;
    return true;
  }

  /// Turns the goals' raw actions into the net plan against `before` (`after` is the placement they reached).
  static plan chain(const snapshot& before, const snapshot& after, const std::vector<action>& raw,
                    const std::vector<std::string>& origin) {
    // Each touched partition gets an entry: how often the raw actions moved it, the steps that did (each named once
    // per run of the same step), and whether the plan holds it yet. Entries are made for touched partitions only, so
    // that the per-partition index is the only thing sized by the cluster.
    constexpr std::uint32_t untouched = ~std::uint32_t{0};
    struct entry {
      std::uint32_t touches = 0;
      bool emitted = false;
      const std::string* last_step = nullptr;
      std::string steps;
    };
    std::vector<std::uint32_t> slot(before.partition_count(), untouched);
    std::vector<entry> entries;
    auto note = [&](partition_index p, const std::string& who) {
      if (slot[p] == untouched) {
        slot[p] = static_cast<std::uint32_t>(entries.size());
        entries.emplace_back();
      }
      entry& e = entries[slot[p]];
      ++e.touches;
      if (e.last_step && *e.last_step == who) return;
      if (e.last_step) e.steps += ", ";
      e.steps += who;
      e.last_step = &who;
    };
    for (std::size_t i = 0; i < raw.size(); ++i) {
      const action& a = raw[i];
      note(a.partition, origin[i]);
      if (a.type == action_type::swap) note(a.swap_partition, origin[i]);
    }
    plan out;
    auto emit_move = [&](partition_index p) {
      entry& e = entries[slot[p]];
      if (e.emitted) return;
      e.emitted = true;
      if (before.owner(p) == after.owner(p)) return;
      out.actions.push_back(action::move(p, before.owner(p), after.owner(p)));
      out.chosen_by.push_back(std::move(e.steps));  // each partition is emitted once
    };
    for (const action& a : raw) {
      if (a.type == action_type::swap && entries[slot[a.partition]].touches == 1 &&
          entries[slot[a.swap_partition]].touches == 1) {
        entries[slot[a.partition]].emitted = entries[slot[a.swap_partition]].emitted = true;
        out.actions.push_back(a);
        out.chosen_by.push_back(std::move(entries[slot[a.partition]].steps));
        continue;
      }
      emit_move(a.partition);
      if (a.type == action_type::swap) emit_move(a.swap_partition);
    }
    return out;
  }

  autobalance_config config_;
  std::vector<std::unique_ptr<goal>> goals_;
};

}  // namespace moonmq::autobalancer
