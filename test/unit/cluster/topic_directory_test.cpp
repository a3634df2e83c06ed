#include <catch2/catch.hpp>

#include <deque>

#include "moonmq/cluster/local_ownership_table.hpp"
#include "moonmq/cluster/producer_states.hpp"
#include "moonmq/cluster/raft_ownership_table.hpp"
#include "moonmq/cluster/stray_reconciler.hpp"
#include "moonmq/cluster/topic_directory.hpp"
#include "moonmq/storage/memory_partition_store.hpp"

using namespace moonmq;
using namespace moonmq::cluster;

namespace {

/// One broker's topic directory over in-memory storage.
struct broker_parts {
  explicit broker_parts(const std::string& self)
      : self(self),
        table(std::move(*open_local_ownership_table(broker_id(self), std::make_unique<storage::memory_state_file>()))) {}
  topic_directory::parts parts() {
    return {broker_id(self),
            {broker_id("b1"), broker_id("b2"), broker_id("b3")},
            store,
            *table,
            gates,
            log,
            {},
            [this](const std::string& topic) { return offsets.forget_topic(topic); },
            [this](const std::string& topic) { producers.forget_topic(topic); }};
  }
  /// DataDir/topic-logs.json, kept across a "restart" of the directory (a new one over the same store).
  std::unique_ptr<storage::state_file> stamps() {
    auto f = std::make_unique<storage::memory_state_file>("topic-logs.json");
    if (kept) REQUIRE(f->replace(*kept));
    stamp_file = f.get();
    return f;
  }
  void keep_stamps() { kept = **stamp_file->read(); }
  storage::memory_state_file* stamp_file = nullptr;
  std::optional<std::string> kept;
  std::string self;
  storage::memory_partition_store store;
  storage::memory_offset_store offsets;
  producer_states producers{store};
  std::unique_ptr<ownership_table> table;
  partition_gates gates;
  null_logger log;
};

}  // namespace

TEST_CASE("topic directory without Raft: a decided topic is durable, and each broker makes only what it owns",
          "[topics]") {
  broker_parts b2("b2");
  auto file = std::make_unique<storage::memory_state_file>("topics.json");
  auto* disk = file.get();
  auto d = topic_directory::open(b2.parts(), std::move(file), b2.stamps());
  REQUIRE(d);
  auto made = (*d)->decide({topic_op::create, "t", 0, {broker_id("b1"), broker_id("b2"), broker_id("b3")}});
  REQUIRE(made);
  // b2 owns t-1: the topic's logs exist here, and t-0 and t-2 are recorded as b1's and b3's before they exist.
  CHECK(*b2.store.partition_count("t") == 3);
  CHECK(serves(*b2.table, {"t", 1}, broker_id("b2")));
  CHECK_FALSE(serves(*b2.table, {"t", 0}, broker_id("b2")));
  CHECK(b2.table->entry({"t", 0})->owner == broker_id("b1"));
  CHECK(b2.table->entry({"t", 2})->owner == broker_id("b3"));
  REQUIRE(*disk->read());
  CHECK_THAT(**disk->read(), Catch::Contains(R"("name":"t","version":1)"));

  SECTION("a second create of the name is refused, and a failed write changes nothing") {
    CHECK((*d)->decide({topic_op::create, "t", 0, {broker_id("b2")}}).code() == errc::already_exists);
    disk->fail_next_replace();
    CHECK((*d)->decide({topic_op::create, "u", 0, {broker_id("b2")}}).code() == errc::io_error);
    CHECK_FALSE((*d)->find("u"));
  }
  SECTION("a broker owning none of it makes nothing; a delete removes the logs where they are") {
    broker_parts b4("b4");
    auto other = topic_directory::open(b4.parts(), std::make_unique<storage::memory_state_file>(), b4.stamps());
    REQUIRE(other);
    REQUIRE((*other)->learn(*made));
    CHECK_FALSE(b4.store.partition_count("t"));
    CHECK((*other)->find("t")->version == 1);
    REQUIRE(b2.offsets.commit("g", {"t", 1}, 77));  // committed while t lived
    REQUIRE(b4.offsets.commit("g", {"t", 0}, 5));   // pushed to a broker that holds no log of it
    auto gone = (*d)->decide({topic_op::remove, "t", 1, {}});
    REQUIRE(gone);
    CHECK_FALSE(b2.store.partition_count("t"));
    CHECK((*d)->live().empty());
    // A later topic of the name never resumes a group at the deleted one's offsets, wherever they were.
    CHECK_FALSE(b2.offsets.committed("g", {"t", 1}));
    REQUIRE((*other)->learn(*gone));
    CHECK_FALSE(b4.offsets.committed("g", {"t", 0}));
  }
  SECTION("a later topic of the name is read from its own first byte, not from where the deleted one's stopped") {
    // What the deleted topic's log said is known up to its end (a read_committed reader caught the state up).
    REQUIRE(b2.producers.append({"t", 1}, {storage::record{std::nullopt, std::string(40, 'x'), 1, 0}}));
    REQUIRE(b2.producers.committed({"t", 1}, 0));
    auto gone = (*d)->decide({topic_op::remove, "t", 1, {}});
    REQUIRE(gone);
    REQUIRE((*d)->decide({topic_op::create, "t", gone->version, {broker_id("b2"), broker_id("b2")}}));
    // A longer first record, written as a move's copy writes (straight to the log): where the old log's reading
    // stopped is inside it.
    REQUIRE(b2.store.append({"t", 1}, {storage::record{std::nullopt, std::string(100, 'y'), 1, 0}}));
    auto view = b2.producers.committed({"t", 1}, 0);
    REQUIRE(view);
    CHECK(view->last_stable_offset == *b2.store.end_offset({"t", 1}));
  }
  SECTION("a restart reads the catalog back and carries it out again") {
    auto copy = std::make_unique<storage::memory_state_file>("topics.json");
    REQUIRE(copy->replace(**disk->read()));
    broker_parts fresh("b2");
    auto again = topic_directory::open(fresh.parts(), std::move(copy), fresh.stamps());
    REQUIRE(again);
    CHECK((*again)->find("t") == *made);
    CHECK(*fresh.store.partition_count("t") == 3);
    CHECK(fresh.table->entry({"t", 2})->owner == broker_id("b3"));
  }
  SECTION("a corrupt catalog file is refused, naming it") {
    auto bad = std::make_unique<storage::memory_state_file>("topics.json");
    REQUIRE(bad->replace("{\"topics\": [1]}"));
    broker_parts fresh("b2");
    auto refused = topic_directory::open(fresh.parts(), std::move(bad), fresh.stamps());
    CHECK(refused.code() == errc::corrupt);
    CHECK_THAT(refused.message(), Catch::Contains("topics.json"));
  }
}

TEST_CASE("topic directory with Raft: changes apply in the log's order on every broker, the loser is told",
          "[topics]") {
  // A log of our own: proposals are appended and applied on both brokers in order (as raft::service would).
  broker_parts b1("b1"), b3("b3");
  auto d1 = std::move(*topic_directory::replicated(b1.parts(), b1.stamps()));
  auto d3 = std::move(*topic_directory::replicated(b3.parts(), b3.stamps()));
  std::vector<raft::entry> log;
  auto propose = [&](raft::entry_kind k, std::string data) -> result<raft::index_t> {
    raft::entry e{1, log.size() + 1, k, std::move(data)};
    log.push_back(e);
    d1->apply_entry(e);
    d3->apply_entry(e);
    return e.index;
  };
  d1->attach(propose);
  d3->attach(propose);
  REQUIRE(d1->decide({topic_op::create, "ev2", 0, {broker_id("b1")}}));
  auto late = d3->decide({topic_op::create, "ev2", 0, {broker_id("b3")}});
  CHECK(late.code() == errc::already_exists);  // refused before proposing: b3 learned of ev2 from the log
  CHECK(*b1.store.partition_count("ev2") == 1);
  CHECK_FALSE(b3.store.partition_count("ev2"));  // b3 owns none of it: no namesake here
  CHECK(d3->find("ev2")->owners == std::vector<broker_id>{broker_id("b1")});

  SECTION("two changes racing for one version: the one the log orders first applies, the other is refused") {
    // Both made against version 1; b3's reaches the log second.
    raft::entry first{1, log.size() + 1, raft::entry_kind::topic,
                      R"({"op":"grow","name":"ev2","expect":1,"added":["b1"]})"};
    d1->apply_entry(first);
    d3->apply_entry(first);
    log.push_back(first);
    auto lost = d3->decide({topic_op::grow, "ev2", 1, {broker_id("b3")}});
    CHECK(lost.code() == errc::conflict);
    CHECK(d1->find("ev2")->partitions() == 2);
    CHECK(d3->find("ev2") == d1->find("ev2"));
  }
  SECTION("a broker restored from a snapshot has the catalog and makes what it owns") {
    REQUIRE(d1->decide({topic_op::create, "spread", 0, {broker_id("b1"), broker_id("b3")}}));
    broker_parts fresh("b3");
    auto d = std::move(*topic_directory::replicated(fresh.parts(), fresh.stamps()));
    d->restore(d1->snapshot());
    CHECK(d->catalog() == d1->catalog());
    CHECK(*fresh.store.partition_count("spread") == 2);
    CHECK(fresh.table->entry({"spread", 0})->owner == broker_id("b1"));
  }
  SECTION("without a proposer, nothing is decided") {
    auto alone = std::move(*topic_directory::replicated(b1.parts(), b1.stamps()));
    CHECK(alone->decide({topic_op::create, "x", 0, {broker_id("b1")}}).code() == errc::unavailable);
  }
}

TEST_CASE("topic directory: the coordinator of a topic is the same on every broker", "[topics]") {
  broker_parts a("b1"), b("b3");
  auto d1 = std::move(*topic_directory::replicated(a.parts(), a.stamps()));
  auto d3 = std::move(*topic_directory::replicated(b.parts(), b.stamps()));
  for (const char* t : {"orders", "clicks", "ev2", "t"}) CHECK(d1->coordinator_of(t) == d3->coordinator_of(t));
}

TEST_CASE("topic directory with Raft: replaying the log at a restart never touches a later incarnation's logs",
          "[topics]") {
  // Create, delete and create the name again, write to the new incarnation, then restart: the log replays the
  // delete before the second create, and the new incarnation's records must survive it.
  broker_parts b1("b1");
  std::vector<raft::entry> log;
  auto run = [&](topic_directory& d) {
    d.attach([&](raft::entry_kind k, std::string data) -> result<raft::index_t> {
      raft::entry e{1, log.size() + 1, k, std::move(data)};
      log.push_back(e);
      d.apply_entry(e);
      return e.index;
    });
  };
  {
    auto d = std::move(*topic_directory::replicated(b1.parts(), b1.stamps()));
    run(*d);
    REQUIRE(d->decide({topic_op::create, "t", 0, {broker_id("b1")}}));
    REQUIRE(b1.store.append({"t", 0}, {storage::record{std::nullopt, "first life", 0, 0}}));
    REQUIRE(d->decide({topic_op::remove, "t", 1, {}}));
    CHECK_FALSE(b1.store.partition_count("t"));
    REQUIRE(d->decide({topic_op::create, "t", 2, {broker_id("b1")}}));
    CHECK(*b1.store.end_offset({"t", 0}) == 0);  // the new incarnation starts empty
    REQUIRE(b1.store.append({"t", 0}, {storage::record{std::nullopt, "second life", 0, 0}}));
    b1.keep_stamps();
  }
  const std::uint64_t end = *b1.store.end_offset({"t", 0});
  auto restarted = std::move(*topic_directory::replicated(b1.parts(), b1.stamps()));
  for (const auto& e : log) restarted->apply_entry(e);
  CHECK(*b1.store.end_offset({"t", 0}) == end);
  CHECK(restarted->find("t")->created == 3);
}

TEST_CASE("topic directory: logs of the name that no record made are left untouched", "[topics]") {
  broker_parts b1("b1");
  REQUIRE(b1.store.ensure_topic("legacy", 1));
  REQUIRE(b1.store.append({"legacy", 0}, {storage::record{std::nullopt, "kept", 0, 0}}));
  auto d = topic_directory::open(b1.parts(), std::make_unique<storage::memory_state_file>(), b1.stamps());
  REQUIRE(d);
  CHECK(serves(*b1.table, {"legacy", 0}, broker_id("b1")));  // unlisted: made before topics were metadata
  REQUIRE((*d)->learn({"legacy", 2, 2, {}, true}));  // a deleted record of the name, from elsewhere
  CHECK(*b1.store.partition_count("legacy") == 1);
  CHECK(*b1.store.end_offset({"legacy", 0}) > 0);
  // Kept, but a stray: a topic the cluster deleted is never served here.
  CHECK(b1.table->withheld({"legacy", 0}));
  CHECK_FALSE(serves(*b1.table, {"legacy", 0}, broker_id("b1")));
}

TEST_CASE("topic directory: a stray log is never served, is routed to the partition's owner and never taken by a move",
          "[topics][strays]") {
  // b2 holds a namesake of t made by hand (or before topics were metadata); the cluster made t on b1.
  broker_parts b2("b2");
  REQUIRE(b2.store.ensure_topic("t", 2));
  REQUIRE(b2.store.append({"t", 0}, {storage::record{std::nullopt, "by hand", 0, 0}}));
  const topic_record t{"t", 1, 1, {broker_id("b1"), broker_id("b3")}, false};
  {
    auto d = topic_directory::open(b2.parts(), std::make_unique<storage::memory_state_file>(), b2.stamps());
    REQUIRE(d);
    REQUIRE((*d)->learn(t));
    for (int i : {0, 1}) {
      CHECK(b2.table->withheld({"t", i}));
      CHECK_FALSE(serves(*b2.table, {"t", i}, broker_id("b2")));
    }
    CHECK(b2.table->entry({"t", 0})->owner == broker_id("b1"));  // a produce here goes to b1, not into the stray
    CHECK(b2.table->entry({"t", 1})->owner == broker_id("b3"));
    CHECK(*b2.store.end_offset({"t", 0}) > 0);  // untouched
    auto ensure = (*d)->ensure_listed("t", 2);  // a move towards b2 must not adopt the stray as the partition's log
    REQUIRE(ensure);
    CHECK(ensure->code() == errc::conflict);
  }
  SECTION("a log a move was confirmed onto is the partition's, not a stray") {
    // Made the old way by a move's ensure before this broker knew the topic, then confirmed here at version 1.
    REQUIRE(b2.table->record({{"t", 1}, broker_id("b2"), 1, false}));
    auto d = topic_directory::open(b2.parts(), std::make_unique<storage::memory_state_file>(), b2.stamps());
    REQUIRE(d);
    REQUIRE((*d)->learn({"t", 2, 1, {broker_id("b1"), broker_id("b3")}, false}));
    CHECK(b2.table->withheld_all() == std::set<topic_partition>{{"t", 0}});
    CHECK(serves(*b2.table, {"t", 1}, broker_id("b2")));
  }
  SECTION("a restart finds it again") {
    b2.table->withhold({});
    REQUIRE(b2.store.ensure_topic("u", 1));
    auto file = std::make_unique<storage::memory_state_file>("topics.json");
    REQUIRE(file->replace(R"({"topics":[{"name":"t","version":1,"created":1,"owners":["b1","b3"],"deleted":false}]})"));
    auto d = topic_directory::open(b2.parts(), std::move(file), b2.stamps());
    REQUIRE(d);
    CHECK(b2.table->withheld_all() == std::set<topic_partition>{{"t", 0}, {"t", 1}});  // u is unlisted: served
  }
  SECTION("a partition past the count of the incarnation that made the logs here is a stray too") {
    broker_parts b1("b1");
    auto d = topic_directory::open(b1.parts(), std::make_unique<storage::memory_state_file>(), b1.stamps());
    REQUIRE(d);
    REQUIRE((*d)->learn(t));
    REQUIRE(*b1.store.partition_count("t") == 2);
    CHECK(b1.table->withheld_all().empty());
    REQUIRE(b1.store.ensure_topic("t", 3));  // by hand
    REQUIRE((*d)->learn({"t", 2, 1, {broker_id("b1"), broker_id("b3")}, false}));  // any later carry-out
    CHECK(b1.table->withheld_all() == std::set<topic_partition>{{"t", 2}});
    // A move from b1 asks for its store's count (3): the destination makes what the catalog lists.
    broker_parts b3("b3");
    auto dest = topic_directory::open(b3.parts(), std::make_unique<storage::memory_state_file>(), b3.stamps());
    REQUIRE(dest);
    auto ensured = (*dest)->ensure_listed("t", 3, (*d)->find("t"));
    REQUIRE(ensured);
    REQUIRE(*ensured);
    CHECK(**ensured == 2);
    // A grow that covers its number makes t-2 b3's: on b1 the hand-made log stays a stray, routed to b3, not served.
    REQUIRE((*d)->learn({"t", 3, 1, {broker_id("b1"), broker_id("b3"), broker_id("b3")}, false}));
    CHECK(b1.table->withheld_all() == std::set<topic_partition>{{"t", 2}});
    CHECK_FALSE(serves(*b1.table, {"t", 2}, broker_id("b1")));
    CHECK(b1.table->entry({"t", 2})->owner == broker_id("b3"));
    // And so after a restart (the count the carry-outs made is kept with the stamp).
    b1.keep_stamps();
    b1.table->withhold({});
    auto file = std::make_unique<storage::memory_state_file>("topics.json");
    REQUIRE(file->replace(R"({"topics":[{"name":"t","version":3,"created":1,"owners":["b1","b3","b3"],"deleted":false}]})"));
    auto again = topic_directory::open(b1.parts(), std::move(file), b1.stamps());
    REQUIRE(again);
    CHECK(b1.table->withheld_all() == std::set<topic_partition>{{"t", 2}});
  }
}

TEST_CASE("topic directory: a stray emptied by an operator's decision is gone, and the emptied logs become the "
          "catalog's",
          "[topics][strays]") {
  broker_parts b2("b2");
  REQUIRE(b2.store.ensure_topic("t", 2));
  REQUIRE(b2.store.append({"t", 0}, {storage::record{std::nullopt, "by hand", 0, 0}}));
  REQUIRE(b2.store.append({"t", 1}, {storage::record{std::nullopt, "by hand too", 0, 0}}));
  auto d = topic_directory::open(b2.parts(), std::make_unique<storage::memory_state_file>(), b2.stamps());
  REQUIRE(d);
  REQUIRE((*d)->learn({"t", 1, 1, {broker_id("b1"), broker_id("b2")}, false}));
  REQUIRE(b2.table->withheld_all().size() == 2);
  auto empty = [&](const topic_partition& tp) { return b2.store.discard(tp); };

  REQUIRE((*d)->drop_stray({"t", 0}, empty));
  CHECK(*b2.store.end_offset({"t", 0}) == 0);
  CHECK(*b2.store.end_offset({"t", 1}) > 0);  // the other stray is left as it is
  // Still unstamped (t-1 holds what no record made): both stay withheld, and a move here is still refused.
  CHECK(b2.table->withheld_all().size() == 2);
  CHECK((*d)->drop_stray({"u", 0}, empty).code() == errc::conflict);  // no stray there

  REQUIRE((*d)->drop_stray({"t", 1}, empty));
  // Nothing of what no record made is left: the logs are the catalog's. b2 is t-1's first owner and serves it (empty);
  // t-0 stays routed to b1.
  CHECK(b2.table->withheld_all().empty());
  CHECK(serves(*b2.table, {"t", 1}, broker_id("b2")));
  CHECK_FALSE(serves(*b2.table, {"t", 0}, broker_id("b2")));
  auto ensure = (*d)->ensure_listed("t", 2);  // a move towards b2 now finds the partition's logs
  REQUIRE(ensure);
  CHECK(ensure->ok());
  CHECK((*d)->drop_stray({"t", 0}, empty).code() == errc::conflict);
}

TEST_CASE("stray reconciler: what a read_committed reader of the stray would not see is never copied",
          "[topics][strays]") {
  storage::memory_partition_store store;
  REQUIRE(store.ensure_topic("t", 1));
  producer_states producers(store);
  const topic_partition tp{"t", 0};
  auto txn_record = [](std::uint64_t producer, std::uint32_t seq, std::string v) {
    return storage::record{std::nullopt, std::move(v), 0, storage::attr_transactional,
                           storage::producer_stamp{producer, 0, seq}};
  };
  auto plain = [](std::string v) { return storage::record{std::nullopt, std::move(v), 0, 0}; };
  REQUIRE(producers.append(tp, {plain("first")}));
  REQUIRE(producers.enroll(tp, 5, 0));  // aborted
  REQUIRE(producers.append(tp, {txn_record(5, 0, "aborted early")}));
  REQUIRE(producers.end_transaction(tp, 5, 1, false));
  REQUIRE(producers.enroll(tp, 6, 0));  // committed
  REQUIRE(producers.append(tp, {txn_record(6, 0, "committed")}));
  REQUIRE(producers.end_transaction(tp, 6, 1, true));
  REQUIRE(producers.enroll(tp, 7, 0));  // never ended: the last stable offset stays at its start
  REQUIRE(producers.append(tp, {txn_record(7, 0, "never ended")}));
  REQUIRE(producers.enroll(tp, 9, 0));  // aborted, past the last stable offset
  REQUIRE(producers.append(tp, {txn_record(9, 0, "aborted late")}));
  REQUIRE(producers.end_transaction(tp, 9, 1, false));
  REQUIRE(producers.append(tp, {plain("last")}));

  auto view = producers.whole_log(tp);
  REQUIRE(view);
  auto bytes = store.read(tp, 0, 1u << 20);
  REQUIRE(bytes);
  std::vector<std::string> copied;
  for (const auto& v : storage::decode_frames(bytes->bytes.view(), 0))
    if (copied_from_stray(v, *view)) copied.emplace_back(v.value);
  CHECK(copied == std::vector<std::string>{"first", "committed", "last"});

  // The append's producer: the same for the same stray, another for another (partition, holder, size or content).
  const broker_id b2("b2");
  const auto id = stray_producer_id(b2, {"t", 0}, 100, 7);
  CHECK(id == stray_producer_id(b2, {"t", 0}, 100, 7));
  CHECK(id != stray_producer_id(b2, {"t", 1}, 100, 7));
  CHECK(id != stray_producer_id(broker_id("b3"), {"t", 0}, 100, 7));
  CHECK(id != stray_producer_id(b2, {"t", 0}, 101, 7));
  CHECK(id != stray_producer_id(b2, {"t", 0}, 100, 8));
}

TEST_CASE("topic directory: a listed topic's logs that no record made, all empty, are adopted with their partitions "
          "routed to their owners",
          "[topics][strays]") {
  broker_parts b2("b2");
  REQUIRE(b2.store.ensure_topic("e", 2));  // made by hand, never written
  auto d = topic_directory::open(b2.parts(), std::make_unique<storage::memory_state_file>(), b2.stamps());
  REQUIRE(d);
  REQUIRE((*d)->learn({"e", 1, 1, {broker_id("b1"), broker_id("b2")}, false}));
  CHECK(b2.table->withheld_all().empty());
  CHECK_FALSE(serves(*b2.table, {"e", 0}, broker_id("b2")));  // b1's: never served from the empty log here
  CHECK(b2.table->entry({"e", 0})->owner == broker_id("b1"));
  CHECK(serves(*b2.table, {"e", 1}, broker_id("b2")));
}

TEST_CASE("topic directory with Raft: a stale record carried out late never lowers a later incarnation's stamp",
          "[topics]") {
  // t made with four partitions, deleted, made again with one; at the restart the storage work of a replayed entry
  // may run before the later entries are applied (the leader's commit index not heard yet), or after.
  broker_parts b1("b1");
  std::vector<raft::entry> log;
  {
    auto d = std::move(*topic_directory::replicated(b1.parts(), b1.stamps()));
    d->attach([&](raft::entry_kind k, std::string data) -> result<raft::index_t> {
      raft::entry e{1, log.size() + 1, k, std::move(data)};
      log.push_back(e);
      d->apply_entry(e);
      return e.index;
    });
    const std::vector<broker_id> four(4, broker_id("b1"));
    REQUIRE(d->decide({topic_op::create, "t", 0, four}));
    REQUIRE(d->decide({topic_op::remove, "t", 1, {}}));
    REQUIRE(d->decide({topic_op::create, "t", 2, {broker_id("b1")}}));
    REQUIRE(b1.store.append({"t", 0}, {storage::record{std::nullopt, "second life", 0, 0}}));
    b1.keep_stamps();
  }
  const std::uint64_t end = *b1.store.end_offset({"t", 0});
  std::deque<std::function<void()>> queued;
  auto parts = b1.parts();
  parts.run_later = [&](std::function<void()> work) { queued.push_back(std::move(work)); };
  auto restarted = std::move(*topic_directory::replicated(parts, b1.stamps()));
  auto drain = [&] {
    while (!queued.empty()) {
      queued.front()();
      queued.pop_front();
    }
  };
  // The replayed create of the first incarnation is carried out while the catalog is at that entry only (the others
  // not yet applied): it must not grow the later incarnation's logs to four nor stamp them as the first's.
  restarted->apply_entry(log[0]);
  drain();
  CHECK(*b1.store.partition_count("t") == 1);
  for (std::size_t i = 1; i < log.size(); ++i) restarted->apply_entry(log[i]);
  drain();
  CHECK(*b1.store.partition_count("t") == 1);
  CHECK(*b1.store.end_offset({"t", 0}) == end);
  // And once more, now that every entry is applied: nothing changes.
  auto again = std::move(*topic_directory::replicated(b1.parts(), b1.stamps()));
  for (const auto& e : log) again->apply_entry(e);
  CHECK(*b1.store.end_offset({"t", 0}) == end);
}

TEST_CASE("topic directory: a move's ensure brings the source's record to a destination whose catalog is behind",
          "[topics][strays]") {
  // Without it the destination made the logs the old way, unstamped: strays once it learned the topic, which would
  // have withheld the partition it had just been handed.
  const topic_record t{"t", 1, 1, {broker_id("b1")}, false};
  broker_parts b3("b3");
  SECTION("without Raft: the record is learned, and the logs are the catalog's") {
    auto d = topic_directory::open(b3.parts(), std::make_unique<storage::memory_state_file>(), b3.stamps());
    REQUIRE(d);
    auto made = (*d)->ensure_listed("t", 1, t);
    REQUIRE(made);
    REQUIRE(*made);
    CHECK(**made == 1);
    CHECK((*d)->find("t")->version == 1);
    CHECK(b3.table->withheld_all().empty());
  }
  SECTION("with Raft: refused until this broker has applied the record from the log") {
    auto d = topic_directory::replicated(b3.parts(), b3.stamps());
    REQUIRE(d);
    auto made = (*d)->ensure_listed("t", 1, t);
    REQUIRE(made);
    CHECK(made->code() == errc::unavailable);
    CHECK_FALSE(b3.store.partition_count("t"));
  }
}

TEST_CASE("raft ownership table: an owner entry of an earlier incarnation of a topic, committed late, changes nothing",
          "[topics][raft]") {
  // A move of ev-0 to b2 decided its cutover; the leader committed the entry only after ev was deleted and made again.
  storage::memory_partition_store store;
  partition_gates gates;
  null_logger log;
  raft_ownership_table table(broker_id("b1"), std::move(*open_local_ownership_table(
                                                  broker_id("b1"), std::make_unique<storage::memory_state_file>())));
  auto topics = std::move(*topic_directory::replicated(
      {broker_id("b1"), {broker_id("b1"), broker_id("b2")}, store, table, gates, log},
      std::make_unique<storage::memory_state_file>()));
  table.attach_topics(*topics);
  std::vector<raft::entry> entries, held;
  bool hold = false;
  auto propose = [&](raft::entry_kind k, std::string data) -> result<raft::index_t> {
    raft::entry e{1, entries.size() + held.size() + 1, k, std::move(data)};
    if (hold) {
      held.push_back(e);
      return error{errc::unavailable, "did not commit within the timeout"};
    }
    entries.push_back(e);
    table.apply(e);
    return e.index;
  };
  table.attach(propose);
  topics->attach(propose);
  table.caught_up();

  REQUIRE(topics->decide({topic_op::create, "ev", 0, {broker_id("b1")}}));
  hold = true;
  CHECK(table.decide({{"ev", 0}, broker_id("b2"), 1, true}, {0, false}).code() == errc::unavailable);
  hold = false;
  REQUIRE(topics->decide({topic_op::remove, "ev", 1, {}}));
  REQUIRE(topics->decide({topic_op::create, "ev", 2, {broker_id("b1")}}));
  for (auto& e : held) table.apply(e);  // committed late
  CHECK_FALSE(table.entry({"ev", 0}));  // the new incarnation's ev-0 is b1's: nothing routes it to b2
  CHECK(serves(table, {"ev", 0}, broker_id("b1")));
  // The same entry for the incarnation that exists applies.
  REQUIRE(table.decide({{"ev", 0}, broker_id("b2"), 1, true}, {0, false}));
  CHECK(table.entry({"ev", 0})->owner == broker_id("b2"));
}
