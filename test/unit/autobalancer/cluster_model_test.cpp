#include <catch2/catch.hpp>

#include "moonmq/autobalancer/detector.hpp"
#include "moonmq/autobalancer/model/cluster_model.hpp"

using namespace moonmq;
using namespace moonmq::autobalancer;

TEST_CASE("a frozen model carries owners, percentile loads and disk", "[cluster_model]") {
  cluster_model m(10, 1, 0.9);
  m.set_broker("b1", true);
  m.set_broker("b2", true);
  topic_partition tp{"orders", 0};
  m.set_owner(tp, "b2");
  for (int i = 1; i <= 10; ++i) {
    m.record_nw_in(tp, i * 10.0);
    m.record_nw_out(tp, i * 20.0);
  }
  m.set_disk(tp, 4096);
  snapshot s = m.freeze();
  REQUIRE(s.partition_count() == 1);
  CHECK(s.broker_id(s.owner(0)) == "b2");
  CHECK(s.load(0, resource::nw_in) == 90.0);
  CHECK(s.load(0, resource::nw_out) == 180.0);
  CHECK(s.load(0, resource::disk) == 4096.0);
  CHECK(s.broker_load(1, resource::nw_in) == 90.0);
  CHECK(s.movable(0));
}

TEST_CASE("a partition with fewer than MinValid samples counts but never moves", "[cluster_model]") {
  cluster_model m(10, 3, 0.9);
  topic_partition tp{"t", 0};
  m.set_owner(tp, "b1");
  m.record_nw_in(tp, 100);
  m.record_nw_out(tp, 100);
  m.set_disk(tp, 10);
  snapshot s = m.freeze();
  CHECK_FALSE(s.movable(0));
  CHECK(s.load(0, resource::nw_in) == 0.0);
  CHECK(s.load(0, resource::disk) == 10.0);
  CHECK(s.broker_partition_count(0) == 1);
  m.record_nw_in(tp, 100);
  m.record_nw_out(tp, 100);
  m.record_nw_in(tp, 100);
  m.record_nw_out(tp, 100);
  CHECK(m.freeze().movable(0));
}

TEST_CASE("an inactive broker's partitions are frozen in place", "[cluster_model]") {
  cluster_model m;
  m.set_broker("b1", false);
  topic_partition tp{"t", 0};
  m.set_owner(tp, "b1");
  m.record_nw_in(tp, 1);
  m.record_nw_out(tp, 1);
  snapshot s = m.freeze();
  CHECK_FALSE(s.active(0));
  CHECK_FALSE(s.can_receive(0));
  CHECK_FALSE(s.movable(0));
}

TEST_CASE("changing an owner and removing a partition are reflected in the next freeze", "[cluster_model]") {
  cluster_model m;
  m.set_owner({"a", 0}, "b1");
  m.set_owner({"a", 1}, "b1");
  m.set_owner({"a", 2}, "b1");
  m.set_owner({"a", 0}, "b2");
  m.remove_partition({"a", 1});
  m.remove_partition({"missing", 9});
  snapshot s = m.freeze();
  CHECK(s.partition_count() == 2);
  CHECK(s.broker_partition_count(s.find_broker("b1")) == 1);
  CHECK(s.broker_partition_count(s.find_broker("b2")) == 1);
  CHECK_FALSE(m.has_partition({"a", 1}));
  CHECK(m.has_partition({"a", 2}));
}

TEST_CASE("samples for unknown partitions are ignored", "[cluster_model]") {
  cluster_model m;
  m.record_nw_in({"ghost", 0}, 5);
  m.set_disk({"ghost", 0}, 5);
  CHECK(m.partition_count() == 0);
}

TEST_CASE("internal topics are never movable", "[cluster_model]") {
  cluster_model m;
  m.set_owner({"__consumer_offsets", 0}, "b1");
  m.record_nw_in({"__consumer_offsets", 0}, 1);
  m.record_nw_out({"__consumer_offsets", 0}, 1);
  CHECK_FALSE(m.freeze().movable(0));
}

TEST_CASE("a partition that moved is not planned straight back while its window mixes both owners' samples",
          "[cluster_model][settling]") {
  // The balance loop moved orders-0 (3 MiB/s) from b1 to b2 when b1 was busy; b1's other partition has since gone
  // quiet. The window of orders-0 still holds the samples taken on b1, and the plan without settling sends it
  // straight back: a wasted copy.
  constexpr double mib = 1024.0 * 1024.0;
  const std::uint32_t window = 4;
  cluster_model m(window, 1, 0.9);
  const topic_partition moved{"orders", 0}, quiet{"orders", 1}, other{"orders", 2};
  m.set_owner(moved, "b1");
  m.set_owner(quiet, "b1");
  m.set_owner(other, "b2");
  for (std::uint32_t i = 0; i < window; ++i) {
    m.record_nw_in(moved, 3 * mib);
    m.record_nw_in(quiet, 2 * mib);
    m.record_nw_in(other, 3 * mib);
    for (const auto& tp : {moved, quiet, other}) m.record_nw_out(tp, 0);
  }
  CHECK_FALSE(m.settling(moved));
  m.set_owner(moved, "b2");  // the move finished
  CHECK(m.settling(moved));
  m.record_nw_in(moved, 3 * mib);  // one sample taken on b2
  autobalance_config c;
  c.goals = {{"NW_IN", 0.1, 0.0, 0.0}};
  auto d = anomaly_detector::create(c);
  REQUIRE(d);

  snapshot s = m.freeze();
  const partition_index p = 0;
  REQUIRE(s.topic(p) == "orders");
  REQUIRE(s.partition_number(p) == 0);
  CHECK_FALSE(s.movable(p));  // settling: pinned
  CHECK(s.movable(1));        // the others are not
  for (const auto& a : d->detect(s).actions) CHECK(a.partition != p);

  SECTION("without settling, the plan sends it straight back") {
    snapshot unpinned;
    for (broker_index b = 0; b < s.broker_count(); ++b) unpinned.add_broker(s.broker_id(b));
    for (partition_index q = 0; q < s.partition_count(); ++q)
      unpinned.add_partition(s.topic(q), s.partition_number(q), s.owner(q), s.loads(q));
    plan back = d->detect(unpinned);
    REQUIRE_FALSE(back.empty());
    CHECK(back.actions[0].partition == p);
    CHECK(unpinned.broker_id(back.actions[0].dest) == "b1");
  }
  SECTION("once its window holds only samples taken on the new owner, it may move again") {
    for (std::uint32_t i = 1; i < window; ++i) m.record_nw_in(moved, 3 * mib);
    CHECK_FALSE(m.settling(moved));
    CHECK(m.freeze().movable(p));
  }
  SECTION("a partition seen for the first time does not settle") {
    m.set_owner({"fresh", 0}, "b1");
    CHECK_FALSE(m.settling({"fresh", 0}));
  }
}
