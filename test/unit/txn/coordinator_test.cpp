// The transaction coordinator's rules: sessions and epochs, the phases of a transaction, ends that repeat, timeouts.
#include <catch2/catch.hpp>

#include "moonmq/txn/coordinator.hpp"

using namespace moonmq;
using namespace moonmq::txn;

namespace {
const topic_partition t0{"t", 0}, t1{"t", 1};
std::map<topic_partition, broker_id> on_b1(std::initializer_list<topic_partition> tps) {
  std::map<topic_partition, broker_id> out;
  for (const auto& tp : tps) out[tp] = broker_id("b1");
  return out;
}
}  // namespace

TEST_CASE("txn coordinator: init gives a stable producer id and a growing epoch that fences older sessions", "[txn]") {
  coordinator c;
  auto a = c.init("tx", 77, 0);
  REQUIRE(a);
  CHECK(a->producer_id == 77);
  CHECK(a->epoch == 0);
  auto b = c.init("tx", 99, 1);  // the same id again: same producer, next epoch
  REQUIRE(b);
  CHECK(b->producer_id == 77);
  CHECK(b->epoch == 1);
  auto old = c.add_partitions("tx", 77, 0, on_b1({t0}), 2);
  REQUIRE_FALSE(old);
  CHECK(old.code() == errc::producer_fenced);
  CHECK(c.add_partitions("tx", 78, 1, on_b1({t0}), 2).code() == errc::producer_fenced);  // not its producer
  CHECK(c.add_partitions("tx", 77, 5, on_b1({t0}), 2).code() == errc::invalid_argument);  // never given
  CHECK(c.add_partitions("nobody", 77, 1, on_b1({t0}), 2).code() == errc::not_found);
}

TEST_CASE("txn coordinator: commit prepares with a bumped epoch and completes when every marker is acknowledged",
          "[txn]") {
  coordinator c;
  REQUIRE(c.init("tx", 5, 0));
  REQUIRE(c.add_partitions("tx", 5, 0, on_b1({t0, t1}), 10));
  CHECK(c.find("tx")->phase == txn_phase::ongoing);
  auto e = c.end("tx", 5, 0, true, 20);
  REQUIRE(e);
  CHECK(e->phase == txn_phase::prepare_commit);
  CHECK(e->epoch == 1);  // markers carry the bumped epoch: the producer's next transaction uses it
  CHECK(e->markers_pending == std::set<topic_partition>{t0, t1});
  CHECK(c.unfinished().size() == 1);
  // Adding to a transaction being completed, with its old epoch: fenced.
  CHECK(c.add_partitions("tx", 5, 0, on_b1({t0}), 21).code() == errc::producer_fenced);
  // With the new epoch, the next transaction waits until this one is complete.
  CHECK(c.add_partitions("tx", 5, 1, on_b1({t0}), 21).code() == errc::unavailable);
  c.marker_written("tx", 0, t0);  // a stale acknowledgement counts for nothing
  CHECK(c.find("tx")->markers_pending.size() == 2);
  c.marker_written("tx", 1, t0);
  c.marker_written("tx", 1, t1);
  CHECK(c.find("tx")->phase == txn_phase::complete_commit);
  CHECK(c.unfinished().empty());
  // The end repeated (a lost answer): the same outcome; the opposite end is refused.
  auto again = c.end("tx", 5, 0, true, 30);
  REQUIRE(again);
  CHECK(again->phase == txn_phase::complete_commit);
  CHECK(c.end("tx", 5, 0, false, 30).code() == errc::conflict);
  // The next transaction at epoch 1.
  REQUIRE(c.add_partitions("tx", 5, 1, on_b1({t1}), 40));
  CHECK(c.find("tx")->partitions.size() == 1);
}

TEST_CASE("txn coordinator: offsets wait for the markers, a re-init aborts the open transaction, and a timeout "
          "aborts with a bumped epoch",
          "[txn]") {
  coordinator c;
  REQUIRE(c.init("tx", 5, 0));
  REQUIRE(c.add_partitions("tx", 5, 0, on_b1({t0}), 0));
  REQUIRE(c.add_offsets("tx", 5, 0, {{"g", t1, 42}}, on_b1({t1}), 0));
  REQUIRE(c.end("tx", 5, 0, true, 1));
  CHECK(c.find("tx")->offsets_pending);
  c.marker_written("tx", 1, t0);
  CHECK(c.find("tx")->phase == txn_phase::prepare_commit);  // offsets still to write
  c.offsets_written("tx", 1);
  CHECK(c.find("tx")->phase == txn_phase::complete_commit);

  // A new session while a transaction is open: it is aborted first.
  REQUIRE(c.add_partitions("tx", 5, 1, on_b1({t0}), 100));
  auto fenced = c.init("tx", 9, 101);
  REQUIRE(fenced);
  CHECK(fenced->phase == txn_phase::prepare_abort);
  CHECK(fenced->epoch == 2);
  CHECK(c.init("tx", 9, 102).code() == errc::unavailable);  // until its markers are delivered
  // The fenced session's own end is not taken for a repeat: it must not learn the new epoch.
  CHECK(c.end("tx", 5, 1, false, 102).code() == errc::producer_fenced);
  c.marker_written("tx", 2, t0);
  auto next = c.init("tx", 9, 103);
  REQUIRE(next);
  CHECK(next->epoch == 3);
  CHECK(next->phase == txn_phase::empty);

  // Timeout.
  REQUIRE(c.add_partitions("tx", 5, 3, on_b1({t0}), 1000));
  CHECK(c.expire(1500, 1000).empty());
  CHECK(c.expire(2001, 1000) == std::vector<std::string>{"tx"});
  CHECK(c.find("tx")->phase == txn_phase::prepare_abort);
  CHECK(c.find("tx")->reason == "timeout");
  CHECK(c.end("tx", 5, 3, true, 2002).code() == errc::producer_fenced);  // aborted by the coordinator: fenced
}

TEST_CASE("txn coordinator: an empty transaction ends at once, and the number of ids is bounded", "[txn]") {
  coordinator c(1);
  REQUIRE(c.init("a", 1, 0));
  auto e = c.end("a", 1, 0, true, 1);
  REQUIRE(e);
  CHECK(e->phase == txn_phase::complete_commit);
  CHECK(e->epoch == 1);
  CHECK(c.init("b", 2, 0).code() == errc::resource_exhausted);
}

TEST_CASE("txn coordinator: a transaction spans a bounded number of partitions and offsets", "[txn]") {
  coordinator c;
  REQUIRE(c.init("tx", 1, 0));
  std::map<topic_partition, broker_id> many;
  for (int p = 0; p < 10000; ++p) many[{"t", p}] = broker_id("b1");
  REQUIRE(c.add_partitions("tx", 1, 0, many, 0));
  REQUIRE(c.add_partitions("tx", 1, 0, on_b1({{"t", 9999}}), 0));  // one it has: no growth
  CHECK(c.add_partitions("tx", 1, 0, on_b1({{"t", 10000}}), 0).code() == errc::resource_exhausted);
  std::vector<txn_offset> offsets;
  for (int p = 0; p < 10001; ++p) offsets.push_back({"g", {"t", p}, 1});
  CHECK(c.add_offsets("tx", 1, 0, offsets, {}, 0).code() == errc::resource_exhausted);
  CHECK(c.find("tx")->offsets.empty());
}

TEST_CASE("txn coordinator: a partition added again keeps the owner it has, unless the add corrects it", "[txn]") {
  coordinator c;
  REQUIRE(c.init("tx", 5, 0));
  REQUIRE(c.add_partitions("tx", 5, 0, {{t0, broker_id("b1")}}, 10));
  // A correction (records landed on b2): replaces.
  REQUIRE(c.add_partitions("tx", 5, 0, {{t0, broker_id("b2")}}, 11, /*replace_owners=*/true));
  CHECK(c.find("tx")->partitions.at(t0) == broker_id("b2"));
  // A repeated add with a stale view (a retry, another broker's join): keeps b2; a new partition takes its owner.
  auto t = c.add_partitions("tx", 5, 0, {{t0, broker_id("b1")}, {t1, broker_id("b3")}}, 12);
  REQUIRE(t);
  CHECK(t->partitions.at(t0) == broker_id("b2"));
  CHECK(t->partitions.at(t1) == broker_id("b3"));
}

TEST_CASE("txn coordinator: a session that keeps its epoch numbers its ends, answers a repeated end, ends an empty "
          "transaction the other way, and is bumped only by what the coordinator aborts",
          "[txn]") {
  coordinator c;
  auto s = c.init("k", 42, 0, session_options{true, 5'000});
  REQUIRE(s);
  CHECK(s->keeps_epoch);
  REQUIRE(c.add_partitions("k", 42, 0, on_b1({t0}), 10));
  auto e = c.end("k", 42, 0, true, 20);
  REQUIRE(e);
  CHECK(e->phase == txn_phase::prepare_commit);
  CHECK(e->epoch == 0);  // kept
  CHECK(e->marker_number == 1);
  // A repeat while the markers are out: the same answer; the other decision is refused.
  CHECK(c.end("k", 42, 0, true, 21)->marker_number == 1);
  CHECK(c.end("k", 42, 0, false, 21).code() == errc::conflict);
  CHECK(c.add_partitions("k", 42, 0, on_b1({t0}), 22).code() == errc::unavailable);  // the next waits
  c.marker_written("k", 0, t0);
  CHECK(c.find("k")->phase == txn_phase::complete_commit);
  // Complete: the same decision again is answered; the other one ends an empty transaction, numbered 2.
  CHECK(c.end("k", 42, 0, true, 23)->marker_number == 1);
  auto empty = c.end("k", 42, 0, false, 24);
  REQUIRE(empty);
  CHECK(empty->phase == txn_phase::complete_abort);
  CHECK(empty->marker_number == 2);
  // The next transaction at the same epoch, timed out by the session's own timeout (5 s, not the 60 s given).
  REQUIRE(c.add_partitions("k", 42, 0, on_b1({t1}), 100));
  CHECK(c.expire(4'000, 60'000).empty());
  CHECK(c.expire(5'200, 60'000) == std::vector<std::string>{"k"});
  CHECK(c.find("k")->epoch == 1);  // bumped: the producer is fenced
  CHECK(c.find("k")->marker_number == 0);
  CHECK(c.end("k", 42, 0, true, 5'300).code() == errc::producer_fenced);
}

TEST_CASE("txn coordinator: a session that keeps its epoch stays within Kafka's 16-bit epochs", "[txn]") {
  coordinator c;
  REQUIRE(c.init("k", 1, 0, session_options{true, 0}));
  transaction t = *c.find("k");
  t.epoch = INT16_MAX - 2;
  c.restore(t);
  auto next = c.init("k", 2, 1, session_options{true, 0});
  REQUIRE(next);
  CHECK(next->producer_id == 2);
  CHECK(next->epoch == 0);
}
