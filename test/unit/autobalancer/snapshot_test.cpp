#include <catch2/catch.hpp>

#include "support/snapshots.hpp"

using namespace moonmq::test;

TEST_CASE("apply and undo keep broker totals and membership exact", "[snapshot]") {
  snapshot s = brokers(3);
  auto p0 = add(s, "t", 0, 0, 5, 1, 10);
  auto p1 = add(s, "t", 1, 0, 3, 2, 20);
  auto p2 = add(s, "t", 2, 1, 1, 4, 30);
  auto m = action::move(p0, 0, 2);
  REQUIRE(s.valid(m));
  s.apply(m);
  CHECK(s.owner(p0) == 2);
  CHECK(s.broker_load(0, resource::nw_in) == 3 * MiB);
  CHECK(s.broker_load(2, resource::nw_in) == 5 * MiB);
  CHECK(s.broker_partition_count(0) == 1);
  CHECK(s.partitions_on(2).size() == 1);
  auto sw = action::swap(p1, 0, 1, p2);
  REQUIRE(s.valid(sw));
  s.apply(sw);
  CHECK(s.owner(p1) == 1);
  CHECK(s.owner(p2) == 0);
  s.undo(sw);
  s.undo(m);
  CHECK(s.owner(p0) == 0);
  CHECK(s.owner(p1) == 0);
  CHECK(s.owner(p2) == 1);
  auto totals = recomputed_totals(s);
  for (broker_index b = 0; b < 3; ++b)
    for (std::size_t r = 0; r < resource_count; ++r) CHECK(s.broker_load(b, resource(r)) == Approx(totals[b].v[r]));
}

TEST_CASE("actions that do not match the placement are not valid", "[snapshot]") {
  snapshot s = brokers(2);
  auto p0 = add(s, "t", 0, 0, 1);
  CHECK_FALSE(s.valid(action::move(p0, 1, 0)));  // wrong source
  CHECK_FALSE(s.valid(action::move(p0, 0, 0)));  // no-op
  CHECK_FALSE(s.valid(action::move(p0, 0, 7)));  // unknown broker
  s.exclude_broker("b2");
  CHECK_FALSE(s.valid(action::move(p0, 0, 1)));  // excluded broker never receives
}

TEST_CASE("excluded and internal topics are pinned", "[snapshot]") {
  snapshot s = brokers(2);
  auto a = add(s, "keep", 0, 0, 1);
  auto b = add(s, "__internal", 0, 0, 1);
  auto c = add(s, "free", 0, 0, 1);
  s.exclude_topic("keep");
  CHECK_FALSE(s.movable(a));
  CHECK_FALSE(s.movable(b));
  CHECK(s.movable(c));
}
