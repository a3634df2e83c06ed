// The whole-cluster simulation (cluster_sim.hpp) under the history checker: thousands of seeds, with local tables
// and the controller fence and with the Raft-backed table; a seed run twice gives the same history, step for step.
//
//   CLUSTER_SIM_SEEDS=N     seeds per mode (default 1000: 2,000 runs in all)
//   CLUSTER_SIM_FIRST=K     the first seed (default 1), for a soak in slices
//   CLUSTER_SIM_SEED=K      one seed only, in both modes, printing its log and history
//   CLUSTER_SIM_STEPS=N     steps per run (default 60)
//   CLUSTER_SIM_SESSION_MS=N  group members' session (default 3000)
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

#include "checker/history.hpp"
#include "sim/cluster_sim.hpp"

using namespace moonmq;

namespace {

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}

/// Runs one seed and fails the test with its log when the checker or the simulation finds anything.
void run_and_check(std::uint64_t seed, bool replicated, std::map<std::string, int>& faults, std::size_t& acknowledged,
                   bool show) {
  test::cluster_sim_run run =
      test::run_cluster_sim({seed, replicated, static_cast<int>(env_or("CLUSTER_SIM_STEPS", 60)),
                             test::sim_sabotage::none,
                             static_cast<std::int64_t>(env_or("CLUSTER_SIM_SESSION_MS", 3000))});
  auto report = check::check_history(run.history);
  REQUIRE(report);
  acknowledged += report->acknowledged;
  for (const auto& [kind, n] : run.faults) faults[kind] += n;
  if (show)
    std::printf("seed %llu (%s):\n%s%s\n", static_cast<unsigned long long>(seed), replicated ? "raft" : "local",
                run.log.c_str(), run.history.c_str());
  if (!report->anomalies.empty() || !run.violations.empty()) {
    std::string violations;
    for (const auto& v : run.violations) violations += v + "\n";
    INFO("seed " << seed << (replicated ? " (raft)" : " (local)") << ":\n" << run.log << violations);
    FAIL_CHECK(report->to_json());
  }
}

}  // namespace

TEST_CASE(
    "cluster simulation: seeded runs of producers, transactions, group members, moves and the balance loop "
    "under lost, held and cut messages and restarts leave nothing for the checker (CLUSTER_SIM_SEEDS)",
    "[sim][integration]") {
  const bool replicated = GENERATE(false, true);
  INFO((replicated ? "Raft-backed ownership" : "local tables and the fence"));
  std::map<std::string, int> faults;
  std::size_t acknowledged = 0;
  if (const char* one = std::getenv("CLUSTER_SIM_SEED")) {
    run_and_check(std::strtoull(one, nullptr, 10), replicated, faults, acknowledged, true);
    return;
  }
  const std::uint64_t first = env_or("CLUSTER_SIM_FIRST", 1), seeds = env_or("CLUSTER_SIM_SEEDS", 1000);
  for (std::uint64_t seed = first; seed < first + seeds; ++seed)
    run_and_check(seed, replicated, faults, acknowledged, false);
  std::string summary;
  for (const auto& [kind, n] : faults) summary += " " + kind + "=" + std::to_string(n);
  std::printf("cluster simulation (%s): seeds %llu-%llu, %zu acknowledged records, faults:%s\n",
              replicated ? "raft" : "local", static_cast<unsigned long long>(first),
              static_cast<unsigned long long>(first + seeds - 1), acknowledged, summary.c_str());
  CHECK(acknowledged > 0);
  CHECK(faults["broker_restart"] > 0);
  CHECK(faults["held_request"] > 0);  // requests held and delivered late, not only steps that would hold
}

TEST_CASE("cluster simulation: a seed replays exactly, the same history and the same steps", "[sim][integration]") {
  const bool replicated = GENERATE(false, true);
  for (std::uint64_t seed : {3u, 17u, 101u, 4242u}) {
    auto first = test::run_cluster_sim({seed, replicated});
    auto again = test::run_cluster_sim({seed, replicated});
    INFO("seed " << seed << (replicated ? " (raft)" : " (local)"));
    CHECK(first.log == again.log);
    CHECK(first.history == again.history);
    CHECK(first.faults == again.faults);
    // Different seeds do differ: the seed is the schedule.
    CHECK(first.log != test::run_cluster_sim({seed + 1, replicated}).log);
  }
}

TEST_CASE(
    "cluster simulation: the checker sees a record left out of the final reads and an aborted record read as "
    "committed",
    "[sim][integration]") {
  std::map<std::string, int> found;
  for (std::uint64_t seed = 1; seed <= 40; ++seed)
    for (auto sabotage : {test::sim_sabotage::drop_acknowledged, test::sim_sabotage::read_aborted}) {
      auto run = test::run_cluster_sim({seed, seed % 2 == 0, 60, sabotage});
      auto report = check::check_history(run.history);
      REQUIRE(report);
      for (const auto& [type, n] : report->counts()) found[type] += static_cast<int>(n);
    }
  std::string seen;
  for (const auto& [type, n] : found) seen += type + "=" + std::to_string(n) + " ";
  INFO(seen);
  CHECK(found["aborted_read"] > 0);
  CHECK(found["unseen_after_drain"] + found["lost_write"] > 0);
}

TEST_CASE("cluster simulation: the checker sees a committed offset go back when the offsets front end skips the fence",
          "[sim][integration]") {
  // Long runs, so that members read, lose partitions to each other and commit late. The same schedules with the
  // fence in place leave nothing for the checker.
  std::map<std::string, int> found, clean;
  // A session shorter than most stalls (a stalled member is expired and its partition goes to another member, who
  // reads on and commits), long enough that members keep partitions between turns.
  const auto session = static_cast<std::int64_t>(env_or("CLUSTER_SIM_SESSION_MS", 10'000));
  // The late commit the fence stops is rare (a few schedules in a hundred): seeds are tried until one shows it, at
  // least 100 of them (each one's fenced run must stay clean) and at most 600.
  std::uint64_t seed = 1;
  for (; seed <= 600 && (seed <= 100 || found["offset_backwards"] == 0); ++seed) {
    auto broken = test::run_cluster_sim({seed, seed % 2 == 0, 1000, test::sim_sabotage::unfenced_commit, session});
    auto report = check::check_history(broken.history);
    REQUIRE(report);
    for (const auto& [type, n] : report->counts()) found[type] += static_cast<int>(n);
    auto fenced = test::run_cluster_sim({seed, seed % 2 == 0, 1000, test::sim_sabotage::none, session});
    auto fine = check::check_history(fenced.history);
    REQUIRE(fine);
    for (const auto& [type, n] : fine->counts()) clean[type] += static_cast<int>(n);
    for (const auto& v : fenced.violations) clean["violation: " + v] += 1;
  }
  auto list = [](const std::map<std::string, int>& m) {
    std::string out;
    for (const auto& [type, n] : m) out += type + "=" + std::to_string(n) + " ";
    return out;
  };
  INFO("seeds 1 to " << seed - 1 << ": without the fence: " << list(found) << "; with it: " << list(clean));
  CHECK(found["offset_backwards"] > 0);
  CHECK(clean.empty());
}
