// A planner with one more goal: the built-ins plus TOPIC_SPREAD, registered by name so that a snapshot's
// `autobalance.Goals` can list it. Usage is moonmq-plan's:
//   topic-spread-plan SNAPSHOT.json [--converge] [--text]
#include "moonmq/autobalancer/planner_cli.hpp"
#include "topic_spread_goal.hpp"

int main(int argc, char** argv) {
  auto registry = moonmq::autobalancer::goal_registry::with_builtins();
  registry.add("TOPIC_SPREAD",
               [](const moonmq::autobalancer::goal_config&) { return std::make_unique<example::topic_spread_goal>(); });
  return moonmq::autobalancer::run_planner_cli(argc, argv, registry);
}
