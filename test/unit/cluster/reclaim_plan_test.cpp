#include <catch2/catch.hpp>

#include "moonmq/cluster/reclaim_plan.hpp"

using namespace moonmq;
using namespace moonmq::cluster;

TEST_CASE("reclaim: an unserved copy is due once it has been left alone for the delay", "[reclaim]") {
  reclaim_tracker t(3600);
  const topic_partition a{"a", 0};
  auto r = t.observe({{a, 100, false, false, false}}, 1000);
  REQUIRE(r.size() == 1);
  CHECK(r[0].eligible_now);
  CHECK_FALSE(r[0].due);
  r = t.observe({{a, 100, false, false, false}}, 1000 + 3599);
  CHECK_FALSE(r[0].due);
  r = t.observe({{a, 100, false, false, false}}, 1000 + 3600);
  CHECK(r[0].due);
  CHECK(r[0].idle_seconds == 3600);
}

TEST_CASE("reclaim: a copy that changes, is served, journaled or moving is kept", "[reclaim]") {
  reclaim_tracker t(10);
  const topic_partition a{"a", 0};
  (void)t.observe({{a, 100, false, false, false}}, 0);
  auto r = t.observe({{a, 200, false, false, false}}, 20);  // grew: a copy arriving, idle again from now
  CHECK_FALSE(r[0].due);
  CHECK(r[0].idle_seconds == 0);
  CHECK(t.observe({{a, 200, true, false, false}}, 100).empty());  // served here: not a candidate at all
  r = t.observe({{a, 200, false, true, false}}, 200);
  CHECK_FALSE(r[0].eligible_now);
  CHECK_THAT(r[0].held_by, Catch::Contains("journaled"));
  r = t.observe({{a, 200, false, false, true}}, 300);
  CHECK_FALSE(r[0].eligible_now);
  CHECK_FALSE(r[0].due);
  CHECK(t.observe({{a, 0, false, false, false}}, 400).empty());  // nothing to give back
}

TEST_CASE("reclaim: a stray is never reclaimed, however long it idles", "[reclaim][strays]") {
  reclaim_tracker t(10);
  const topic_partition a{"a", 0};
  for (double now : {0.0, 100.0, 100000.0}) {
    auto r = t.observe({{a, 100, false, false, false, true}}, now);
    REQUIRE(r.size() == 1);  // listed, so that an operator sees it
    CHECK_FALSE(r[0].eligible_now);
    CHECK_FALSE(r[0].due);
    CHECK_THAT(r[0].held_by, Catch::Contains("stray"));
  }
}

TEST_CASE("reclaim: a delay of 0 keeps copies until an operator reclaims them", "[reclaim]") {
  reclaim_tracker t(0);
  const topic_partition a{"a", 0};
  auto r = t.observe({{a, 100, false, false, false}}, 0);
  r = t.observe({{a, 100, false, false, false}}, 1e9);
  CHECK(r[0].eligible_now);
  CHECK_FALSE(r[0].due);
}
