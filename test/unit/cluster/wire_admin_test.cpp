// The admin routes' messages between brokers: the stray steps (lib/cluster/wire_strays.hpp) and the drain mark
// (lib/cluster/wire_json.hpp). Each written and read in one place, round trips intact, a request's unknown field or
// action refused, a peer's answer read leniently.
#include <catch2/catch.hpp>

#include "cluster/wire_json.hpp"
#include "cluster/wire_strays.hpp"

using namespace moonmq;
using cluster::wire::stray_step;

TEST_CASE("stray steps: every action round-trips with its own fields", "[wire][strays]") {
  stray_step append{stray_step::kind::append, {"orders", 2}};
  append.from = 4096;
  auto a = cluster::wire::read_stray_step(cluster::wire::write(append));
  REQUIRE(a);
  CHECK(a->action == stray_step::kind::append);
  CHECK(a->partition == topic_partition{"orders", 2});
  CHECK(a->from == 4096);

  stray_step clear{stray_step::kind::clear, {"orders", 0}};
  clear.producer_id = 77;
  clear.resumed = true;
  auto c = cluster::wire::read_stray_step(cluster::wire::write(clear));
  REQUIRE(c);
  CHECK(c->action == stray_step::kind::clear);
  CHECK(c->producer_id == 77);
  CHECK(c->resumed);

  stray_step discard{stray_step::kind::discard, {"orders", 1}};
  discard.appended = true;
  auto d = cluster::wire::read_stray_step(cluster::wire::write(discard));
  REQUIRE(d);
  CHECK(d->action == stray_step::kind::discard);
  CHECK(d->appended);

  auto k = cluster::wire::read_stray_step(cluster::wire::write(stray_step{stray_step::kind::check, {"t", 0}}));
  REQUIRE(k);
  CHECK(k->action == stray_step::kind::check);
}

TEST_CASE("stray steps: an unknown action, an unknown field and a bad partition are refused", "[wire][strays]") {
  auto bad = cluster::wire::read_stray_step(R"({"action":"merge","topic":"t","partition":0})");
  REQUIRE_FALSE(bad);
  CHECK(bad.message().find("unknown action 'merge'") != std::string::npos);
  CHECK_FALSE(cluster::wire::read_stray_step(R"({"action":"check","topic":"t","partition":0,"force":true})"));
  CHECK_FALSE(cluster::wire::read_stray_step(R"({"action":"check","topic":"t","partition":-1})"));
  CHECK_FALSE(cluster::wire::read_stray_step(R"({"action":"check","topic":"t"})"));
}

TEST_CASE("stray answers: what a holder writes is what the runner reads, and a newer field is left alone",
          "[wire][strays]") {
  cluster::append_step step;
  step.owner = broker_id("b2");
  step.next = 900;
  step.done = false;
  step.copied = 3;
  step.already = 1;
  step.skipped = 2;
  step.runs = {{0, 100, 5000, 5100}, {120, 200, 5200, 5280}};
  auto read = cluster::wire::read_append_step({200, cluster::wire::write(step), "application/json"});
  REQUIRE(read);
  CHECK(read->owner == broker_id("b2"));
  CHECK(read->next == 900);
  CHECK(read->copied == 3);
  CHECK(read->already == 1);
  CHECK(read->skipped == 2);
  REQUIRE(read->runs.size() == 2);
  CHECK(read->runs[1].stray_first == 120);
  CHECK(read->runs[1].last == 5280);

  cluster::stray_info info{broker_id("b1"), 42, 1 << 20};
  auto i = cluster::wire::read_stray_info({200, cluster::wire::write(info), "application/json"});
  REQUIRE(i);
  CHECK(i->owner == broker_id("b1"));
  CHECK(i->producer_id == 42);
  CHECK(i->size_bytes == 1u << 20);

  auto cleared = cluster::wire::read_cleared({200, R"({"cleared":true,"took_ms":3})", "application/json"});
  REQUIRE(cleared);
  CHECK(*cleared);

  // A refusal is the peer's error; an answer without a required field is an error too.
  auto refused = cluster::wire::read_stray_info(
      {409, R"({"error":"conflict","message":"t-0 moved meanwhile"})", "application/json"});
  REQUIRE_FALSE(refused);
  CHECK(refused.message().find("moved meanwhile") != std::string::npos);
  CHECK_FALSE(cluster::wire::read_append_step({200, R"({"copied":3})", "application/json"}));
}

TEST_CASE("drain mark: round-trips, and a mark without its fields is refused", "[wire][drain]") {
  auto m = cluster::wire::read_drain_mark(cluster::wire::write(cluster::wire::drain_mark{"b3", true}));
  REQUIRE(m);
  CHECK(m->broker == "b3");
  CHECK(m->draining);
  CHECK_FALSE(cluster::wire::read_drain_mark(R"({"broker":"b3"})"));
  CHECK_FALSE(cluster::wire::read_drain_mark(R"({"broker":"b3","draining":"yes"})"));
  CHECK_FALSE(cluster::wire::read_drain_mark(R"({"broker":"b3","draining":true,"force":1})"));
}
