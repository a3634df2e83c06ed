// moonmq-plan run as a process on good and bad input.
#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include "support/process.hpp"

using namespace moonmq::test;

namespace {

const std::string plan_bin = MOONMQ_PLAN_BIN;
const std::string skewed = std::string(MOONMQ_SOURCE_DIR) + "/examples/snapshots/skewed-cluster.json";

rapidjson::Document parse(const std::string& s) {
  rapidjson::Document d;
  d.Parse(s.c_str());
  REQUIRE_FALSE(d.HasParseError());
  return d;
}

}  // namespace

TEST_CASE("moonmq-plan prints a plan for the bundled skewed cluster", "[planner][process]") {
  auto r = run_process({plan_bin, skewed});
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  auto d = parse(r.out);
  CHECK(d["actions"].Size() > 0);
  CHECK(d["passes"].GetUint() == 1);
  CHECK(d["brokers"].Size() == 4);
}

TEST_CASE("moonmq-plan --converge reaches an empty plan and its output is stable", "[planner][process]") {
  auto a = run_process({plan_bin, skewed, "--converge"});
  auto b = run_process({plan_bin, skewed, "--converge"});
  REQUIRE(a.exit_code == 0);
  CHECK(a.out == b.out);  // byte for byte
  auto d = parse(a.out);
  CHECK(d["converged"].GetBool());
  CHECK(d["passes"].GetUint() >= 2);
  // Every broker's NW_IN ends inside mean +- 10%.
  double sum = 0;
  for (const auto& br : d["brokers"].GetArray()) sum += br["after"]["nw_in"].GetDouble();
  double mean = sum / d["brokers"].Size();
  for (const auto& br : d["brokers"].GetArray()) {
    CHECK(br["after"]["nw_in"].GetDouble() <= mean * 1.1 + 1);
    CHECK(br["after"]["nw_in"].GetDouble() >= mean * 0.9 - 1);
  }
}

TEST_CASE("moonmq-plan reads a snapshot from standard input and prints a table", "[planner][process]") {
  auto r = run_process({plan_bin, "-", "--text", "--converge"}, slurp(skewed));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("broker"));
  CHECK_THAT(r.out, Catch::Contains("MOVE"));
}

TEST_CASE("moonmq-plan exits 2 with one line naming the fault", "[planner][process]") {
  temp_dir dir;
  auto check = [&](const std::vector<std::string>& args, const std::string& input, const std::string& expected) {
    std::vector<std::string> argv = {plan_bin};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run_process(argv, input);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_THAT(r.err, Catch::Contains(expected));
  };
  check({"-"}, "{\"brokers\": [", "not valid JSON");
  check({"-"}, "", "not valid JSON");
  check({"-"}, R"({"brokers": [{"id": "b1"}], "partitions": [{"topic": "t", "partition": 0, "broker": "zz"}]})",
        "partitions[0].broker: unknown broker 'zz'");
  check({"-"}, R"({"brokers": [{"id": "b1"}], "partitions": [{"topic": "t", "partition": 0}]})",
        "partitions[0].broker: is required");
  check({"-"}, R"({"brokers": [{"id": "b1"}], "partitions": [{"topic": "t", "partition": 0, "broker": "b1",
                   "nw_out": -5}]})",
        "partitions[0].nw_out: must not be negative");
  check({"-"}, R"({"brokers": [], "partitions": [], "autobalance": {"Goals": [{"Name": "MISSING"}]}})",
        "autobalance.Goals[0]: unknown goal 'MISSING'");
  check({dir.path() + "/absent.json"}, "", "cannot read");
  check({}, "", "no snapshot given");
  check({"--bogus", "-"}, "", "unknown option --bogus");
  check({"-", "--max-passes", "0"}, "", "--max-passes");
}
