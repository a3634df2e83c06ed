// An operator's hold on running moves: cancel with rollback before the cutover (refused after it), the shared copy
// throttle applied to a running copy at once, and the progress figures (rate, ETA, stall with its reason).
#include <catch2/catch.hpp>

#include "cluster/wire_json.hpp"
#include "moonmq/cluster/copy_throttle.hpp"
#include "support/in_process_cluster.hpp"

using namespace moonmq;
using namespace moonmq::test;

namespace {

const topic_partition orders0{"orders", 0};

void seed(in_process_cluster& c, int n) {
  REQUIRE(c[1].store.ensure_topic("orders", 2));
  for (int i = 0; i < n; ++i) REQUIRE(c[1].store.append(orders0, {rec(std::to_string(i) + std::string(100, 'x'))}));
}

cluster::move_progress progress_of(in_process_cluster& c, int broker, std::uint64_t id) {
  for (const auto& p : c[broker].reassigner->progress())
    if (p.id == id) return p;
  FAIL("no move " << id);
  return {};
}

}  // namespace

TEST_CASE("copy throttle: the rate holds over time, a burst is bounded, and 0 means unlimited", "[throttle]") {
  using clock = cluster::copy_throttle::clock;
  cluster::copy_throttle t(10'000);
  clock::time_point now{std::chrono::seconds(1000)};
  std::uint64_t sent = 0;
  // A sender that always has 4 KiB batches ready, for 10 simulated seconds.
  const auto end = now + std::chrono::seconds(10);
  while (now < end) {
    auto wait = t.take(4096, now);
    if (wait == clock::duration::zero())
      sent += 4096;
    else
      now += wait;
  }
  // 10 s at 10,000 B/s, plus at most the quarter second of burst and the one batch that may go into debt.
  CHECK(sent >= 90'000);
  CHECK(sent <= 100'000 + 2'500 + 4096);
  // A wait is never longer than the slice, so that a new rate reaches a waiting copy.
  CHECK(t.take(4096, now) <= std::chrono::milliseconds(100));
  t.set_rate(0);
  CHECK(t.take(1u << 30, now) == clock::duration::zero());
  CHECK(t.rate() == 0);
  // Spent bytes (a drain that must not wait) still count: the next copy waits for them.
  t.set_rate(1000);
  t.spend(5000, now);
  CHECK(t.take(1, now) > clock::duration::zero());
}

TEST_CASE("a move cancelled before its cutover is rolled back: the source keeps serving, the copy is discarded",
          "[reassigner][cancel]") {
  in_process_cluster c(2, 4096);
  seed(c, 200);
  const std::string before = log_bytes(c[1].store, orders0);
  c[1].reassigner->set_throttle(4096);  // about a batch a second: the copy is still running when cancelled
  auto id = c[1].reassigner->start(c.io.get_executor(), orders0, broker_id("b2"));
  REQUIRE(id);
  REQUIRE(c.run_until([&] {
    auto p = progress_of(c, 1, *id);
    return p.step == "copy" && p.bytes_copied > 0;
  }));
  REQUIRE(*c[2].store.end_offset(orders0) > 0);
  REQUIRE(c[1].reassigner->cancel(*id));
  REQUIRE(c.run_until([&] { return progress_of(c, 1, *id).finished; }));
  auto p = progress_of(c, 1, *id);
  CHECK(p.step == "cancelled");
  CHECK_FALSE(p.succeeded);
  CHECK(p.cancel_requested);
  CHECK_THAT(p.error, Catch::Contains("was discarded"));
  CHECK(*c[2].store.end_offset(orders0) == 0);  // the destination's disk is given back
  CHECK(c[1].serves(orders0));
  CHECK_FALSE(c[2].serves(orders0));
  CHECK(c[1].journal->pending().empty());
  CHECK(log_bytes(c[1].store, orders0) == before);
  CHECK(c[1].reassigner->cancel(*id).code() == errc::conflict);  // it has ended
  CHECK(c[1].reassigner->cancel(*id + 1000).code() == errc::not_found);
  // Nothing is left in the way of the same move later.
  c[1].reassigner->set_throttle(0);
  REQUIRE(c.move(1, orders0, 2));
  CHECK(log_bytes(c[2].store, orders0) == before);
  CHECK(c[2].serves(orders0));
}

TEST_CASE("a cancel after the cutover is refused and the move completes", "[reassigner][cancel]") {
  in_process_cluster c(2, 4096);
  seed(c, 50);
  c.net.set_delay(std::chrono::milliseconds(60));  // every step takes a while, so each can be seen
  auto id = c[1].reassigner->start(c.io.get_executor(), orders0, broker_id("b2"));
  REQUIRE(id);
  REQUIRE(c.run_until([&] {
    auto s = progress_of(c, 1, *id).step;
    return s == "drain" || s == "offsets" || s == "confirm";
  }));
  auto refused = c[1].reassigner->cancel(*id);
  CHECK(refused.code() == errc::conflict);
  CHECK_THAT(refused.message(), Catch::Contains("past its cutover"));
  REQUIRE(c.run_until([&] { return progress_of(c, 1, *id).finished; }));
  CHECK(progress_of(c, 1, *id).succeeded);
  CHECK(c[2].serves(orders0));
  CHECK_FALSE(c[1].serves(orders0));
}

TEST_CASE("a new throttle applies to a copy already waiting for the old one", "[reassigner][throttle]") {
  in_process_cluster c(2, 4096);
  seed(c, 200);
  c[1].reassigner->set_throttle(1);  // a byte a second: the second batch would wait for over an hour
  auto id = c[1].reassigner->start(c.io.get_executor(), orders0, broker_id("b2"));
  REQUIRE(id);
  REQUIRE(c.run_until([&] { return progress_of(c, 1, *id).waiting_for.starts_with("throttle"); }));
  CHECK_FALSE(progress_of(c, 1, *id).finished);
  CHECK(progress_of(c, 1, *id).bytes_copied < progress_of(c, 1, *id).bytes_total);
  c[1].reassigner->set_throttle(0);
  REQUIRE(c.run_until([&] { return progress_of(c, 1, *id).finished; }, std::chrono::seconds(10)));
  CHECK(progress_of(c, 1, *id).succeeded);
  CHECK(c[1].reassigner->throttle() == 0);
}

TEST_CASE("a running move reports its rate, its ETA, and a stall with what it waits for", "[reassigner][progress]") {
  in_process_cluster c(2, 4096);
  seed(c, 200);
  cluster::reassigner_options o;
  o.stall_seconds = 0.3;
  o.throttle_bytes_per_sec = 4096;
  c.rebuild_reassigner(1, o);
  auto id = c[1].reassigner->start(c.io.get_executor(), orders0, broker_id("b2"));
  REQUIRE(id);
  REQUIRE(c.run_until([&] { return progress_of(c, 1, *id).bytes_copied >= 8192; }));
  auto p = progress_of(c, 1, *id);
  CHECK(p.source == "b1");
  CHECK(p.rate_bytes_per_sec > 0);
  CHECK(p.eta_seconds > 0);
  CHECK(p.bytes_total > p.bytes_copied);
  REQUIRE(c.run_until([&] { return progress_of(c, 1, *id).stalled; }));
  CHECK_THAT(progress_of(c, 1, *id).stalled_reason, Catch::Contains("throttle"));
  REQUIRE(c[1].reassigner->cancel(*id));
  REQUIRE(c.run_until([&] { return progress_of(c, 1, *id).finished; }));
}

TEST_CASE("a broker discards only a copy it neither serves nor is being handed", "[service][discard]") {
  in_process_cluster c(2, 4096);
  seed(c, 20);
  transport::request r;
  r.path = "/cluster/discard";
  r.params = {{"topic", "orders"}, {"partition", "0"}};
  r.headers[transport::header_token] = "secret";
  auto refused = c[1].service->handle(r);
  CHECK(refused.status == 409);
  CHECK(*c[1].store.end_offset(orders0) > 0);
  // b2 holds a copy of a partition b1 serves (as a cancelled move leaves it).
  REQUIRE(c[2].store.ensure_topic("orders", 2));
  REQUIRE(c[2].ownership->record({orders0, broker_id("b1"), 0, false}));
  REQUIRE(c[2].store.append_at(orders0, 0, log_bytes(c[1].store, orders0)));
  auto done = c[2].service->handle(r);
  CHECK(done.status == 200);
  CHECK(*c[2].store.end_offset(orders0) == 0);
  CHECK(*c[1].store.end_offset(orders0) > 0);
}

TEST_CASE("a source never discards its copy while its move is running or journaled", "[service][discard]") {
  in_process_cluster c(2, 4096);
  seed(c, 50);
  c.net.set_delay(std::chrono::milliseconds(60));
  auto id = c[1].reassigner->start(c.io.get_executor(), orders0, broker_id("b2"));
  REQUIRE(id);
  transport::request r;
  r.path = "/cluster/discard";
  r.params = {{"topic", "orders"}, {"partition", "0"}};
  r.headers[transport::header_token] = "secret";
  // After the cutover b1 no longer serves the partition, but its move may still roll back onto this copy.
  REQUIRE(c.run_until([&] {
    auto s = progress_of(c, 1, *id).step;
    return s == "drain" || s == "offsets" || s == "confirm";
  }));
  auto refused = c[1].service->handle(r);
  CHECK(refused.status == 409);
  CHECK_THAT(refused.body, Catch::Contains("journaled"));
  CHECK(*c[1].store.end_offset(orders0) > 0);
  REQUIRE(c.run_until([&] { return progress_of(c, 1, *id).finished; }));
  CHECK(progress_of(c, 1, *id).succeeded);
  // Moved and confirmed: b1 reports the copy it still holds (the balancer counts it in b1's disk), and it may go.
  auto loads = c[1].service->handle([] {
    auto q = transport::get_request("/cluster/loads");
    q.headers[transport::header_token] = "secret";
    return q;
  }());
  REQUIRE(loads.status == 200);
  CHECK(cluster::wire::read_load_report(loads.body)->held_bytes == *c[1].store.end_offset(orders0));
  CHECK(c[1].service->handle(r).status == 200);
  CHECK(*c[1].store.end_offset(orders0) == 0);
  CHECK(*c[2].store.end_offset(orders0) > 0);
}

TEST_CASE("a copy is kept when the last check under the gate says no", "[service][discard]") {
  in_process_cluster c(2, 4096);
  seed(c, 20);
  REQUIRE(c[2].store.ensure_topic("orders", 2));
  REQUIRE(c[2].ownership->record({orders0, broker_id("b1"), 0, false}));
  REQUIRE(c[2].store.append_at(orders0, 0, log_bytes(c[1].store, orders0)));
  bool asked = false;
  auto kept = cluster::discard_unserved_copy(c[2].state(), broker_id("b2"), orders0, {}, [&]() -> status {
    asked = true;
    return {errc::conflict, "b1 does not serve it now"};
  });
  CHECK(asked);
  CHECK(kept.code() == errc::conflict);
  CHECK(*c[2].store.end_offset(orders0) > 0);
  CHECK(cluster::discard_unserved_copy(c[2].state(), broker_id("b2"), orders0, {}, [] { return status{}; }));
  CHECK(*c[2].store.end_offset(orders0) == 0);
}
