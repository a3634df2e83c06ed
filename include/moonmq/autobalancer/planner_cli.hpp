// The `moonmq-plan` command line, as a function, so that a program that registers its own goals gets the same
// planner: `int main(int argc, char** argv) { auto r = goal_registry::with_builtins(); r.add("MY_GOAL", ...);
// return run_planner_cli(argc, argv, r); }`.
//
//   moonmq-plan SNAPSHOT.json|- [--converge] [--max-passes N] [--text] [--explain]
//
// Exit status: 0 with the plan on stdout; 2 with one line on stderr naming what is wrong (usage, unreadable file,
// bad snapshot, unknown goal).
#pragma once

#include "moonmq/autobalancer/goals/goal_registry.hpp"

namespace moonmq::autobalancer {

int run_planner_cli(int argc, char** argv, const goal_registry& registry);

}  // namespace moonmq::autobalancer
