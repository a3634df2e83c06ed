// Randomized, deterministic simulations of Raft clusters (see raft_sim.hpp). CI runs 2,000 seeds; the soak is (the
// variable does not start with MOONMQ_: moonmqd, started by other tests, reads those as configuration keys)
//   RAFT_SIM_SEEDS=100000 build/test/moonmq_tests "[raft-sim]"
#include <catch2/catch.hpp>

#include <cstdlib>

#include "sim/raft_sim.hpp"

using namespace moonmq;
using namespace moonmq::test;

namespace {

std::uint64_t seed_count() {
  if (const char* s = std::getenv("RAFT_SIM_SEEDS")) return std::strtoull(s, nullptr, 10);
  return 2000;
}

/// Chaos, then calm: safety after every tick, and a leader all nodes follow within a bounded time of the heal.
void run_seed(std::uint64_t seed, int nodes) {
  sim_options o;
  o.nodes = nodes;
  raft_sim sim(seed, o);
  for (int t = 0; t < 400; ++t)
    if (auto v = sim.chaos_tick()) FAIL(*v);
  // After the heal: PreVote rounds and a vote each take a few ticks; allow ten maximum election timeouts.
  const int bound = 10 * o.election_ticks_max;
  int t = 0;
  for (; t < bound && !sim.agreed_leader(); ++t)
    if (auto v = sim.calm_tick()) FAIL(*v);
  INFO("seed " << seed << ", " << nodes << " nodes");
  REQUIRE(sim.agreed_leader());
  // And the healed cluster commits new entries.
  const auto before = sim.committed_entries();
  for (int k = 0; k < 5 * o.election_ticks_max; ++k)
    if (auto v = sim.calm_tick()) FAIL(*v);
  REQUIRE(sim.committed_entries() > before);
}

}  // namespace

TEST_CASE("raft simulation: 3 and 5 nodes under loss, duplication, delay, partitions and crashes stay safe and live",
          "[raft][raft-sim]") {
  const std::uint64_t seeds = seed_count();
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) run_seed(seed, seed % 2 ? 3 : 5);
}

TEST_CASE("raft simulation: a run is reproducible from its seed", "[raft][raft-sim]") {
  auto trace = [](std::uint64_t seed) {
    raft_sim sim(seed, sim_options{});
    std::string out;
    for (int t = 0; t < 300; ++t) {
      REQUIRE_FALSE(sim.chaos_tick());
      for (const char* id : {"n1", "n2", "n3"})
        out += !sim.up(id) ? std::string("down,") : std::to_string(sim.node(id).term()) + raft::role_name(sim.node(id).current_role()) +
               std::to_string(sim.node(id).commit_index()) + ",";
    }
    return out;
  };
  CHECK(trace(42) == trace(42));
  CHECK(trace(42) != trace(43));
}
