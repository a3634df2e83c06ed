// Randomized properties of the engine over thousands of generated clusters (seeded: every failure reproduces).
#include <catch2/catch.hpp>

#include <optional>
#include <random>

#include "support/snapshots.hpp"

using namespace moonmq::test;

namespace {

struct generated {
  snapshot snap;
  autobalance_config config;
};

/// A random cluster: skewed placement, mixed loads, some inactive brokers, internal and excluded topics.
generated random_cluster(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto real = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  generated g;
  int nb = pick(2, 10);
  for (int b = 0; b < nb; ++b) g.snap.add_broker("b" + std::to_string(b), real(0, 1) > 0.1);
  int np = pick(0, 150);
  int hot = pick(0, nb - 1);
  for (int p = 0; p < np; ++p) {
    broker_index owner = real(0, 1) < 0.5 ? static_cast<broker_index>(hot) : static_cast<broker_index>(pick(0, nb - 1));
    std::string topic = real(0, 1) < 0.05 ? "__internal" : "t" + std::to_string(pick(0, 5));
    double in = std::pow(real(0, 1), 3) * 20 * MiB;
    g.snap.add_partition(topic, p, owner, load_vector{{in, in * real(0, 3), in * real(100, 1000)}}, real(0, 1) > 0.03);
  }
  g.config.max_actions_per_detect = static_cast<std::uint32_t>(pick(1, 80));
  if (real(0, 1) < 0.3) g.config.excluded_topics = {"t1"};
  if (real(0, 1) < 0.3) g.config.excluded_brokers = {"b0"};
  if (real(0, 1) < 0.5) {
    for (auto& goal : g.config.goals) goal.detect_threshold = 0.0;
  }
  return g;
}

}  // namespace

TEST_CASE("random clusters: plans are valid, conserve load and converge without oscillating", "[property]") {
  constexpr int clusters = 2000;
  for (std::uint64_t seed = 1; seed <= clusters; ++seed) {
    INFO("seed " << seed);
    generated g = random_cluster(seed);
    auto detector = make_detector(g.config);
    snapshot work = g.snap;
    std::vector<double> before_totals;
    for (std::size_t r = 0; r < resource_count; ++r) before_totals.push_back(total(work, resource(r)));

    bool converged = false;
    for (int pass = 0; pass < 200 && !converged; ++pass) {
      plan p = detector.detect(work);
      REQUIRE(p.actions.size() <= g.config.max_actions_per_detect);
      if (p.empty()) {
        converged = true;
        break;
      }
      // Every action is valid where it is applied, under the configured exclusions.
      snapshot checked = work;
      for (const auto& t : g.config.excluded_topics) checked.exclude_topic(t);
      for (const auto& b : g.config.excluded_brokers) checked.exclude_broker(b);
      for (const auto& a : p.actions) {
        REQUIRE(checked.valid(a));
        REQUIRE(checked.topic(a.partition).rfind("__", 0) != 0);
        checked.apply(a);
        work.apply(a);
      }
    }
    REQUIRE(converged);  // no oscillation: a fixed point is reached
    CHECK(detector.detect(work).empty());

    // Load is conserved and the incremental totals match a recount.
    auto recount = recomputed_totals(work);
    for (std::size_t r = 0; r < resource_count; ++r) {
      REQUIRE(total(work, resource(r)) == Approx(before_totals[r]).margin(1e-3));
      for (broker_index b = 0; b < work.broker_count(); ++b)
        REQUIRE(work.broker_load(b, resource(r)) == Approx(recount[b].v[r]).margin(1e-3));
    }
    // Inactive brokers neither gained nor lost anything.
    for (broker_index b = 0; b < work.broker_count(); ++b)
      if (!work.active(b)) REQUIRE(work.broker_partition_count(b) == g.snap.broker_partition_count(b));
  }
}

TEST_CASE("random clusters with uniform partitions end with every broker in band", "[property]") {
  // With equal partitions a balanced placement always exists; each partition is at least 5% of a broker's mean,
  // so the MinChange rule never hides a needed correction.
  constexpr int clusters = 1000;
  for (std::uint64_t seed = 1; seed <= clusters; ++seed) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed * 7919);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    int nb = pick(2, 12);
    int per_broker = pick(1, 20);
    snapshot s = brokers(nb);
    int hot = pick(0, nb - 1);
    for (int p = 0; p < nb * per_broker; ++p) {
      broker_index owner = pick(0, 1) ? static_cast<broker_index>(hot) : static_cast<broker_index>(pick(0, nb - 1));
      add(s, "t" + std::to_string(p % 4), p, owner, 2, 4, 1000);
    }
    autobalance_config c;  // all four goals, default deviation, thresholds, MinChange
    c.max_actions_per_detect = static_cast<std::uint32_t>(pick(1, 50));
    auto d = make_detector(c);
    for (int pass = 0; pass < 500; ++pass) {
      plan p = d.detect(s);
      if (p.empty()) break;
      apply_plan(s, p);
    }
    REQUIRE(d.detect(s).empty());
    CHECK(d.satisfied(s));
  }
}

TEST_CASE("random clusters with fine-grained uniform partitions reach the band when MinChange is 0", "[property]") {
  constexpr int clusters = 300;
  for (std::uint64_t seed = 1; seed <= clusters; ++seed) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed * 104729);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    int nb = pick(2, 8);
    snapshot s = brokers(nb);
    int np = nb * pick(20, 60);
    for (int p = 0; p < np; ++p) add(s, "t", p, static_cast<broker_index>(pick(0, nb / 2)), 1.5, 3, 500);
    auto c = only_goals({"NW_IN", "NW_OUT", "DISK", "PARTITION_COUNT"}, 0.1, 0.0, 40);
    auto d = make_detector(c);
    for (int pass = 0; pass < 500; ++pass) {
      plan p = d.detect(s);
      if (p.empty()) break;
      apply_plan(s, p);
    }
    REQUIRE(d.detect(s).empty());
    CHECK(d.satisfied(s));
  }
}

TEST_CASE("remembered refusals of the goals above agree with asking them, and are forgotten when anything moves",
          "[property][refusals]") {
  // The three resource goals as the goals above a fourth; with capacities on some seeds (weighted bands, ceilings).
  std::size_t remembered = 0, asked = 0;
  for (std::uint64_t seed = 1; seed <= 400; ++seed) {
    INFO("seed " << seed);
    generated g = random_cluster(seed);
    snapshot& s = g.snap;
    if (s.broker_count() < 2 || s.partition_count() == 0) continue;
    std::mt19937_64 rng(seed * 7919);
    auto real = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    if (seed % 2 == 0) {
      s.set_max_utilization(real(0.5, 1.0));
      for (broker_index b = 0; b < s.broker_count(); ++b)
        for (std::size_t r = 0; r < resource_count; ++r)
          s.set_capacity(b, static_cast<resource>(r), real(0.5, 4) * (total(s, static_cast<resource>(r)) + 1));
    }
    distribution_params params{real(0.02, 0.3), 0.0, 0.0};
    resource_distribution_goal in("NW_IN", resource::nw_in, params), out("NW_OUT", resource::nw_out, params),
        disk("DISK", resource::disk, params);
    std::vector<goal*> above = {&in, &out, &disk};
    for (goal* a : above) a->prepare(s);
    std::vector<action> actions;
    optimization ctx(s, above, actions, 1'000'000);
    move_refusals refusals(ctx);
    std::optional<action> last_refused;
    for (int step = 0; step < 400; ++step) {
      const auto p = static_cast<partition_index>(rng() % s.partition_count());
      const auto dest = static_cast<broker_index>(rng() % s.broker_count());
      const broker_index src = s.owner(p);
      if (dest == src) continue;
      const action a = action::move(p, src, dest);
      refusals.consider(p);
      const bool acceptable = ctx.acceptable(a);
      if (refusals.known_refused(src, dest)) {
        ++remembered;
        REQUIRE_FALSE(acceptable);
        continue;
      }
      ++asked;
      if (!acceptable) {
        refusals.note_refused(a);
        // What was just refused is now on record (the move was valid, and a resource goal refused it).
        if (s.valid(a)) REQUIRE(refusals.known_refused(src, dest));
        last_refused = a;
      } else if (last_refused && real(0, 1) < 0.05) {
        REQUIRE(ctx.try_apply(a));  // the placement changed: every refusal on record is forgotten
        refusals.consider(last_refused->partition);
        CHECK_FALSE(refusals.known_refused(last_refused->src, last_refused->dest));
        last_refused.reset();
      }
    }
  }
  // The check above is not vacuous: refusals were answered from the record, and others by asking.
  CHECK(remembered > 1000);
  CHECK(asked > 1000);
}
