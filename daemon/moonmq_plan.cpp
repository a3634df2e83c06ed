// moonmq-plan: the offline planner over the built-in goals. See moonmq/autobalancer/planner_cli.hpp.
#include "moonmq/autobalancer/planner_cli.hpp"

int main(int argc, char** argv) {
  return moonmq::autobalancer::run_planner_cli(argc, argv, moonmq::autobalancer::goal_registry::with_builtins());
}
