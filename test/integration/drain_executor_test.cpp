// The drain executor over the loopback network: the draining set kept on disk, rounds that move a broker's partitions
// away within the move limit until it is empty, the reasons a partition cannot go, and a failed move held back for
// its retry interval (time passed in).
#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include "moonmq/cluster/drain_executor.hpp"
#include "moonmq/cluster/local_loads.hpp"
#include "support/in_process_cluster.hpp"
#include "support/kept_file.hpp"

using namespace moonmq;
using namespace moonmq::test;

namespace {

/// Brokers `c` reports, all answering but those in `silent`.
cluster::drain_reports reports_of(in_process_cluster& c, int brokers, const std::set<std::string>* silent = nullptr) {
  return [&c, brokers, silent] {
    std::vector<cluster::peer_report> out;
    for (int i = 1; i <= brokers; ++i) {
      auto& b = c[i];
      cluster::peer_report r;
      r.broker = b.id;
      r.answered = !silent || !silent->count(b.id);
      if (r.answered)
        r.partitions = cluster::collect_local_loads(b.store, b.counters, *b.ownership, broker_id(b.id));
      else
        r.silence = "no answer";
      out.push_back(std::move(r));
    }
    return out;
  };
}

rapidjson::Document progress(const cluster::drain_executor& d) {
  rapidjson::Document doc;
  doc.Parse(d.progress_document().c_str());
  return doc;
}

std::string reasons(const rapidjson::Document& p) {
  std::string out;
  if (p.HasMember("blocked"))
    for (const auto& b : p["blocked"].GetArray()) out += std::string(b["reason"].GetString()) + "\n";
  return out;
}

}  // namespace

TEST_CASE("drain executor: rounds move every partition away, one move at a time, largest first, until done",
          "[drain]") {
  in_process_cluster c(3, 4096);
  REQUIRE(c[1].store.ensure_topic("orders", 3));
  for (int p = 0; p < 3; ++p)
    for (int i = 0; i < 5 * (p + 1); ++i) REQUIRE(c.produce(1, {"orders", p}, {rec(std::string(100, 'a'))}));
  storage::memory_state_file state("b1/drain-state.json");
  cluster::drain_options o;
  o.self = broker_id("b1");
  o.max_moves = 1;
  auto d = cluster::drain_executor::open(o, *c[1].reassigner, c.io.get_executor(), nullptr, keep(&state),
                                         reports_of(c, 3), c[1].log);
  REQUIRE(d);
  auto& drain = **d;
  drain.round();  // not draining: nothing
  CHECK_FALSE(progress(drain)["draining"].GetBool());

  REQUIRE(drain.set("b1", true));
  CHECK(state.read()->value() == R"({"draining":["b1"]})");  // on disk before it counts
  drain.round();
  auto p = progress(drain);
  CHECK(p["partitions_left"].GetUint() == 3);
  CHECK(p["moving"].GetUint() == 1);
  CHECK_FALSE(p["done"].GetBool());
  // The largest went first; the other two wait for the one slot.
  auto moving = c[1].reassigner->progress();
  REQUIRE(moving.size() == 1);
  CHECK(moving[0].partition == topic_partition{"orders", 2});
  CHECK(p["blocked"].Size() == 2);
  CHECK_THAT(reasons(p), Catch::Contains("waiting"));

  for (int round = 0; round < 10 && !progress(drain)["done"].GetBool(); ++round) {
    c.settle_moves();
    drain.round();
  }
  CHECK(progress(drain)["done"].GetBool());
  for (int part = 0; part < 3; ++part) {
    INFO("orders-" << part);
    CHECK_FALSE(cluster::serves(*c[1].ownership, {"orders", part}, broker_id("b1")));
  }
  // Reopened from its file, it still knows; undrained, it says so and moves nothing.
  auto again = cluster::drain_executor::open(o, *c[1].reassigner, c.io.get_executor(), nullptr, keep(&state),
                                             reports_of(c, 3), c[1].log);
  REQUIRE(again);
  CHECK((*again)->draining() == std::set<std::string>{"b1"});
  REQUIRE((*again)->set("b1", false));
  CHECK_FALSE(progress(**again)["draining"].GetBool());
}

TEST_CASE("drain executor: with no broker to take them, every partition says why, and a failed move waits out its "
          "retry interval",
          "[drain]") {
  in_process_cluster c(2, 4096);
  REQUIRE(c[1].store.ensure_topic("orders", 1));
  REQUIRE(c.produce(1, {"orders", 0}, {rec("x")}));
  storage::memory_state_file state("b1/drain-state.json");
  std::set<std::string> silent{"b2"};
  std::int64_t now_ms = 1'000'000;
  cluster::drain_options o;
  o.self = broker_id("b1");
  o.retry_after = std::chrono::seconds(30);
  o.wall_ms = [&now_ms] { return now_ms; };
  auto d = cluster::drain_executor::open(o, *c[1].reassigner, c.io.get_executor(), nullptr, keep(&state),
                                         reports_of(c, 2, &silent), c[1].log);
  REQUIRE(d);
  auto& drain = **d;
  REQUIRE(drain.set("b1", true));
  drain.round();
  auto p = progress(drain);
  CHECK(p["moving"].GetUint() == 0);
  REQUIRE(p["blocked"].Size() == 1);
  CHECK_FALSE(reasons(p).empty());

  // b2 reports again but cannot be reached by the copy: the move fails, and is not tried again for 30 s.
  silent.clear();
  c.net.partition("b1", "b2");
  drain.round();
  REQUIRE(c[1].reassigner->progress().size() == 1);
  c.settle_moves(std::chrono::seconds(60));
  auto failed = c[1].reassigner->progress();
  REQUIRE(failed.size() == 1);
  REQUIRE(failed[0].finished);
  CHECK_FALSE(failed[0].succeeded);
  now_ms = static_cast<std::int64_t>(failed[0].finished_at * 1000) + 5'000;
  drain.round();
  p = progress(drain);
  CHECK(c[1].reassigner->progress().size() == 1);  // not started again
  CHECK_THAT(reasons(p), Catch::Contains("failed 5 s ago") && Catch::Contains("tried again 25 s from now"));
  // Past the interval, and the network healed: it goes.
  c.net.heal();
  now_ms += 30'000;
  drain.round();
  CHECK(progress(drain)["moving"].GetUint() == 1);
  c.settle_moves();
  drain.round();
  CHECK(progress(drain)["done"].GetBool());
}
