// The planner's explain: which step chose each action, the brokers before and after it, and why brokers stay out
// of band.
#include <catch2/catch.hpp>

#include "moonmq/autobalancer/planner.hpp"
#include "moonmq/autobalancer/snapshot_json.hpp"
#include "support/snapshots.hpp"

using namespace moonmq::test;

TEST_CASE("explain: each action names the goal that chose it, with its brokers before and after", "[explain]") {
  snapshot s = brokers(2);
  for (int i = 0; i < 10; ++i) add(s, "t", i, 0, 1);
  auto d = make_detector(only_goals({"NW_IN"}));
  planner_report r = run_planner(s, d, true, 10, true);
  REQUIRE(r.explained);
  REQUIRE_FALSE(r.actions.empty());
  REQUIRE(r.effects.size() == r.actions.size());
  for (std::size_t i = 0; i < r.actions.size(); ++i) {
    CHECK(r.actions[i].chosen_by == "NW_IN");
    const action_effect& e = r.effects[i];
    CHECK(e.src_after.partitions + 1 == e.src_before.partitions);
    CHECK(e.dest_after.partitions == e.dest_before.partitions + 1);
    CHECK(e.dest_after.load[resource::nw_in] > e.dest_before.load[resource::nw_in]);
  }
  CHECK(r.out_of_band.empty());

  const std::string json = render_plan_json(r);
  CHECK_THAT(json, Catch::Contains("\"chosen_by\":\"NW_IN\""));
  CHECK_THAT(json, Catch::Contains("\"src_before\":"));
  CHECK_THAT(json, Catch::Contains("\"out_of_band\":[]"));
  CHECK_THAT(render_plan_text(r), Catch::Contains("chosen by NW_IN"));
  SECTION("without explain the plan is as before") {
    planner_report plain = run_planner(s, d, true, 10);
    CHECK_FALSE(plain.explained);
    CHECK_THAT(render_plan_json(plain), !Catch::Contains("chosen_by"));
    CHECK_THAT(render_plan_json(plain), !Catch::Contains("out_of_band"));
  }
}

TEST_CASE("explain: a broker left out of band says why", "[explain]") {
  SECTION("it may not receive") {
    snapshot s = brokers(2);
    for (int i = 0; i < 10; ++i) add(s, "t", i, 0, 1);
    auto c = only_goals({"NW_IN"});
    c.excluded_brokers = {"b2"};
    auto d = make_detector(c);
    planner_report r = run_planner(s, d, true, 10, true);
    REQUIRE(r.out_of_band.size() == 2);
    bool found = false;
    for (const auto& f : r.out_of_band)
      if (f.broker == "b2") {
        found = true;
        CHECK(f.goal == "NW_IN");
        CHECK(f.value == 0);
        CHECK(f.lower > 0);
        CHECK_THAT(f.why, Catch::Contains("may not receive"));
      }
    CHECK(found);
  }
  SECTION("none of its partitions may move") {
    snapshot s = brokers(2);
    for (int i = 0; i < 10; ++i) add(s, "__internal", i, 0, 1);
    auto d = make_detector(only_goals({"NW_IN"}));
    planner_report r = run_planner(s, d, true, 10, true);
    CHECK(r.actions.empty());
    REQUIRE_FALSE(r.out_of_band.empty());
    CHECK(r.out_of_band[0].broker == "b1");
    CHECK_THAT(r.out_of_band[0].why, Catch::Contains("none of its partitions may move"));
  }
  SECTION("every move that would help is refused by an earlier goal, which is named") {
    // PARTITION_COUNT wants b2 to take partitions, NW_IN (first) refuses: all of b1's partitions are heavy and b2
    // is at the top of its band with one partition.
    snapshot s = brokers(2);
    for (int i = 0; i < 4; ++i) add(s, "t", i, 0, 2.5);
    add(s, "u", 0, 1, 10);
    autobalance_config c = only_goals({"NW_IN", "PARTITION_COUNT"}, 0.1);
    auto d = make_detector(c);
    planner_report r = run_planner(s, d, true, 10, true);
    bool named = false;
    for (const auto& f : r.out_of_band)
      if (f.goal == "PARTITION_COUNT") {
        CHECK_THAT(f.why, Catch::Contains("refused by an earlier goal: NW_IN"));
        named = true;
      }
    CHECK(named);
  }
  SECTION("it is out of band by less than MinChange") {
    // b1 is 16.6 short of its band (2.3% of its target of 714) and only a pair of actions would help: at
    // MinChange 5% the goal leaves it, and so does the finisher.
    snapshot s = brokers(3);
    for (int i = 0; i < 4; ++i) add(s, "t", i, 2, 226 + 100 * i);
    add(s, "t", 4, 0, 626);
    add(s, "t", 5, 1, 726);
    for (broker_index b = 0; b < 3; ++b) s.set_capacity(b, resource::nw_in, (b == 2 ? 2 : 1) * 4096 * MiB);
    autobalance_config c = only_goals({"NW_IN"}, 0.1, 0.05);
    auto d = make_detector(c);
    planner_report r = run_planner(s, d, true, 10, true);
    CHECK(r.actions.empty());
    REQUIRE(r.out_of_band.size() == 1);
    CHECK(r.out_of_band[0].broker == "b1");
    CHECK_THAT(r.out_of_band[0].why, Catch::Contains("less than MinChange (5% of its target)"));
  }
  SECTION("the plan reached MaxActionsPerDetect") {
    snapshot s = brokers(2);
    for (int i = 0; i < 10; ++i) add(s, "t", i, 0, 1);
    auto d = make_detector(only_goals({"NW_IN"}, 0.1, 0.0, 2));
    planner_report r = run_planner(s, d, false, 1, true);
    REQUIRE_FALSE(r.out_of_band.empty());
    CHECK_THAT(r.out_of_band[0].why, Catch::Contains("MaxActionsPerDetect"));
  }
}
