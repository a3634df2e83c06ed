#include "moonmq/autobalancer/planner_cli.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include "moonmq/autobalancer/detector.hpp"
#include "moonmq/autobalancer/planner.hpp"
#include "moonmq/autobalancer/snapshot_json.hpp"

namespace moonmq::autobalancer {

namespace {

constexpr const char* usage =
    "usage: moonmq-plan SNAPSHOT.json|- [--converge] [--max-passes N] [--text] [--explain]";

int fail(const std::string& message) {
  std::cerr << "moonmq-plan: " << message << "\n";
  return 2;
}

}  // namespace

int run_planner_cli(int argc, char** argv, const goal_registry& registry) {
  std::string path;
  bool converge = false, text = false, explain = false;
  std::size_t max_passes = 1000;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--converge") {
      converge = true;
    } else if (arg == "--text") {
      text = true;
    } else if (arg == "--explain") {
      explain = true;
    } else if (arg == "--max-passes") {
      if (i + 1 >= argc) return fail("--max-passes needs a number; " + std::string(usage));
      char* end = nullptr;
      unsigned long n = std::strtoul(argv[++i], &end, 10);
      if (!end || *end != '\0' || n == 0) return fail("--max-passes takes a whole number of at least 1");
      max_passes = n;
    } else if (arg == "-h" || arg == "--help") {
      std::cout << usage << "\n";
      return 0;
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      return fail("unknown option " + arg + "; " + usage);
    } else if (path.empty()) {
      path = arg;
    } else {
      return fail("more than one snapshot given; " + std::string(usage));
    }
  }
  if (path.empty()) return fail(std::string("no snapshot given; ") + usage);

  std::string content;
  if (path == "-") {
    content.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail("cannot read " + path);
    std::ostringstream ss;
    ss << in.rdbuf();
    content = ss.str();
  }

  auto input = parse_planner_input(content);
  if (!input) return fail(path + ": " + input.message());
  auto detector = anomaly_detector::create(input->config, registry);
  if (!detector) return fail(path + ": autobalance." + detector.message());

  planner_report report = run_planner(std::move(input->snap), *detector, converge, max_passes, explain);
  std::cout << (text ? render_plan_text(report) : render_plan_json(report) + "\n");
  std::cout.flush();
  return std::cout ? 0 : 1;
}

}  // namespace moonmq::autobalancer
