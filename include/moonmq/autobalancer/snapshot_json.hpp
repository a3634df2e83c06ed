// The planner's file formats (README.md, "The planner"): a cluster snapshot as JSON in, a plan as JSON (or a text table) out.
// Implemented in lib/ with RapidJSON.
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "moonmq/autobalancer/config.hpp"
#include "moonmq/autobalancer/model/snapshot.hpp"
#include "moonmq/autobalancer/planner.hpp"
#include "moonmq/core/result.hpp"

namespace moonmq::autobalancer {

struct planner_input {
  snapshot snap;
  autobalance_config config;  ///< the snapshot's `autobalance` object, or the defaults
};

/// Reads a snapshot document. Faults (not JSON, a missing field, a duplicate broker or partition, a partition on an
/// unknown broker, a negative load) are errors naming the field, e.g. "partitions[3].nw_in: must not be negative".
result<planner_input> parse_planner_input(std::string_view json);

/// `snap` (and `config`, when given) as a planner input that parse_planner_input() reads back: what the live cluster
/// looked like to the balance loop, for `moonmq-plan` and `moonmqctl plan`.
std::string render_planner_input(const snapshot& snap, const autobalance_config* config = nullptr);

/// The plan as the JSON object README.md shows (plus `converged` and `satisfied`; with explain, each action's
/// `chosen_by`, `src_before`, `src_after`, `dest_before` and `dest_after`, and `out_of_band`).
std::string render_plan_json(const planner_report& report);

/// A table for people: each broker's load per resource before and after, then the actions (with explain: the steps
/// that chose each, its brokers before and after it, and why brokers are still out of band).
std::string render_plan_text(const planner_report& report);

}  // namespace moonmq::autobalancer
