// The balance loop over the loopback network: controllership and its fencing, the load feed and its rates, and
// cluster-wide execution of the detector's plans.
#include <catch2/catch.hpp>

#include "moonmq/cluster/cluster_metrics.hpp"
#include "support/in_process_cluster.hpp"

using namespace moonmq;
using namespace moonmq::test;

namespace {

autobalancer::autobalance_config live_config(bool dry_run = false) {
  autobalancer::autobalance_config c;
  c.enabled = true;
  c.dry_run = dry_run;
  c.interval_seconds = 1;
  c.goals = {{"NW_IN", {}, 1000.0, {}}, {"NW_OUT", {}, 1000.0, {}}, {"DISK", {}, {}, {}}, {"PARTITION_COUNT", {}, {}, {}}};
  return c;
}

/// A clock the test moves: ten seconds per tick.
struct test_clock {
  double now = 1000;
  std::function<time_ms()> fn() {
    return [this] { return static_cast<time_ms>(now * 1000); };
  }
};

/// b1 holds `topic` with `partitions` partitions of `records` records each.
void skew(in_process_cluster& c, const std::string& topic, int partitions, int records) {
  REQUIRE(c[1].store.ensure_topic(topic, partitions));
  for (int p = 0; p < partitions; ++p)
    for (int i = 0; i < records; ++i) REQUIRE(c.produce(1, {topic, p}, {rec(std::string(200, 'a' + p % 26))}));
}

/// Produces one record to every partition through b1 (forwarded to the owner) and remembers its offset there.
void traffic(in_process_cluster& c, const std::string& topic, int partitions,
             std::map<topic_partition, std::vector<std::uint64_t>>& acked) {
  for (int p = 0; p < partitions; ++p) {
    topic_partition tp{topic, p};
    auto r = c.produce(1, tp, {rec("t" + std::string(100 + p * 40, 'x'))});
    REQUIRE(r);
    acked[tp].push_back(r->offsets.at(0));
  }
}

/// Which broker serves `tp` (the one holding it whose table says so).
int owner_of(in_process_cluster& c, const topic_partition& tp) {
  int found = 0;
  for (int i = 1; i <= static_cast<int>(c.size()); ++i)
    if (c[i].store.end_offset(tp) && c[i].serves(tp)) {
      CHECK(found == 0);  // never two
      found = i;
    }
  return found;
}

}  // namespace

TEST_CASE("balance loop: a skewed cluster converges into band and every acknowledged record is on its owner",
          "[balance_loop]") {
  in_process_cluster c(3, 64 * 1024);
  test_clock clock;
  const int partitions = 12;
  skew(c, "orders", partitions, 20);
  std::map<topic_partition, std::vector<std::uint64_t>> acked;
  c.enable_balancer(1, live_config(), clock.fn());
  cluster::balance_status s;
  int passes = 0;
  for (; passes < 40; ++passes) {
    traffic(c, "orders", partitions, acked);
    clock.now += 10;
    s = c.pass(1);
    REQUIRE(s.last_result == "ok");
    c.settle_moves();
    if (passes > 2 && s.satisfied && s.moves.empty() && s.last_plan.empty()) break;
  }
  INFO("passes " << passes);
  REQUIRE(s.satisfied);
  std::map<int, int> per_broker;
  for (int p = 0; p < partitions; ++p) {
    topic_partition tp{"orders", p};
    int owner = owner_of(c, tp);
    REQUIRE(owner != 0);
    ++per_broker[owner];
    // Every acknowledged record is readable at its offset on the owner.
    auto all = c[owner].store.read(tp, 0, 1u << 30);
    REQUIRE(all);
    auto views = storage::decode_frames(all->bytes.view(), 0);
    std::set<std::uint64_t> present;
    for (const auto& v : views) present.insert(v.offset);
    for (auto o : acked[tp]) CHECK(present.count(o) == 1);
    CHECK(views.size() == 20 + acked[tp].size());
  }
  // In band on every goal (what `satisfied` says); partition counts follow the network goals, which rank first.
  CHECK(per_broker.size() == 3);
  for (auto [b, n] : per_broker) CHECK(n >= 2);
  for (const auto& b : s.brokers) {
    double mean_disk = 0;
    for (const auto& o : s.brokers) mean_disk += o.load.v[2] / 3;
    CHECK(b.load.v[2] >= 0.9 * mean_disk);
    CHECK(b.load.v[2] <= 1.1 * mean_disk);
  }
  CHECK(c[1].metrics.value("moonmq_autobalancer_actions_total", {{"type", "MOVE"}, {"result", "succeeded"}}) >= 8);
  CHECK(c[1].metrics.value("moonmq_autobalancer_is_controller") == 1);
  CHECK(c[1].metrics.value("moonmq_cluster_moves_in_progress") == 0);
}

TEST_CASE("balance loop: DryRun plans but moves nothing", "[balance_loop]") {
  in_process_cluster c(3);
  test_clock clock;
  skew(c, "orders", 6, 10);
  std::map<topic_partition, std::vector<std::uint64_t>> acked;
  c.enable_balancer(1, live_config(true), clock.fn());
  cluster::balance_status s;
  for (int i = 0; i < 4; ++i) {
    traffic(c, "orders", 6, acked);
    clock.now += 10;
    s = c.pass(1);
    c.settle_moves();
  }
  CHECK_FALSE(s.last_plan.empty());
  CHECK(s.moves.empty());
  CHECK(c[1].reassigner->progress().empty());
  CHECK(c[1].ownership->entries().empty());
  CHECK(c.net.delivered("/cluster/reassign") == 0);
  CHECK(c[1].metrics.value("moonmq_autobalancer_actions_total", {{"type", "MOVE"}, {"result", "dry_run"}}) > 0);
  CHECK(c[1].metrics.value("moonmq_autobalancer_dry_run") == 1);
}

TEST_CASE("balance loop: an unreachable peer is inactive and never receives", "[balance_loop]") {
  in_process_cluster c(3, 64 * 1024);
  test_clock clock;
  skew(c, "orders", 8, 10);
  std::map<topic_partition, std::vector<std::uint64_t>> acked;
  c.net.partition("b1", "b3");
  c.enable_balancer(1, live_config(), clock.fn());
  cluster::balance_status s;
  for (int i = 0; i < 20; ++i) {
    traffic(c, "orders", 8, acked);
    clock.now += 10;
    s = c.pass(1);
    c.settle_moves();
  }
  for (const auto& b : s.brokers) CHECK(b.active == (b.id != "b3"));
  CHECK_FALSE(c[3].store.partition_count("orders"));  // never even asked to create the topic
  int on_b2 = 0;
  for (int p = 0; p < 8; ++p) on_b2 += owner_of(c, {"orders", p}) == 2;
  // Balanced between the two reachable brokers: every goal met, the count within its band of 4 +- 10% (rounded out).
  CHECK(s.satisfied);
  CHECK(on_b2 >= 3);
  CHECK(on_b2 <= 5);
  CHECK(c[1].metrics.value("moonmq_autobalancer_brokers", {{"state", "inactive"}}) == 1);
  CHECK(c[1].metrics.value("moonmq_cluster_peer_up", {{"peer", "b3"}}) == 0);
}

TEST_CASE("balance loop: network rates come from counters from the second pass, a counter reset primes again",
          "[balance_loop]") {
  in_process_cluster c(2);
  test_clock clock;
  REQUIRE(c[2].store.ensure_topic("clicks", 1));
  const topic_partition tp{"clicks", 0};
  REQUIRE(c[2].store.append(tp, {rec("x")}));
  auto config = live_config(true);
  config.window = 3;
  config.percentile = 1.0;  // the largest sample in the window
  c.enable_balancer(1, config, clock.fn());
  auto load_of = [](const cluster::balance_status& s, const std::string& id) {
    for (const auto& b : s.brokers)
      if (b.id == id) return b.load;
    FAIL("no broker " << id);
    return autobalancer::load_vector{};
  };
  c[2].counters.count_produce(tp, 5000);
  c[2].counters.count_consume(tp, 100000);
  auto s = c.pass(1);  // primes
  CHECK(load_of(s, "b2").v[0] == 0);
  c[2].counters.count_produce(tp, 20000);  // 20 kB in 10 s
  c[2].counters.count_consume(tp, 50000);
  clock.now += 10;
  s = c.pass(1);
  CHECK(load_of(s, "b2").v[0] == Approx(2000));
  CHECK(load_of(s, "b2").v[1] == Approx(5000));
  // b2 restarts: its counters start again from zero. No negative rate, no rate across the reset.
  c[2].counters.reset();
  c[2].counters.count_produce(tp, 100);
  clock.now += 10;
  s = c.pass(1);
  CHECK(load_of(s, "b2").v[0] == Approx(2000));  // only the earlier sample is in the window
  CHECK(load_of(s, "b2").v[1] == Approx(5000));
  c[2].counters.count_produce(tp, 80000);  // 80 kB in 10 s after the fresh baseline
  clock.now += 10;
  s = c.pass(1);
  CHECK(load_of(s, "b2").v[0] == Approx(8000));
}

TEST_CASE("balance loop: a peer that refuses the claim supersedes it, and says why in words, not a JSON body",
          "[balance_loop][fence]") {
  in_process_cluster c(2);
  test_clock clock;
  skew(c, "orders", 4, 5);
  // b2 has seen b2's own claim of epoch 5, which b1 has not heard of: b1's announcement is refused.
  REQUIRE(*c[2].fence->observe(transport::controller_claim{epoch(5), broker_id("b2")}));
  c.enable_balancer(1, live_config(true), clock.fn());
  auto s1 = c.pass(1);
  CHECK(s1.last_result == "superseded");
  REQUIRE(s1.superseded);
  CHECK_THAT(s1.superseded_reason, Catch::Contains("b2 has seen a newer controller claim: controller epoch 1 of b1 "
                                                   "is older than epoch 5 of b2"));
  CHECK(s1.superseded_reason.find('{') == std::string::npos);
}

TEST_CASE("balance loop: of two loops exactly one keeps acting, the elder claimant stops for good",
          "[balance_loop][fence]") {
  in_process_cluster c(3);
  test_clock clock;
  skew(c, "orders", 4, 5);
  c.enable_balancer(1, live_config(true), clock.fn());
  c.enable_balancer(2, live_config(true), clock.fn());
  CHECK(c.pass(1).last_result == "ok");  // b1 claims epoch 1 and announces it
  auto s2 = c.pass(2);                   // b2 has seen epoch 1: it claims 2 and announces it to b1
  CHECK(s2.last_result == "ok");
  CHECK(s2.claim->claim_epoch == epoch(2));
  auto s1 = c.pass(1);
  CHECK(s1.last_result == "superseded");
  CHECK(s1.superseded);
  CHECK_FALSE(s1.superseded_reason.empty());
  for (int i = 0; i < 3; ++i) {
    CHECK(c.pass(2).last_result == "ok");
    CHECK(c.pass(1).last_result == "superseded");  // for good: it never claims again
  }
  CHECK(c[1].fence->highest().claim_epoch == epoch(2));
  CHECK(c[1].metrics.value("moonmq_autobalancer_is_controller") == 0);
  CHECK(c[2].metrics.value("moonmq_autobalancer_is_controller") == 1);
  CHECK(c[1].metrics.value("moonmq_autobalancer_passes_total", {{"result", "superseded"}}) == 4);
}

TEST_CASE("balance loop: two loops that claimed the same epoch apart meet, and the greater id survives",
          "[balance_loop][fence]") {
  in_process_cluster c(3);
  test_clock clock;
  skew(c, "orders", 4, 5);
  c.net.partition("b1", "b2");
  c.net.partition("b1", "b3");
  c.net.partition("b2", "b3");
  c.enable_balancer(1, live_config(true), clock.fn());
  c.enable_balancer(2, live_config(true), clock.fn());
  CHECK(c.pass(1).claim->claim_epoch == epoch(1));
  CHECK(c.pass(2).claim->claim_epoch == epoch(1));
  c.net.heal();
  auto a = c.pass(1);
  auto b = c.pass(2);
  a = c.pass(1);
  CHECK(a.superseded);
  CHECK_FALSE(b.superseded);
  CHECK(c.pass(2).last_result == "ok");
  // The superseded controller's control-plane requests are refused everywhere its successor's claim reached.
  CHECK(c[2].metrics.value("moonmq_cluster_fence_rejections_total") >= 1);
}

TEST_CASE("balance loop: a failed move is reported and retried on a later pass, backing off, not at once",
          "[balance_loop]") {
  // One partition can move (the rest are excluded), so every start counted is a start of that partition.
  in_process_cluster c(2, 64 * 1024);
  test_clock clock;
  skew(c, "fixed", 3, 10);
  skew(c, "mover", 1, 10);
  std::map<topic_partition, std::vector<std::uint64_t>> acked;
  bool refuse = true;  // b2 drops every migration batch for now
  c.net.set_hook([&](const std::string&, const std::string&, const transport::request& r) {
    return refuse && r.path == "/cluster/append" && r.params.count("expected_offset") ? transport::fate::drop
                                                                                     : transport::fate::deliver;
  });
  auto config = live_config();
  config.excluded_topics = {"fixed"};
  c.enable_balancer(1, config, clock.fn());
  auto started = [&] {
    return c[1].metrics.value("moonmq_autobalancer_actions_total", {{"type", "MOVE"}, {"result", "started"}});
  };
  // One pass per interval (1 s), 16 passes. Without back-off the move would start every other pass (8 times); with
  // it (1, 2, 4, 8 intervals) it starts 4 or 5 times.
  for (int i = 0; i < 16; ++i) {
    traffic(c, "mover", 1, acked);
    clock.now += 1;
    (void)c.pass(1);
    c.settle_moves();
  }
  const double failed = c[1].metrics.value("moonmq_autobalancer_actions_total", {{"type", "MOVE"}, {"result", "failed"}});
  CHECK(failed >= 2);  // reported, and retried
  CHECK(started() >= 2);
  CHECK(started() <= 5);
  // Once b2 takes batches again, the next attempt succeeds.
  refuse = false;
  for (int i = 0; i < 40 && owner_of(c, {"mover", 0}) != 2; ++i) {
    traffic(c, "mover", 1, acked);
    clock.now += 1;
    (void)c.pass(1);
    c.settle_moves();
  }
  CHECK(owner_of(c, {"mover", 0}) == 2);
  for (int p = 0; p < 3; ++p) CHECK(owner_of(c, {"fixed", p}) == 1);
}

TEST_CASE("balance loop: a refusal that is not about the fence (409 already moving) never supersedes the controller",
          "[balance_loop][fence]") {
  in_process_cluster c(2);
  test_clock clock;
  skew(c, "orders", 4, 5);
  // b1 is busy moving whatever the controller asks for (a hand-driven move got there first).
  c.net.attach("b1", [svc = c[1].service.get()](const transport::request& r) {
    if (r.path == "/cluster/reassign")
      return transport::error_response(409, "conflict", "orders-0 is already moving");
    return svc->handle(r);
  });
  c.enable_balancer(2, live_config(), clock.fn());
  for (int i = 0; i < 3; ++i) {
    clock.now += 1;
    auto s = c.pass(2);
    CHECK(s.last_result == "ok");
    CHECK_FALSE(s.superseded);
  }
  CHECK(c[2].metrics.value("moonmq_autobalancer_actions_total", {{"type", "MOVE"}, {"result", "failed"}}) >= 1);
  CHECK(c[2].metrics.value("moonmq_autobalancer_is_controller") == 1);
  // A 409 from the fence still does.
  c.net.attach("b1", [](const transport::request&) {
    return transport::error_response(409, "stale_epoch", "b9 claimed epoch 7");
  });
  clock.now += 100;
  CHECK(c.pass(2).superseded);
}

TEST_CASE("balance loop: partitions with a transaction open are left alone for a few passes, then moved like any",
          "[balance_loop][txn]") {
  in_process_cluster c(3);
  test_clock clock;
  skew(c, "orders", 6, 10);
  // A transaction open on partitions 0 to 2 (enrolled on their owner, b1).
  for (int p = 0; p < 3; ++p) REQUIRE(c[1].producers.enroll({"orders", p}, 42, 0));
  std::map<topic_partition, std::vector<std::uint64_t>> acked;
  c.enable_balancer(1, live_config(), clock.fn());
  auto moved_busy = [&] {
    for (const auto& m : c[1].reassigner->progress())
      if (m.partition.partition < 3) return true;
    return false;
  };
  for (int pass = 1; pass <= 3; ++pass) {
    traffic(c, "orders", 6, acked);
    clock.now += 10;
    (void)c.pass(1);
    c.settle_moves();
    CHECK_FALSE(moved_busy());
  }
  CHECK_FALSE(c[1].reassigner->progress().empty());  // the others did move
  for (int pass = 4; pass <= 8 && !moved_busy(); ++pass) {
    traffic(c, "orders", 6, acked);
    clock.now += 10;
    (void)c.pass(1);
    c.settle_moves();
  }
  CHECK(moved_busy());  // still open after three passes: no longer held back
}
