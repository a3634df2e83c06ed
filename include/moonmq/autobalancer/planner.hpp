// The offline planner's engine: detect once, or detect-apply-detect until the plan is empty, and report each
// broker's load before and after. `moonmq-plan` is a thin command line over this; tests and custom-goal authors
// call it directly.
// Thread safety: pure functions over values; the detector passed in is used by one caller at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "moonmq/autobalancer/detector.hpp"
#include "moonmq/autobalancer/model/snapshot.hpp"

namespace moonmq::autobalancer {

/// An action with names instead of indexes: what people and the wire see.
struct described_action {
  action_type type = action_type::move;
  std::string topic;
  std::int32_t partition = 0;
  std::string src;
  std::string dest;
  std::string swap_topic;           ///< only for SWAP
  std::int32_t swap_partition = 0;  ///< only for SWAP
  std::string chosen_by;            ///< the detector's steps that chose it (plan::chosen_by)
};

inline described_action describe(const snapshot& s, const action& a) {
  described_action d{
      a.type, s.topic(a.partition), s.partition_number(a.partition), s.broker_id(a.src), s.broker_id(a.dest), {}, 0, {}};
  if (a.type == action_type::swap) {
    d.swap_topic = s.topic(a.swap_partition);
    d.swap_partition = s.partition_number(a.swap_partition);
  }
  return d;
}

/// One broker's totals.
struct broker_totals {
  load_vector load;
  std::uint32_t partitions = 0;
};

/// An action's two brokers, just before and just after it (with explain).
struct action_effect {
  broker_totals src_before, src_after, dest_before, dest_after;
};

struct broker_summary {
  std::string id;
  bool active = true;
  broker_totals before;
  broker_totals after;
};

struct planner_report {
  std::vector<described_action> actions;  ///< every pass's actions, in execution order
  std::size_t passes = 0;                 ///< detections run (the last one, when converged, found nothing to do)
  bool converged = false;                 ///< the last detection's plan was empty
  bool satisfied = false;                 ///< every goal met on the final placement
  std::vector<broker_summary> brokers;
  bool explained = false;               ///< run with explain: the two fields below are filled
  std::vector<action_effect> effects;   ///< parallel to actions
  std::vector<shortfall> out_of_band;   ///< on the final placement
};

inline broker_totals totals_of(const snapshot& s, broker_index b) {
  broker_totals t;
  for (std::size_t r = 0; r < resource_count; ++r) t.load.v[r] = s.broker_load(b, static_cast<resource>(r));
  t.partitions = s.broker_partition_count(b);
  return t;
}

/// Plans against `snap`: one detection, or with `converge` detections applied in turn until one finds nothing to
/// do or `max_passes` detections have run. With `explain`, each action's brokers before and after it, and why a
/// broker is still out of band at the end.
inline planner_report run_planner(snapshot snap, anomaly_detector& detector, bool converge, std::size_t max_passes,
                                  bool explain = false) {
  planner_report report;
  std::vector<broker_totals> before;
  for (broker_index b = 0; b < snap.broker_count(); ++b) before.push_back(totals_of(snap, b));
  const std::size_t limit = converge ? (max_passes ? max_passes : 1) : 1;
  bool full = false;  // the last plan held MaxActionsPerDetect moves
  while (report.passes < limit) {
    plan p = detector.detect(snap);
    ++report.passes;
    if (p.empty()) {
      report.converged = true;
      full = false;
      break;
    }
    for (std::size_t i = 0; i < p.actions.size(); ++i) {
      const action& a = p.actions[i];
      report.actions.push_back(describe(snap, a));
      report.actions.back().chosen_by = p.chosen_by[i];
      action_effect e{totals_of(snap, a.src), {}, totals_of(snap, a.dest), {}};
      snap.apply(a);
      e.src_after = totals_of(snap, a.src);
      e.dest_after = totals_of(snap, a.dest);
      if (explain) report.effects.push_back(e);
    }
    full = p.partition_moves() >= detector.config().max_actions_per_detect;
  }
  report.satisfied = detector.satisfied(snap);
  if (explain) {
    report.explained = true;
    report.out_of_band = detector.shortfalls(snap, full);
  }
  for (broker_index b = 0; b < snap.broker_count(); ++b)
    report.brokers.push_back({snap.broker_id(b), snap.active(b), before[b], totals_of(snap, b)});
  return report;
}

}  // namespace moonmq::autobalancer
