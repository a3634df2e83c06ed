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

TEST_CASE("bytes a broker holds beyond its partitions count in its disk load and never move", "[detector][held]") {
  snapshot s = brokers(2);
  for (int i = 0; i < 4; ++i) {
    add(s, "t", i, 0, 0, 0, 1000);  // b1: four partitions of 1000 MiB
    add(s, "u", i, 1, 0, 0, 1000);  // b2: four of the same
  }
  autobalance_config c;
  c.goals = {{"DISK", {}, {}, {}}};
  auto d = anomaly_detector::create(c);
  REQUIRE(d);
  CHECK(d->detect(s).empty());  // balanced as far as the partitions go
  // b1 still holds 4000 MiB of copies it no longer serves: its disk is 8000 MiB against b2's 4000.
  s.set_held_disk(0, 4000 * MiB);
  CHECK(s.broker_load(0, resource::disk) == 8000 * MiB);
  CHECK(s.held_disk(0) == 4000 * MiB);
  plan p = d->detect(s);
  REQUIRE_FALSE(p.empty());
  for (const auto& a : p.actions) CHECK(a.src == 0);  // partitions leave the fuller disk
  // Set again (the copies were reclaimed): the figure follows, it does not add up.
  s.set_held_disk(0, 0);
  CHECK(s.broker_load(0, resource::disk) == 4000 * MiB);
}
