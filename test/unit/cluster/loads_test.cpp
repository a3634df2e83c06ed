#include <catch2/catch.hpp>

#include <thread>

#include "moonmq/cluster/counter_rate.hpp"
#include "moonmq/cluster/local_loads.hpp"
#include "moonmq/cluster/local_ownership_table.hpp"
#include "moonmq/storage/memory_partition_store.hpp"
#include "support/ownership.hpp"

using namespace moonmq;
using namespace moonmq::cluster;

TEST_CASE("loads: only partitions this broker serves are reported, with size and counters", "[loads]") {
  storage::memory_partition_store store;
  REQUIRE(store.ensure_topic("t", 3));
  REQUIRE(store.append({"t", 0}, {storage::record{std::nullopt, "hello", 0, 0}}));
  auto table = open_local_ownership_table(broker_id("b1"), std::make_unique<storage::memory_state_file>());
  REQUIRE(table);
  REQUIRE(moonmq::test::set_owner(**table, {"t", 2}, broker_id("b2")));
  traffic counters;
  counters.count_produce({"t", 0}, 100);
  counters.count_produce({"t", 0}, 50);
  counters.count_consume({"t", 0}, 30);
  counters.count_produce({"t", 2}, 999);  // moved away: not reported
  auto loads = collect_local_loads(store, counters, **table, broker_id("b1"));
  REQUIRE(loads.size() == 2);
  CHECK(loads[0] == partition_load{{"t", 0}, *store.size_bytes({"t", 0}), 150, 30});
  CHECK(loads[1] == partition_load{{"t", 1}, 0, 0, 0});
}

TEST_CASE("loads: counters from several threads add up", "[loads]") {
  traffic counters;
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i)
    ts.emplace_back([&] {
      for (int k = 0; k < 1000; ++k) counters.count_produce({"t", 0}, 2);
    });
  for (auto& t : ts) t.join();
  CHECK(counters.get({"t", 0}).produced_bytes == 8000);
}

TEST_CASE("rates: the first report primes, later ones give bytes per second", "[rates]") {
  counter_rate<topic_partition> r;
  topic_partition tp{"t", 0};
  CHECK_FALSE(r.update(tp, 1000, 10.0).has_value());
  CHECK(*r.update(tp, 3000, 12.0) == Approx(1000.0));
  CHECK(*r.update(tp, 3000, 13.0) == Approx(0.0));
}

TEST_CASE("rates: a counter that went down primes a fresh baseline, never a negative rate", "[rates]") {
  counter_rate<topic_partition> r;
  topic_partition tp{"t", 0};
  (void)r.update(tp, 5000, 1.0);
  CHECK_FALSE(r.update(tp, 100, 2.0).has_value());  // the owner restarted
  CHECK(*r.update(tp, 600, 4.0) == Approx(250.0));
}

TEST_CASE("rates: a report no later than the previous gives no rate", "[rates]") {
  counter_rate<topic_partition> r;
  topic_partition tp{"t", 0};
  (void)r.update(tp, 0, 5.0);
  CHECK_FALSE(r.update(tp, 100, 5.0).has_value());
  CHECK(*r.update(tp, 200, 6.0) == Approx(200.0));
  r.forget(tp);
  CHECK_FALSE(r.update(tp, 300, 7.0).has_value());
}
