// One server per partition, always: each way a move was found to lose acknowledged records (issue 15: A-E), as a
// deterministic in-process test over the loopback network, with and without the replicated (Raft-backed) table.
// After every fault and at the end, at most one broker serves each partition, and every acknowledged record is
// still at its offset on the one that does.
#include <catch2/catch.hpp>

#include <asio/detached.hpp>

#include "moonmq/cluster/cluster_metrics.hpp"
#include "support/forwarding_store.hpp"
#include "support/in_process_cluster.hpp"
#include "support/manual_runtime.hpp"

using namespace moonmq;
using namespace moonmq::test;
using transport::fate;

namespace {

const topic_partition t0{"t", 0};

/// The brokers that serve `tp` (among those that hold it), by number.
std::vector<int> servers(in_process_cluster& c, const topic_partition& tp) {
  std::vector<int> out;
  for (int i = 1; i <= static_cast<int>(c.size()); ++i)
    if (c[i].store.end_offset(tp) && c[i].serves(tp)) out.push_back(i);
  return out;
}

/// b3 (or `at`) holds topic t with two partitions and `n` records in partition 0.
void seed(in_process_cluster& c, int n, int at = 3) {
  REQUIRE(c[at].store.ensure_topic("t", 2));
  for (int i = 0; i < n; ++i) REQUIRE(c[at].store.append(t0, {rec("r" + std::to_string(i) + std::string(80, 'x'))}));
}

/// Every (offset, value) acknowledged is there on `broker`.
void check_acked(in_process_cluster& c, int broker, const std::vector<std::pair<std::uint64_t, std::string>>& acked) {
  auto all = c[broker].store.read(t0, 0, 1u << 30);
  REQUIRE(all);
  std::map<std::uint64_t, std::string> by_offset;
  for (const auto& v : storage::decode_frames(all->bytes.view(), 0)) by_offset[v.offset] = std::string(v.value);
  for (const auto& [off, value] : acked) {
    INFO("offset " << off);
    REQUIRE(by_offset.count(off));
    CHECK(by_offset.at(off) == value);
  }
}

bool is_confirm_to(const transport::request& r, const std::string& dest) {
  return r.path == "/cluster/owner" && r.method == "POST" &&
         r.body.find("\"broker\":\"" + dest + "\"") != std::string::npos;
}

}  // namespace

TEST_CASE("A: recovery never rolls back a move the destination confirmed, even after it moved the partition on",
          "[ownership][safety]") {
  const bool replicated = GENERATE(false, true);
  INFO((replicated ? "replicated table" : "local tables"));
  in_process_cluster c(3, 4096, 1, replicated);
  seed(c, 30);
  // b1 records the confirm; its answer is lost, then the link b3-b1 is cut. Under Raft the log takes the confirm
  // while b3 never hears that it did.
  bool cut = false;
  c.net.set_hook([&](const std::string& from, const std::string& to, const transport::request& r) {
    if (from == "b3" && to == "b1" && is_confirm_to(r, "b1")) {
      if (cut) return fate::drop;
      cut = true;
      return fate::lose_response;
    }
    return fate::deliver;
  });
  c.log.hook = [&](const std::string& from, const raft::entry& e) {
    const bool confirm = from == "b3" && e.data.find("\"broker\":\"b1\"") != std::string::npos &&
                         e.data.find("\"handover\":false") != std::string::npos;
    if (!confirm) return test_log::fate::append;
    cut = true;
    return test_log::fate::lose_answer;
  };
  REQUIRE_FALSE(c.move(3, t0, 1));
  REQUIRE(c[3].journal->pending().size() == 1);
  CHECK(c[3].journal->pending()[0].drained);
  CHECK(servers(c, t0) == std::vector<int>{1});  // the confirm landed: b1 serves, b3 does not

  // b1 moves the partition on to b2 and takes records there.
  REQUIRE(c.move(1, t0, 2));
  std::vector<std::pair<std::uint64_t, std::string>> acked;
  for (int i = 0; i < 5; ++i) {
    auto r = c.produce(2, t0, {rec("after-" + std::to_string(i))});
    REQUIRE(r);
    acked.emplace_back(r->offsets[0], "after-" + std::to_string(i));
  }
  CHECK(servers(c, t0) == std::vector<int>{2});

  // The link heals and b3 resolves its journal: the move was confirmed, so nothing is rolled back.
  c.net.set_hook({});
  c.log.hook = {};
  c.restart(3);
  if (replicated) c.log.catch_up("b3");
  CHECK(c.run(c[3].reassigner->recover()) == 0);
  CHECK(c[3].journal->pending().empty());
  CHECK(servers(c, t0) == std::vector<int>{2});
  check_acked(c, 2, acked);
  // A produce through b3 reaches the one owner.
  auto r = c.produce(3, t0, {rec("via b3")});
  REQUIRE(r);
  CHECK(r->broker == broker_id("b2"));
}

TEST_CASE("B: a confirm that arrives late never makes a second server, and the source never rolls back after it "
          "was sent",
          "[ownership][safety]") {
  in_process_cluster c(3, 4096);
  seed(c, 30);
  // Every confirm to b1 times out; the first is still in flight and will arrive later.
  std::optional<transport::request> in_flight;
  c.net.set_hook([&](const std::string& from, const std::string& to, const transport::request& r) {
    if (from == "b3" && to == "b1" && is_confirm_to(r, "b1")) {
      if (!in_flight) in_flight = r;
      return fate::drop;
    }
    return fate::deliver;
  });
  REQUIRE_FALSE(c.move(3, t0, 1));
  REQUIRE(in_flight);
  CHECK(servers(c, t0).empty());  // nobody, never two

  // Recovery while the link is still down: the move stays in doubt instead of being rolled back.
  c.net.partition("b3", "b1");
  CHECK(c.run(c[3].reassigner->recover()) == 1);
  CHECK(servers(c, t0).empty());
  CHECK_FALSE(c[3].serves(t0));

  // The late confirm lands: b1 serves, and only b1.
  REQUIRE(c[1].service->handle(*in_flight).status == 200);
  CHECK(servers(c, t0) == std::vector<int>{1});
  c.net.heal();
  c.net.set_hook({});
  CHECK(c.run(c[3].reassigner->recover()) == 0);
  CHECK(servers(c, t0) == std::vector<int>{1});
  auto r = c.produce(3, t0, {rec("forwarded")});
  REQUIRE(r);
  CHECK(r->broker == broker_id("b1"));
}

TEST_CASE("B: a confirm for a move that was rolled back is refused by the destination", "[ownership][safety]") {
  in_process_cluster c(2, 4096);
  seed(c, 30, 1);
  const std::uint64_t copy_end = *c[1].store.end_offset(t0);
  // A record lands in the tail during the copy; the tail's first batch fails: the drain fails and the move is
  // rolled back (no confirm was ever sent).
  int batches = 0;
  c.net.set_hook([&](const std::string&, const std::string&, const transport::request& r) {
    if (r.path != "/cluster/append" || !r.params.count("expected_offset")) return fate::deliver;
    if (++batches == 2) (void)c[1].router->try_local(t0, {rec("tail")});
    if (std::stoull(r.params.at("expected_offset")) >= copy_end && !r.body.empty()) return fate::drop;
    return fate::deliver;
  });
  REQUIRE_FALSE(c.move(1, t0, 2));
  CHECK(servers(c, t0) == std::vector<int>{1});
  CHECK(*c[1].ownership->entry(t0) == cluster::ownership_entry{t0, broker_id("b1"), 2, false});
  // A replayed or forged confirm of that version (1) changes nothing on the destination.
  transport::request confirm;
  confirm.method = "POST";
  confirm.path = "/cluster/owner";
  confirm.headers[transport::header_token] = "secret";
  confirm.body = R"({"topic":"t","partition":0,"broker":"b2","version":1,"expect":1,"expect_handover":true})";
  auto resp = c[2].service->handle(confirm);
  CHECK(resp.status == 409);
  CHECK_THAT(resp.body, Catch::Contains("\"current\":{\"broker\":\"b1\",\"version\":2"));
  CHECK(servers(c, t0) == std::vector<int>{1});
}

namespace {

/// A partition store that runs `after_ensure` right after each ensure_topic: the moment a produce may arrive.
struct hooked_store final : forwarding_store {
  std::function<void()> after_ensure;
  result<std::int32_t> ensure_topic(const std::string& t, std::int32_t n) override {
    auto r = inner.ensure_topic(t, n);
    if (after_ensure) after_ensure();
    return r;
  }
};

}  // namespace

TEST_CASE("C: a partition created on a peer's behalf never takes a produce, even one landing right after it exists",
          "[ownership][safety]") {
  hooked_store store;
  storage::memory_offset_store offsets;
  auto table = std::move(*cluster::open_local_ownership_table(
      broker_id("b2"), std::make_unique<storage::memory_state_file>("b2/cluster-assignments.json")));
  auto fence = std::move(*cluster::open_file_controller_fence(
      broker_id("b2"), std::make_unique<storage::memory_state_file>("b2/controller-epoch.json")));
  cluster::traffic counters;
  cluster::partition_gates gates;
  null_logger log;
  cluster::producer_states producers{store};
  cluster::cluster_state st{store, offsets, *table, *fence, counters, gates, producers, log};
  transport::loopback_network net;
  auto link = net.transport_for("b2");
  transport::peer_client peers(*link, {broker_id("b2"), "secret", {}, std::chrono::milliseconds(200)});
  test::manual_runtime rt;
  cluster::router router(st, peers, rt);
  cluster::cluster_service service({broker_id("b2"), "secret", {}, 64u << 20, {}, {}}, st);

  // A client produces to t-1 on b2 the instant the partition exists (b3's ensure is creating it for a move of t-0).
  std::optional<std::variant<result<cluster::produce_result>, broker_id>> landed;
  store.after_ensure = [&] { landed = router.try_local({"t", 1}, {rec("racing produce")}); };
  transport::request ensure;
  ensure.method = "POST";
  ensure.path = "/cluster/ensure";
  ensure.headers[transport::header_token] = "secret";
  ensure.headers[transport::header_from] = "b3";
  ensure.body = R"({"topic":"t","partitions":2})";
  REQUIRE(service.handle(ensure).status == 200);
  REQUIRE(landed);
  // Not appended here: routed to b3, which serves t-1.
  REQUIRE(std::holds_alternative<broker_id>(*landed));
  CHECK(std::get<broker_id>(*landed) == broker_id("b3"));
  CHECK(*store.end_offset({"t", 1}) == 0);
  CHECK_FALSE(cluster::serves(*table, {"t", 1}, broker_id("b2")));
  CHECK_FALSE(cluster::serves(*table, {"t", 0}, broker_id("b2")));
}

TEST_CASE("D: a restarted broker serves nothing until its state machine has caught up, then only what the log says",
          "[ownership][safety][raft]") {
  in_process_cluster c(3, 4096, 1, true);
  seed(c, 20, 1);
  REQUIRE(c.move(1, t0, 3));
  auto acked = c.produce(1, t0, {rec("on b3")});
  REQUIRE(acked);
  CHECK(acked->broker == broker_id("b3"));
  c.restart(1);  // kill -9 and start: the log is not applied yet
  CHECK_FALSE(c[1].serves(t0));
  CHECK_FALSE(c[1].serves({"t", 1}));  // not even a partition that never moved
  auto local = c[1].router->try_local({"t", 1}, {rec("too early")});
  CHECK(std::holds_alternative<broker_id>(local));  // waited out, never appended
  CHECK(*c[1].store.end_offset({"t", 1}) == 0);
  auto moved = c[1].reassigner->start(c.io.get_executor(), {"t", 1}, broker_id("b2"));
  REQUIRE_FALSE(moved);
  CHECK(moved.code() == errc::not_owner);
  c.log.catch_up("b1");
  CHECK(c[1].serves({"t", 1}));
  CHECK(servers(c, t0) == std::vector<int>{3});
  auto after = c.produce(1, t0, {rec("after restart")});
  REQUIRE(after);
  CHECK(after->broker == broker_id("b3"));
}

TEST_CASE("E: a cutover the log took although the source heard otherwise is decided by the log, never left with no "
          "server",
          "[ownership][safety][raft]") {
  in_process_cluster c(3, 4096, 1, true);
  seed(c, 20, 1);
  // b1's cutover entry is not committed in time (b1 hears that it was not taken) and commits later; meanwhile b1 is
  // cut off from the leader: its further proposals fail.
  bool cut = false;
  c.log.hook = [&](const std::string& from, const raft::entry& e) {
    if (from != "b1") return test_log::fate::append;
    if (cut) return test_log::fate::refuse;
    if (e.data.find("\"handover\":true") != std::string::npos) {
      cut = true;
      return test_log::fate::hold;
    }
    return test_log::fate::append;
  };
  REQUIRE_FALSE(c.move(1, t0, 3));
  CHECK(servers(c, t0).empty());  // in doubt: nobody serves, never two
  REQUIRE(c[1].journal->pending().size() == 1);
  CHECK_FALSE(c[1].journal->pending()[0].drained);
  CHECK(c.run(c[1].reassigner->recover()) == 1);  // still cut off from the log
  CHECK(servers(c, t0).empty());
  c.log.release();  // the cutover commits after all
  CHECK(servers(c, t0).empty());

  cut = false;
  CHECK(c.run(c[1].reassigner->recover()) == 0);
  CHECK(servers(c, t0) == std::vector<int>{1});
  // Every broker learned the rollback from the log; b3's leftover reservation is older and does not count.
  for (int i = 1; i <= 3; ++i) CHECK(c[i].ownership->entry(t0)->owner == broker_id("b1"));
  auto r = c.produce(2, t0, {rec("routed")});
  REQUIRE(r);
  CHECK(r->broker == broker_id("b1"));
  // And the move can be made again.
  c.log.hook = {};
  REQUIRE(c.move(1, t0, 3));
  CHECK(servers(c, t0) == std::vector<int>{3});
}

TEST_CASE("E: a cutover whose answer was lost is rolled back through the log, after it", "[ownership][safety][raft]") {
  in_process_cluster c(3, 4096, 1, true);
  seed(c, 20, 1);
  bool lost = false;
  c.log.hook = [&](const std::string&, const raft::entry& e) {
    if (lost || e.data.find("\"handover\":true") == std::string::npos) return test_log::fate::append;
    lost = true;
    return test_log::fate::lose_answer;
  };
  REQUIRE_FALSE(c.move(1, t0, 3));
  CHECK(c[1].journal->pending().empty());
  CHECK(servers(c, t0) == std::vector<int>{1});
  for (int i = 1; i <= 3; ++i) CHECK(c[i].ownership->entry(t0)->version == 2);
}

TEST_CASE("recovery of one journaled move leaves alone a move of another partition that is running",
          "[ownership][safety]") {
  in_process_cluster c(3, 4096);
  seed(c, 30, 1);
  const topic_partition t1{"t", 1};
  for (int i = 0; i < 10; ++i) REQUIRE(c[1].store.append(t1, {rec("q" + std::to_string(i))}));
  // A move of t-1 to b3 whose confirms are lost: journaled, drained.
  c.net.set_hook([&](const std::string&, const std::string& to, const transport::request& r) {
    return to == "b3" && is_confirm_to(r, "b3") ? fate::drop : fate::deliver;
  });
  REQUIRE_FALSE(c.move(1, t1, 3));
  REQUIRE(c[1].journal->pending().size() == 1);
  // A move of t-0 to b2: a record lands in its tail, and while the tail is on its way, a recovery runs alongside.
  const std::uint64_t copy_end = *c[1].store.end_offset(t0);
  int batches = 0;
  bool recovering = false;
  c.net.set_delay(std::chrono::milliseconds(1));
  c.net.set_hook([&](const std::string&, const std::string& to, const transport::request& r) {
    if (to != "b2" || r.path != "/cluster/append" || !r.params.count("expected_offset")) return fate::deliver;
    if (++batches == 2) (void)c[1].router->try_local(t0, {rec("in the tail")});
    if (!recovering && std::stoull(r.params.at("expected_offset")) >= copy_end && !r.body.empty()) {
      recovering = true;
      asio::co_spawn(c.io, c[1].reassigner->recover(), asio::detached);
    }
    return fate::deliver;
  });
  auto id = c[1].reassigner->start(c.io.get_executor(), t0, broker_id("b2"));
  REQUIRE(id);
  c.settle_moves();
  for (int i = 0; i < 400 && !c[1].journal->pending().empty(); ++i) {
    c.io.run_for(std::chrono::milliseconds(5));
    c.io.restart();
  }
  REQUIRE(recovering);
  CHECK(c[1].journal->pending().empty());
  bool succeeded = false;
  for (const auto& p : c[1].reassigner->progress())
    if (p.id == *id) succeeded = p.succeeded;
  CHECK(succeeded);
  CHECK(servers(c, t0) == std::vector<int>{2});
  CHECK(servers(c, t1) == std::vector<int>{3});
  check_acked(c, 2, {});
  CHECK(log_bytes(c[2].store, t0) == log_bytes(c[1].store, t0));
}

TEST_CASE("a journal entry written before ownership versions is resolved as that code did", "[ownership][safety]") {
  in_process_cluster c(2, 4096);
  seed(c, 10, 1);
  // What the older code left after a crash between cutover and confirm: b1 names b2 (version 0), b2 still names b1.
  REQUIRE(c[1].ownership->record({t0, broker_id("b2"), 0, false}));
  REQUIRE(c[2].store.ensure_topic("t", 2));
  REQUIRE(c[2].ownership->record({t0, broker_id("b1"), 0, false}));
  REQUIRE(c[1].journal_file->replace(R"({"moves":[{"topic":"t","partition":0,"dest":"b2"}]})"));
  c.restart(1);
  REQUIRE(c[1].journal->pending().size() == 1);
  CHECK(c[1].journal->pending()[0].legacy);
  CHECK(c.run(c[1].reassigner->recover()) == 0);
  CHECK(servers(c, t0) == std::vector<int>{1});
  CHECK(c[1].journal->pending().empty());
}

TEST_CASE("a journaled move whose topic was deleted and made again is dropped, never decided for the new topic",
          "[ownership][safety][topics]") {
  // A move of x-0 from b1 to b2 was journaled in its cutover; then x was deleted and made again with x-0 on b1.
  in_process_cluster c(2, 4096, 1, false, false, /*with_topics=*/true);
  auto decide = [&](const cluster::topic_change& change) {
    const auto coordinator = c[1].topics->coordinator_of("x");
    auto& on = coordinator == broker_id("b1") ? c[1] : c[2];
    auto& other = coordinator == broker_id("b1") ? c[2] : c[1];
    auto r = on.topics->decide(change);
    REQUIRE(r);
    REQUIRE(other.topics->learn(*r));
    return *r;
  };
  const auto first = decide({cluster::topic_op::create, "x", 0, {broker_id("b1")}});
  const topic_partition x0{"x", 0};
  // Drained: recovery would confirm it on b2, which holds the new topic's logs (it owns x-1 now).
  REQUIRE(c[1].journal->add({x0, broker_id("b2"), 1, true, false, first.created}));
  decide({cluster::topic_op::remove, "x", first.version, {}});
  const auto again = decide({cluster::topic_op::create, "x", first.version + 1, {broker_id("b1"), broker_id("b2")}});
  REQUIRE(again.created != first.created);
  REQUIRE(c[2].store.partition_count("x"));
  REQUIRE(c.produce(1, x0, {rec("acknowledged in the new x")}));
  CHECK(c.run(c[1].reassigner->recover()) == 0);
  CHECK(c[1].journal->pending().empty());
  // The new x-0 is b1's: nothing rolled it back or confirmed it elsewhere.
  CHECK(c[1].serves(x0));
  CHECK_FALSE((c[2].serves(x0) && c[2].store.partition_count("x").ok()));
  auto e = c[1].ownership->entry(x0);
  CHECK((!e || e->owner == broker_id("b1")));
}

TEST_CASE("recovery of a move the log confirmed does not ask the destination for the offsets again",
          "[ownership][safety][raft]") {
  in_process_cluster c(3, 4096, 1, true);
  seed(c, 20);
  REQUIRE(c[3].offsets.commit("billing", t0, 7));
  // The log takes the confirm, and its answer is lost: b3 keeps the move journaled, drained.
  c.log.hook = [&](const std::string& from, const raft::entry& e) {
    const bool confirm = from == "b3" && e.data.find("\"broker\":\"b1\"") != std::string::npos &&
                         e.data.find("\"handover\":false") != std::string::npos;
    return confirm ? test_log::fate::lose_answer : test_log::fate::append;
  };
  REQUIRE_FALSE(c.move(3, t0, 1));
  REQUIRE(c[3].journal->pending().size() == 1);
  CHECK(*c[1].offsets.committed("billing", t0) == 7);
  // From now on b1 takes no offsets. The move is decided, so recovery resolves it without them; before, it asked
  // b1 for them first and stayed unresolved for as long as b1 would not take them.
  c.log.hook = {};
  int pushes = 0;
  c.net.set_hook([&](const std::string&, const std::string&, const transport::request& r) {
    if (r.path != "/cluster/offsets") return fate::deliver;
    ++pushes;
    return fate::drop;
  });
  c.restart(3);
  c.log.catch_up("b3");
  CHECK(c.run(c[3].reassigner->recover()) == 0);
  CHECK(c[3].journal->pending().empty());
  CHECK(pushes == 0);
  CHECK(servers(c, t0) == std::vector<int>{1});
}
