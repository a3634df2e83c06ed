#include <catch2/catch.hpp>

#include "moonmq/cluster/drain_plan.hpp"

using namespace moonmq;
using namespace moonmq::cluster;

namespace {
drain_partition part(const char* topic, int p, std::uint64_t size, bool moving = false, std::string held = "") {
  return {{topic, p}, size, moving, std::move(held)};
}
}  // namespace

TEST_CASE("drain plan: largest partitions first, each to the receiver with the fewest bytes", "[drain]") {
  std::vector<drain_target> targets{{"b1", true, true, 900}, {"b2", true, false, 100}, {"b3", true, false, 150}};
  auto plan = plan_drain("b1", {part("a", 0, 10), part("a", 1, 500), part("b", 0, 70)}, targets, 3);
  REQUIRE(plan.start.size() == 3);
  CHECK(plan.start[0].partition == topic_partition{"a", 1});
  CHECK(plan.start[0].dest == "b2");  // 100 < 150
  CHECK(plan.start[1].partition == topic_partition{"b", 0});
  CHECK(plan.start[1].dest == "b3");  // b2 now holds 600
  CHECK(plan.start[2].dest == "b3");  // 150 + 70 = 220 < 600
  CHECK(plan.partitions_left == 3);
  CHECK(plan.bytes_left == 580);
  CHECK(plan.blocked.empty());
}

TEST_CASE("drain plan: moves at a time are capped and the rest say they wait", "[drain]") {
  std::vector<drain_target> targets{{"b2", true, false, 0}};
  auto plan = plan_drain("b1", {part("a", 0, 10, true), part("a", 1, 5), part("a", 2, 1)}, targets, 2);
  REQUIRE(plan.start.size() == 1);
  CHECK(plan.start[0].partition == topic_partition{"a", 1});
  CHECK(plan.moving == 1);
  REQUIRE(plan.blocked.size() == 1);
  CHECK_THAT(plan.blocked[0].reason, Catch::Contains("2 moves at a time"));
  CHECK(plan.partitions_left == 3);
}

TEST_CASE("drain plan: says why a partition cannot move", "[drain]") {
  SECTION("no receiver") {
    std::vector<drain_target> targets{{"b2", false, false, 0}, {"b3", true, true, 0}, {"b4", true, false, 0}};
    auto plan = plan_drain("b1", {part("a", 0, 10)}, targets, 1, {"b4"});
    CHECK(plan.start.empty());
    REQUIRE(plan.blocked.size() == 1);
    CHECK_THAT(plan.blocked[0].reason, Catch::Contains("b2 is unreachable") && Catch::Contains("b3 is draining too") &&
                                           Catch::Contains("b4 is excluded"));
  }
  SECTION("internal topics") {
    auto plan = plan_drain("b1", {part("__consumer_offsets", 0, 10)}, {{"b2", true, false, 0}}, 1);
    CHECK(plan.start.empty());
    REQUIRE(plan.blocked.size() == 1);
    CHECK(plan.blocked[0].reason == "internal topics never move");
  }
  SECTION("alone") {
    auto plan = plan_drain("b1", {part("a", 0, 10)}, {}, 1);
    REQUIRE(plan.blocked.size() == 1);
    CHECK_THAT(plan.blocked[0].reason, Catch::Contains("no other broker"));
  }
  SECTION("held back after a failure") {
    auto plan = plan_drain("b1", {part("a", 0, 10, false, "its last move failed 3 s ago")}, {{"b2", true, false, 0}}, 1);
    CHECK(plan.start.empty());
    REQUIRE(plan.blocked.size() == 1);
    CHECK(plan.blocked[0].reason == "its last move failed 3 s ago");
    CHECK(plan.partitions_left == 1);
  }
  SECTION("drained") {
    auto plan = plan_drain("b1", {}, {{"b2", true, false, 0}}, 1);
    CHECK(plan.partitions_left == 0);
    CHECK(plan.start.empty());
    CHECK(plan.blocked.empty());
  }
}
