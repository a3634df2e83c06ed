// The Reassigner's six steps over the loopback network, with faults injected at every step.
#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "moonmq/cluster/hand_moves.hpp"
#include "support/in_process_cluster.hpp"

using namespace moonmq;
using namespace moonmq::test;

namespace {

const topic_partition orders0{"orders", 0};

/// b1 holds orders (2 partitions) with `n` records in partition 0; b2 has nothing.
void seed(in_process_cluster& c, int n, std::size_t value_size = 100) {
  REQUIRE(c[1].store.ensure_topic("orders", 2));
  for (int i = 0; i < n; ++i)
    REQUIRE(c[1].store.append(orders0, {rec(std::to_string(i) + std::string(value_size, 'x'))}));
}

/// Exactly one of the brokers serves `tp`, and it is `expected`.
void check_single_owner(in_process_cluster& c, const topic_partition& tp, int expected) {
  for (std::size_t i = 1; i <= c.size(); ++i) {
    if (!c[static_cast<int>(i)].store.end_offset(tp)) continue;  // does not hold it at all
    INFO("broker b" << i);
    CHECK(c[static_cast<int>(i)].serves(tp) == (static_cast<int>(i) == expected));
  }
}

}  // namespace

TEST_CASE("a move copies every record at its offset and flips ownership on both sides", "[reassigner]") {
  in_process_cluster c(2, 4096);
  seed(c, 200);
  const std::string before = log_bytes(c[1].store, orders0);
  REQUIRE(c.move(1, orders0, 2));
  CHECK(log_bytes(c[2].store, orders0) == before);
  CHECK(*c[2].store.partition_count("orders") == 2);  // dest grew to the source's count
  CHECK_FALSE(c[1].serves(orders0));
  CHECK(*c[1].ownership->owner(orders0) == broker_id("b2"));
  CHECK(c[2].serves(orders0));
  // Both sides know the move's version: dest owns it at version 1, confirmed.
  CHECK(*c[2].ownership->entry(orders0) == cluster::ownership_entry{orders0, broker_id("b2"), 1, false});
  CHECK(*c[1].ownership->entry(orders0) == cluster::ownership_entry{orders0, broker_id("b2"), 1, false});
  // The partition dest created alongside is still b1's: dest does not serve an empty namesake of it.
  CHECK(*c[2].ownership->owner({"orders", 1}) == broker_id("b1"));
  CHECK_FALSE(c[2].serves({"orders", 1}));
  CHECK(c[2].ownership->entries().size() == 2);
  CHECK(c[1].journal->pending().empty());
  auto progress = c[1].reassigner->progress();
  REQUIRE(progress.size() == 1);
  CHECK(progress[0].succeeded);
  CHECK(progress[0].bytes_copied == before.size());
  CHECK(c.net.delivered("/cluster/append") >= 7);  // ~25 KB in batches of 4 KiB, then a sync
}

TEST_CASE("produces keep landing during a long copy and end up at the same offsets on the new owner",
          "[reassigner][produce]") {
  in_process_cluster c(2, 2048);
  seed(c, 100);
  std::vector<std::pair<std::uint64_t, std::string>> acked;
  int n = 0;
  // Every few migration batches, a producer on b1 appends a record: it lands in the copy or in the tail.
  c.net.set_hook([&](const std::string&, const std::string&, const transport::request& r) {
    if (r.path == "/cluster/append" && r.params.count("expected_offset") && ++n % 3 == 0) {
      auto local = c[1].router->try_local(orders0, {rec("during-" + std::to_string(n))});
      if (auto* done = std::get_if<result<cluster::produce_result>>(&local))
        if (*done) acked.push_back({(*done)->offsets[0], "during-" + std::to_string(n)});
    }
    return transport::fate::deliver;
  });
  REQUIRE(c.move(1, orders0, 2));
  c.net.set_hook({});
  REQUIRE_FALSE(acked.empty());
  CHECK(log_bytes(c[2].store, orders0) == log_bytes(c[1].store, orders0));
  auto all = c[2].store.read(orders0, 0, 1u << 30);
  auto views = storage::decode_frames(all->bytes.view(), 0);
  std::map<std::uint64_t, std::string> by_offset;
  for (const auto& v : views) by_offset[v.offset] = std::string(v.value);
  for (const auto& [off, value] : acked) CHECK(by_offset.at(off) == value);

  // After the move, a produce on b1 is forwarded and acknowledged with b2's offsets.
  auto after = c.produce(1, orders0, {rec("after-1"), rec("after-2")});
  REQUIRE(after);
  CHECK(after->broker == broker_id("b2"));
  auto r = c[2].store.read(orders0, after->offsets[1], 1000);
  CHECK(storage::decode_frames(r->bytes.view(), 0)[0].value == "after-2");
  CHECK(*c[1].store.end_offset(orders0) < *c[2].store.end_offset(orders0));
}

TEST_CASE("committed offsets follow the partition, higher wins on the destination", "[reassigner][offsets]") {
  in_process_cluster c(2, 4096);
  seed(c, 50);
  REQUIRE(c[1].offsets.commit("billing", orders0, 1234, "kafka metadata"));
  REQUIRE(c[1].offsets.commit("audit", orders0, 10));
  REQUIRE(c[2].offsets.commit("audit", orders0, 99));  // dest already knows a later one
  REQUIRE(c.move(1, orders0, 2));
  CHECK(*c[2].offsets.committed_with_metadata("billing", orders0) ==
        storage::committed_offset{1234, "kafka metadata"});  // the metadata goes along
  CHECK(*c[2].offsets.committed("audit", orders0) == 99);
}

TEST_CASE("a push of committed offsets that fails keeps the move from being confirmed, and a destination that "
          "owned the partition before never answers with its older offsets",
          "[reassigner][offsets]") {
  in_process_cluster c(2, 4096);
  seed(c, 50);
  REQUIRE(c[2].offsets.commit("billing", orders0, 216));  // b2 kept this from when it last owned orders-0
  REQUIRE(c[1].offsets.commit("billing", orders0, 240));
  int refused = 0;
  c.net.set_hook([&](const std::string&, const std::string&, const transport::request& r) {
    if (r.path != "/cluster/offsets") return transport::fate::deliver;
    ++refused;
    return transport::fate::drop;
  });
  REQUIRE_FALSE(c.move(1, orders0, 2));
  CHECK(refused >= 3);  // tried again, never skipped
  REQUIRE(c[1].journal->pending().size() == 1);
  CHECK_FALSE(c[2].serves(orders0));  // the destination does not answer for the partition, with 216 or anything
  CHECK_FALSE(c[1].serves(orders0));
  c.net.set_hook({});
  c.restart(1);
  CHECK(c.run(c[1].reassigner->recover()) == 0);
  check_single_owner(c, orders0, 2);
  CHECK(*c[2].offsets.committed("billing", orders0) == 240);
}

TEST_CASE("a non-empty destination is refused but an identical prefix is resumed", "[reassigner][dest]") {
  in_process_cluster c(2, 4096);
  seed(c, 60);
  SECTION("unrelated data on the destination") {
    REQUIRE(c[2].store.ensure_topic("orders", 2));
    REQUIRE(c[2].store.append(orders0, {rec("someone else's record")}));
    auto s = c.move(1, orders0, 2);
    REQUIRE_FALSE(s);
    CHECK(s.code() == errc::already_exists);
    CHECK_THAT(s.message(), Catch::Contains("not a prefix"));
    CHECK(c[1].serves(orders0));
    CHECK(c[2].serves(orders0));  // untouched: still its own
  }
  SECTION("a prefix left by an interrupted attempt") {
    auto first = c[1].store.read(orders0, 0, 3000);
    REQUIRE(c[2].store.ensure_topic("orders", 2));
    REQUIRE(c[2].store.append_at(orders0, 0, first->bytes.view()));
    REQUIRE(c.move(1, orders0, 2));
    CHECK(log_bytes(c[2].store, orders0) == log_bytes(c[1].store, orders0));
  }
}

TEST_CASE("moves that must not happen are refused with a clear error", "[reassigner]") {
  in_process_cluster c(3);
  seed(c, 5);
  REQUIRE(c[1].store.ensure_topic("__consumer_offsets", 1));
  CHECK(c.move(1, {"__consumer_offsets", 0}, 2).code() == errc::invalid_argument);
  CHECK(c.move(1, orders0, 1).code() == errc::invalid_argument);
  CHECK(c.move(1, {"orders", 7}, 2).code() == errc::not_found);
  CHECK(c.move(1, {"missing", 0}, 2).code() == errc::not_found);
  REQUIRE(c.move(1, orders0, 2));
  auto again = c.move(1, orders0, 3);
  CHECK(again.code() == errc::not_owner);
  CHECK_THAT(again.message(), Catch::Contains("served by b2"));
}

TEST_CASE("a fault at any step before cutover leaves the partition whole on the source, and a retry completes",
          "[reassigner][faults]") {
  const std::string route = GENERATE("/cluster/ensure", "/cluster/partition", "/cluster/owner", "/cluster/append");
  const auto kind = GENERATE(transport::fate::drop, transport::fate::lose_response);
  INFO(route << (kind == transport::fate::drop ? " dropped" : " response lost"));
  in_process_cluster c(2, 4096);
  seed(c, 80);
  const std::string before = log_bytes(c[1].store, orders0);
  bool fired = false;
  c.net.set_hook([&](const std::string&, const std::string&, const transport::request& r) {
    if (!fired && r.path == route && (route != "/cluster/append" || r.params.at("expected_offset") != "0")) {
      fired = true;
      return kind;
    }
    return transport::fate::deliver;
  });
  auto s = c.move(1, orders0, 2);
  REQUIRE(fired);
  REQUIRE_FALSE(s);
  CHECK(c[1].serves(orders0));
  CHECK(log_bytes(c[1].store, orders0) == before);
  CHECK(c[1].journal->pending().empty());
  c.net.set_hook({});
  REQUIRE(c.move(1, orders0, 2));
  CHECK(log_bytes(c[2].store, orders0) == before);  // nothing lost, nothing written twice
  check_single_owner(c, orders0, 2);
}

TEST_CASE("duplicated requests do not duplicate data", "[reassigner][faults]") {
  in_process_cluster c(2, 1024, 7);
  seed(c, 60);
  c.net.set_duplicate_probability(0.5);
  REQUIRE(c.move(1, orders0, 2));
  CHECK(log_bytes(c[2].store, orders0) == log_bytes(c[1].store, orders0));
}

TEST_CASE("a failed drain rolls ownership back and the partition stays whole on the source", "[reassigner][faults]") {
  in_process_cluster c(2, 4096);
  seed(c, 40);
  std::uint64_t copy_end = *c[1].store.end_offset(orders0);
  int batches = 0;
  c.net.set_hook([&](const std::string&, const std::string&, const transport::request& r) {
    if (r.path != "/cluster/append" || !r.params.count("expected_offset")) return transport::fate::deliver;
    // Land a record in the tail during the copy, then fail the tail's first batch.
    if (++batches == 2) (void)c[1].router->try_local(orders0, {rec("tail record")});
    if (std::stoull(r.params.at("expected_offset")) >= copy_end && !r.body.empty()) return transport::fate::drop;
    return transport::fate::deliver;
  });
  auto s = c.move(1, orders0, 2);
  REQUIRE_FALSE(s);
  CHECK(c[1].serves(orders0));
  CHECK(c[1].journal->pending().empty());
  CHECK_FALSE(c[2].serves(orders0));  // still reserved for b1: it never served a record
  auto produced = c.produce(1, orders0, {rec("after rollback")});
  REQUIRE(produced);
  CHECK(produced->broker == broker_id("b1"));
}

TEST_CASE("a move caught between cutover and confirm is resolved after a restart", "[reassigner][crash]") {
  in_process_cluster c(2, 4096);
  seed(c, 30);
  SECTION("confirm never reached the destination: the move goes forward once it does") {
    c.net.set_hook([&](const std::string&, const std::string&, const transport::request& r) {
      bool confirm = r.path == "/cluster/owner" && r.method == "POST" && r.body.find("\"b2\"") != std::string::npos;
      return confirm ? transport::fate::drop : transport::fate::deliver;
    });
    REQUIRE_FALSE(c.move(1, orders0, 2));
    REQUIRE(c[1].journal->pending().size() == 1);
    CHECK(c[1].journal->pending()[0].drained);
    CHECK_FALSE(c[1].serves(orders0));
    CHECK_FALSE(c[2].serves(orders0));  // served by nobody until the confirm lands: never by two
    c.net.set_hook({});
    c.restart(1);
    CHECK(c.run(c[1].reassigner->recover()) == 0);
    check_single_owner(c, orders0, 2);
    CHECK(c[1].journal->pending().empty());
  }
  SECTION("confirm landed but its answer was lost: the destination keeps it") {
    c.net.set_hook([&](const std::string&, const std::string&, const transport::request& r) {
      bool confirm = r.path == "/cluster/owner" && r.method == "POST" && r.body.find("\"b2\"") != std::string::npos;
      return confirm ? transport::fate::lose_response : transport::fate::deliver;
    });
    REQUIRE_FALSE(c.move(1, orders0, 2));
    c.net.set_hook({});
    c.restart(1);
    CHECK(c.run(c[1].reassigner->recover()) == 0);
    check_single_owner(c, orders0, 2);
    CHECK(c[1].journal->pending().empty());
  }
  SECTION("confirm landed, its answer lost, and the destination then takes no offsets: its confirm decides") {
    REQUIRE(c[1].offsets.commit("billing", orders0, 12));
    c.net.set_hook([&](const std::string&, const std::string&, const transport::request& r) {
      bool confirm = r.path == "/cluster/owner" && r.method == "POST" && r.body.find("\"b2\"") != std::string::npos;
      return confirm ? transport::fate::lose_response : transport::fate::deliver;
    });
    REQUIRE_FALSE(c.move(1, orders0, 2));
    // From now on b2 does not take the offsets again; it holds them from before its confirm.
    c.net.set_hook([&](const std::string&, const std::string&, const transport::request& r) {
      return r.path == "/cluster/offsets" ? transport::fate::drop : transport::fate::deliver;
    });
    c.restart(1);
    CHECK(c.run(c[1].reassigner->recover()) == 0);
    check_single_owner(c, orders0, 2);
    CHECK(c[1].journal->pending().empty());
    CHECK(*c[2].offsets.committed("billing", orders0) == 12);
  }
  SECTION("the destination is down: the entry stays until it answers") {
    c.net.set_hook([&](const std::string&, const std::string&, const transport::request& r) {
      bool confirm = r.path == "/cluster/owner" && r.method == "POST" && r.body.find("\"b2\"") != std::string::npos;
      return confirm ? transport::fate::drop : transport::fate::deliver;
    });
    REQUIRE_FALSE(c.move(1, orders0, 2));
    c.net.set_hook({});
    c.net.partition("b1", "b2");
    c.restart(1);
    CHECK(c.run(c[1].reassigner->recover()) == 1);
    CHECK(c[1].journal->pending().size() == 1);
    c.net.heal();
    c.restart(1);
    CHECK(c.run(c[1].reassigner->recover()) == 0);
  }
}

TEST_CASE("a controller whose epoch was superseded cannot move partitions", "[reassigner][fence]") {
  in_process_cluster c(2);
  seed(c, 5);
  REQUIRE(c[2].fence->check({epoch(5), broker_id("b9")}));
  auto s = c.move(1, orders0, 2, cluster::controller_claim{epoch(3), broker_id("b1")});
  REQUIRE_FALSE(s);
  CHECK(s.code() == errc::conflict);
  CHECK(c[1].serves(orders0));
  REQUIRE(c.move(1, orders0, 2, cluster::controller_claim{epoch(6), broker_id("b1")}));
}

TEST_CASE("a planned SWAP is executed as its local half", "[reassigner][swap]") {
  in_process_cluster c(2);
  seed(c, 10);
  REQUIRE(c[2].store.ensure_topic("orders", 2));
  REQUIRE(c[2].store.append({"orders", 1}, {rec("b2's partition 1")}));
  autobalancer::described_action swap{autobalancer::action_type::swap, "orders", 0, "b1", "b2", "orders", 1};
  REQUIRE(c.run(c[1].reassigner->execute(swap)));
  CHECK_FALSE(c[1].serves(orders0));
  CHECK(c[2].serves(orders0));
  CHECK(c[2].serves({"orders", 1}));  // the counterpart stays where it is: b2 pushes its own half
  auto wrong = c.run(c[2].reassigner->execute(swap));
  CHECK(wrong.code() == errc::invalid_argument);
}

TEST_CASE("migration copies are not counted as traffic and a forwarded produce counts on the owner only",
          "[reassigner][traffic]") {
  in_process_cluster c(2, 4096);
  seed(c, 50);
  REQUIRE(c.move(1, orders0, 2));
  CHECK(c[2].counters.get(orders0).produced_bytes == 0);  // the copy is not client load
  auto r = c.produce(1, orders0, {rec("forwarded")});
  REQUIRE(r);
  CHECK(r->broker == broker_id("b2"));
  CHECK(c[2].counters.get(orders0).produced_bytes == storage::frame_size(rec("forwarded")));
  CHECK(c[1].counters.get(orders0).produced_bytes == 0);  // seed() appended directly, and b1 only forwarded
}

TEST_CASE("a not_owner answer names the owner as JSON even when its id needs escaping", "[service][input]") {
  in_process_cluster c(1);
  REQUIRE(c[1].store.ensure_topic("t", 1));
  REQUIRE(test::set_owner(*c[1].ownership, {"t", 0}, broker_id("b\"2")));
  transport::request r;
  r.path = "/cluster/append";
  r.params = {{"topic", "t"}, {"partition", "0"}, {"mode", "produce"}};
  r.headers[transport::header_token] = "secret";
  r.body = storage::encode_frame(rec("x"));
  auto resp = c[1].service->handle(r);
  CHECK(resp.status == 421);
  CHECK(resp.body == R"({"error":"not_owner","owner":"b\"2","version":1})");
}

namespace {

/// Broker b1's hand moves over `requests` (its move-requests.json), wired to a new reassigner's on_finished.
struct b1_hand_moves {
  std::shared_ptr<cluster::hand_moves*> slot = std::make_shared<cluster::hand_moves*>(nullptr);
  std::unique_ptr<cluster::hand_moves> moves;

  b1_hand_moves(in_process_cluster& c, storage::memory_state_file& requests) {
    cluster::reassigner_options o;
    o.on_finished = [slot = slot](const cluster::move_progress& p) {
      if (*slot) (*slot)->finished(p);
    };
    c.rebuild_reassigner(1, o);
    auto& b = c[1];
    auto h = cluster::hand_moves::open({broker_id("b1"), b.store, *b.ownership, *b.journal, *b.reassigner, b.log,
                                        c.io.get_executor(), c.blocking(), std::chrono::milliseconds(10)},
                                       keep(&requests));
    REQUIRE(h);
    moves = std::move(*h);
    *slot = moves.get();
  }
  ~b1_hand_moves() { *slot = nullptr; }
  cluster::hand_moves* operator->() { return moves.get(); }
};

asio::awaitable<bool> recovered(cluster::hand_moves& m) {
  co_await m.recover();
  co_return true;
}

}  // namespace

TEST_CASE("hand moves: listed while they run, forgotten when they end, started again from the list after a stop",
          "[reassigner][hand]") {
  in_process_cluster c(2, 4096);
  seed(c, 30);
  storage::memory_state_file requests("b1/move-requests.json");

  SECTION("a move that ends is forgotten; a refused one is never kept") {
    b1_hand_moves moves(c, requests);
    CHECK_FALSE(moves->start({"orders", 9}, broker_id("b2")));  // no such partition here: refused
    CHECK(moves->listed().empty());
    REQUIRE(moves->start(orders0, broker_id("b2")));
    CHECK(moves->listed().count(orders0));
    CHECK(requests.read()->value().find("\"dest\":\"b2\"") != std::string::npos);  // on disk before it runs
    c.settle_moves();
    check_single_owner(c, orders0, 2);
    CHECK(c.run_until([&] { return moves->listed().empty(); }));
    CHECK_FALSE(moves->anything_to_recover());
  }
  SECTION("a listed move of a partition still served here runs again; one served elsewhere by now is dropped") {
    REQUIRE(c[1].store.append({"orders", 1}, {rec("one")}));
    REQUIRE(c.move(1, {"orders", 1}, 2));  // moved on meanwhile
    // What a broker stopped in the middle of two hand moves leaves behind.
    REQUIRE(requests.replace(R"({"moves":[{"topic":"orders","partition":0,"dest":"b2"},)"
                             R"({"topic":"orders","partition":1,"dest":"b2"}]})"));
    b1_hand_moves moves(c, requests);
    CHECK(moves->anything_to_recover());
    CHECK(c.run(recovered(*moves.moves)));
    c.settle_moves();
    check_single_owner(c, orders0, 2);
    CHECK(c.run_until([&] { return moves->listed().empty(); }));
  }
  SECTION("a move that ends after stop() stays listed, for the next start") {
    b1_hand_moves moves(c, requests);
    REQUIRE(moves->start(orders0, broker_id("b2")));
    moves->stop();
    c.settle_moves();
    CHECK(moves->listed().count(orders0));
  }
  SECTION("a file that is not a list of moves is refused at open") {
    REQUIRE(requests.replace(R"({"moves":[{"topic":"orders"}]})"));
    CHECK(cluster::hand_moves::open({broker_id("b1"), c[1].store, *c[1].ownership, *c[1].journal, *c[1].reassigner,
                                     c[1].log, c.io.get_executor(), c.blocking()},
                                    keep(&requests))
              .code() == errc::corrupt);
  }
}

TEST_CASE("an append that must not wait is refused, writing nothing, during a cutover and before the producer table "
          "has read the log",
          "[reassigner][produce]") {
  in_process_cluster c(2, 2048);
  seed(c, 10);  // straight into the log: the producer table has not read it
  const cluster::append_options never_wait{.never_wait = true};
  auto refused = [&](std::variant<result<cluster::produce_result>, broker_id> local) {
    auto* done = std::get_if<result<cluster::produce_result>>(&local);
    REQUIRE(done);
    return !*done && done->code() == errc::would_block;
  };
  const auto end = *c[1].store.end_offset(orders0);
  CHECK(refused(c[1].router->try_local(orders0, {rec("early")}, never_wait)));
  CHECK(*c[1].store.end_offset(orders0) == end);
  // An append that may wait reads the log first; after it, one that must not wait goes through.
  auto read_first = c[1].router->try_local(orders0, {rec("waited")});
  REQUIRE(std::get<result<cluster::produce_result>>(read_first));
  auto at_once = c[1].router->try_local(orders0, {rec("at once")}, never_wait);
  REQUIRE(std::get<result<cluster::produce_result>>(at_once));
  {
    // A cutover (another thread) holds the partition's gate: the append would wait for it.
    std::promise<void> held, release;
    std::future<std::variant<result<cluster::produce_result>, broker_id>> attempt;  // destroyed after the releaser
    std::thread cutover([&] {
      std::unique_lock gate(c[1].gates.gate(orders0));
      held.set_value();
      release.get_future().wait();
    });
    struct releaser {
      std::promise<void>& release;
      std::thread& t;
      ~releaser() {
        release.set_value();
        t.join();
      }
    } on_exit{release, cutover};
    REQUIRE(held.get_future().wait_for(std::chrono::seconds(30)) == std::future_status::ready);
    const auto before = *c[1].store.end_offset(orders0);
    attempt = std::async(std::launch::async,
                         [&] { return c[1].router->try_local(orders0, {rec("during")}, never_wait); });
    // Refused at once; an append that waited for the gate would still be waiting (and the test fails here).
    REQUIRE(attempt.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
    CHECK(refused(attempt.get()));
    CHECK(*c[1].store.end_offset(orders0) == before);
  }
  // Records a peer appended to the log (a move's copy) are read by the next append that may wait.
  REQUIRE(c[1].store.append(orders0, {rec("copied")}));
  CHECK(refused(c[1].router->try_local(orders0, {rec("late")}, never_wait)));
  REQUIRE(std::get<result<cluster::produce_result>>(c[1].router->try_local(orders0, {rec("then")})));
  REQUIRE(std::get<result<cluster::produce_result>>(c[1].router->try_local(orders0, {rec("and now")}, never_wait)));
}

TEST_CASE("a produce that must not wait is refused where it would wait, and appended at once otherwise",
          "[reassigner][produce]") {
  in_process_cluster c(2, 2048);
  seed(c, 0);
  auto fe = c[1].produce_frontend();
  auto request = [](std::string topic, std::string value) {
    frontend::produce_request r;
    r.topic = std::move(topic);
    r.partition = 0;
    r.records = {rec(std::move(value))};
    r.forward = false;
    r.never_wait = true;
    return r;
  };
  // Nothing written yet: the producer table has read all of the (empty) log.
  auto done = fe.produce(request("orders", "at once"));
  REQUIRE(done);
  CHECK(done->broker == broker_id("b1"));
  const auto end = *c[1].store.end_offset(orders0);
  // A topic this broker does not hold (the brokers would be asked who serves it), a forward, a transaction.
  CHECK(fe.produce(request("elsewhere", "x")).code() == errc::would_block);
  auto forwarded = request("orders", "x");
  forwarded.forward = true;
  CHECK(fe.produce(std::move(forwarded)).code() == errc::would_block);
  auto transactional = request("orders", "x");
  transactional.transactional_id = "t1";
  transactional.producer = storage::producer_stamp{1, 0, 0};
  CHECK(fe.produce(std::move(transactional)).code() == errc::would_block);
  CHECK(*c[1].store.end_offset(orders0) == end);
  // A partition served elsewhere is refused as without never_wait: its owner named, nothing waited for.
  REQUIRE(c.move(1, orders0, 2));
  auto moved = fe.produce(request("orders", "x"));
  CHECK(moved.code() == errc::not_owner);
}
