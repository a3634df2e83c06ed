#include <catch2/catch.hpp>

#include "support/snapshots.hpp"

using namespace moonmq::test;

TEST_CASE("moves of one partition are chained into one", "[detector][chain]") {
  // NW_IN moves heavy partitions off b1 to b3 (the lightest), then PARTITION_COUNT ... we build the chain directly:
  // a goal that moves p from b1 to b2 and a later goal that moves it on to b3.
  struct scripted_goal : goal {
    std::string n;
    action a;
    scripted_goal(std::string name, action act) : n(std::move(name)), a(act) {}
    std::string_view name() const override { return n; }
    void optimize(optimization& ctx) override { REQUIRE(ctx.try_apply(a)); }
  };
  snapshot s = brokers(3);
  auto p = add(s, "t", 0, 0, 1);
  goal_registry r;
  r.add("FIRST", [](const goal_config&) { return std::make_unique<scripted_goal>("FIRST", action::move(0, 0, 1)); });
  r.add("SECOND", [](const goal_config&) { return std::make_unique<scripted_goal>("SECOND", action::move(0, 1, 2)); });
  autobalance_config c;
  c.goals = {{"FIRST", {}, {}, {}}, {"SECOND", {}, {}, {}}};
  auto d = anomaly_detector::create(c, r);
  REQUIRE(d);
  plan out = d->detect(s);
  REQUIRE(out.actions.size() == 1);
  CHECK(out.actions[0] == action::move(p, 0, 2));

  SECTION("a chain that returns home is dropped") {
    r.add("SECOND",
          [](const goal_config&) { return std::make_unique<scripted_goal>("SECOND", action::move(0, 1, 0)); });
    auto back = anomaly_detector::create(c, r);
    CHECK(back->detect(s).empty());
  }
}

TEST_CASE("a swap whose partitions move again becomes plain moves", "[detector][chain]") {
  struct scripted_goal : goal {
    std::vector<action> acts;
    explicit scripted_goal(std::vector<action> a) : acts(std::move(a)) {}
    std::string_view name() const override { return "SCRIPT"; }
    void optimize(optimization& ctx) override {
      for (auto& a : acts) REQUIRE(ctx.try_apply(a));
    }
  };
  snapshot s = brokers(3);
  auto p = add(s, "t", 0, 0, 1);
  auto q = add(s, "t", 1, 1, 1);
  goal_registry r;
  r.add("SCRIPT", [&](const goal_config&) {
    return std::make_unique<scripted_goal>(std::vector<action>{action::swap(p, 0, 1, q), action::move(q, 0, 2)});
  });
  autobalance_config c;
  c.goals = {{"SCRIPT", {}, {}, {}}};
  plan out = anomaly_detector::create(c, r)->detect(s);
  REQUIRE(out.actions.size() == 2);
  CHECK(out.actions[0] == action::move(p, 0, 1));
  CHECK(out.actions[1] == action::move(q, 1, 2));
}

TEST_CASE("detect leaves the caller's snapshot untouched", "[detector]") {
  snapshot s = brokers(2);
  for (int i = 0; i < 10; ++i) add(s, "t", i, 0, 10);
  auto d = make_detector(only_goals({"NW_IN"}));
  plan p = d.detect(s);
  REQUIRE_FALSE(p.empty());
  CHECK(s.broker_partition_count(0) == 10);
  CHECK(s.broker_load(1, resource::nw_in) == 0.0);
}

TEST_CASE("the same input gives the same plan", "[detector][determinism]") {
  std::mt19937 rng(7);
  snapshot s = brokers(12);
  std::uniform_real_distribution<double> load(0.1, 50);
  for (int i = 0; i < 600; ++i)
    add(s, "t" + std::to_string(i % 13), i, static_cast<broker_index>(i % 3), load(rng), load(rng), load(rng) * 100);
  autobalance_config c;
  c.max_actions_per_detect = 1000;
  auto d1 = make_detector(c);
  auto d2 = make_detector(c);
  plan a = d1.detect(s);
  plan b = d2.detect(s);
  plan again = d1.detect(s);  // a detector reused gives the same answer too
  REQUIRE_FALSE(a.empty());
  CHECK(a.actions == b.actions);
  CHECK(a.actions == again.actions);
}

TEST_CASE("applying a plan and detecting again gives an empty plan", "[detector][stability]") {
  snapshot s = brokers(5);
  for (int i = 0; i < 50; ++i) add(s, "t", i, 0, 4, 8, 100);
  auto d = make_detector(autobalance_config{});
  plan p = d.detect(s);
  REQUIRE_FALSE(p.empty());
  apply_plan(s, p);
  CHECK(d.satisfied(s));
  CHECK(d.detect(s).empty());
}

TEST_CASE("an unknown goal name is an error naming the entry", "[detector][config]") {
  autobalance_config c;
  c.goals = {{"NW_IN", {}, {}, {}}, {"NOPE", {}, {}, {}}};
  auto d = anomaly_detector::create(c);
  REQUIRE_FALSE(d);
  CHECK(d.message() == "Goals[1]: unknown goal 'NOPE'");
}

TEST_CASE("an out-of-range goal parameter is refused", "[detector][config]") {
  autobalance_config c;
  c.goals = {{"DISK", 1.5, {}, {}}};
  auto d = anomaly_detector::create(c);
  REQUIRE_FALSE(d);
  CHECK_THAT(d.message(), Catch::Contains("Deviation"));
}

TEST_CASE("goals run in the configured priority order", "[detector][priority]") {
  // Balanced partition counts, unbalanced NW_IN. With PARTITION_COUNT first, NW_IN may only act through moves that
  // keep counts in band; with NW_IN first it moves freely.
  snapshot s = brokers(2);
  for (int i = 0; i < 4; ++i) add(s, "t", i, 0, 10);
  for (int i = 4; i < 8; ++i) add(s, "t", i, 1, 1);
  auto count_first = make_detector(only_goals({"PARTITION_COUNT", "NW_IN"}, 0.0));
  auto in_first = make_detector(only_goals({"NW_IN", "PARTITION_COUNT"}, 0.0));
  plan a = count_first.detect(s);
  plan b = in_first.detect(s);
  // Counts 4/4 with a zero-width band: moving any single partition breaks PARTITION_COUNT, so only swaps happen.
  for (const auto& act : a.actions) CHECK(act.type == action_type::swap);
  CHECK_FALSE(a.empty());
  CHECK_FALSE(b.empty());
}

TEST_CASE("bytes a broker holds beyond its partitions are not load: they take room under its disk capacity",
          "[detector][held][capacity]") {
  snapshot s = brokers(3);
  for (int i = 0; i < 4; ++i) add(s, "t", i, 0, 0, 0, 1000);  // b1: four partitions of 1000 MiB
  for (int i = 0; i < 2; ++i) add(s, "u", i, 1, 0, 0, 1000);  // b2: two
  for (int i = 0; i < 2; ++i) add(s, "v", i, 2, 0, 0, 1000);  // b3: two
  autobalance_config c;
  c.goals = {{"DISK", {}, {}, {}}};
  auto d = anomaly_detector::create(c);
  REQUIRE(d);
  s.set_held_disk(1, 3000 * MiB);  // b2 keeps 3000 MiB of copies it no longer serves
  CHECK(s.broker_load(1, resource::disk) == 2000 * MiB);

  SECTION("without capacities they change nothing: the plan is the one without them") {
    snapshot plain = s;
    plain.set_held_disk(1, 0);
    CHECK(d->detect(s).actions == d->detect(plain).actions);
  }
  SECTION("with capacities, a broker whose held bytes fill its room under the ceiling receives nothing") {
    for (broker_index b = 0; b < 3; ++b) s.set_capacity(b, resource::disk, 6000 * MiB);
    // Ceiling 0.8 x 6000 = 4800 MiB; b2 serves 2000 and holds 3000: no room. b3 has room for 2800.
    plan p = d->detect(s);
    REQUIRE_FALSE(p.empty());
    for (const auto& a : p.actions) {
      CHECK(a.src == 0);
      CHECK(a.dest == 2);
    }
  }
}

TEST_CASE("capacity-aware goals balance utilisation: a broker twice as large takes twice the load",
          "[detector][capacity]") {
  snapshot s = brokers(3);
  for (int i = 0; i < 40; ++i) add(s, "t", i, 0, 1, 2, 100);
  for (broker_index b = 0; b < 3; ++b) {
    const double scale = b == 2 ? 2.0 : 1.0;
    s.set_capacity(b, resource::nw_in, 40 * MiB * scale);
    s.set_capacity(b, resource::nw_out, 80 * MiB * scale);
    s.set_capacity(b, resource::disk, 4000 * MiB * scale);
  }
  autobalance_config c = only_goals({"NW_IN", "NW_OUT", "DISK"});
  auto d = make_detector(c);
  snapshot after = s;
  apply_plan(after, d.detect(s));
  CHECK(d.satisfied(after));
  // Utilisation 40 / (40 + 40 + 80) = 25% each, within 10%: b3 holds about twice what b1 and b2 do.
  for (broker_index b = 0; b < 3; ++b) {
    const double util = after.broker_load(b, resource::nw_in) / after.capacity(b, resource::nw_in);
    CHECK(util == Approx(0.25).epsilon(0.1));
  }
  CHECK(after.broker_partition_count(2) >= 18);

  SECTION("without capacities the same cluster is balanced on load") {
    snapshot plain = brokers(3);
    for (int i = 0; i < 40; ++i) add(plain, "t", i, 0, 1, 2, 100);
    apply_plan(plain, d.detect(plain));
    CHECK(plain.broker_partition_count(2) <= 15);
  }
  SECTION("a capacity stated for only some brokers is not used") {
    snapshot partial = brokers(3);
    for (int i = 0; i < 40; ++i) add(partial, "t", i, 0, 1, 2, 100);
    partial.set_capacity(2, resource::nw_in, 80 * MiB);
    CHECK_FALSE(partial.capacity_known(resource::nw_in));
  }
  SECTION("the configured capacities apply where the snapshot states none") {
    snapshot bare = brokers(3);
    for (int i = 0; i < 40; ++i) add(bare, "t", i, 0, 1, 2, 100);
    autobalance_config cc = c;
    cc.default_capacity = {40 * MiB, 80 * MiB, 4000 * MiB};
    cc.capacity["b3"] = {80 * MiB, 160 * MiB, 8000 * MiB};
    auto dc = make_detector(cc);
    apply_plan(bare, dc.detect(bare));
    CHECK(bare.broker_partition_count(2) >= 18);
  }
}

TEST_CASE("no broker is planned above MaxUtilization of its capacity", "[detector][capacity]") {
  // 26 MiB/s over capacities 20, 20 and 100: the mean utilisation is 18.6%, so the band reaches 20.4%; with
  // MaxUtilization 0.2 no broker may be planned above 20% (4, 4 and 20 MiB/s).
  snapshot s = brokers(3);
  for (int i = 0; i < 26; ++i) add(s, "t", i, 2, 1);
  s.set_capacity(0, resource::nw_in, 20 * MiB);
  s.set_capacity(1, resource::nw_in, 20 * MiB);
  s.set_capacity(2, resource::nw_in, 100 * MiB);
  autobalance_config c = only_goals({"NW_IN"});
  c.max_utilization = 0.2;
  auto d = make_detector(c);
  snapshot after = s;
  apply_plan(after, d.detect(s));
  CHECK(d.satisfied(after));
  CHECK(after.broker_load(2, resource::nw_in) <= 20 * MiB + 1);
  for (broker_index b = 0; b < 2; ++b) CHECK(after.broker_load(b, resource::nw_in) <= 4 * MiB + 1);
}
