// Appends through producer_states: deduplication against what the log holds, after a restart (a new object over
// the same log) and on a broker that received the log's bytes by copy; transactions on a partition; and an append that
// must not wait.
#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "moonmq/cluster/producer_states.hpp"
#include "moonmq/storage/memory_partition_store.hpp"
#include "support/forwarding_store.hpp"

using namespace moonmq;

namespace {
std::vector<storage::record> batch(std::uint64_t id, std::uint32_t epoch, std::uint32_t first, int count) {
  std::vector<storage::record> out;
  for (int i = 0; i < count; ++i)
    out.push_back({std::nullopt, "r" + std::to_string(first + static_cast<std::uint32_t>(i)), 1, 0,
                   storage::producer_stamp{id, epoch, first + static_cast<std::uint32_t>(i)}});
  return out;
}
}  // namespace

TEST_CASE("producer states: a retried batch is written once, also after a restart and on a copy of the log",
          "[txn]") {
  storage::memory_partition_store store;
  const topic_partition tp{"t", 0};
  REQUIRE(store.ensure_topic("t", 1));
  auto states = std::make_unique<cluster::producer_states>(store);
  auto first = states->append(tp, batch(7, 0, 0, 3));
  REQUIRE(first);
  REQUIRE(states->append(tp, {storage::record{std::nullopt, "plain", 1, 0}}));  // unstamped records interleave
  auto again = states->append(tp, batch(7, 0, 0, 3));
  REQUIRE(again);
  CHECK(*again == *first);
  const auto end = *store.end_offset(tp);

  // A restart: the table is rebuilt from the log.
  states = std::make_unique<cluster::producer_states>(store);
  auto after_restart = states->append(tp, batch(7, 0, 1, 2));
  REQUIRE(after_restart);
  CHECK(*after_restart == std::vector<std::uint64_t>{(*first)[1], (*first)[2]});
  CHECK(*store.end_offset(tp) == end);
  CHECK(states->append(tp, batch(7, 0, 5, 1)).code() == errc::out_of_order_sequence);
  REQUIRE(states->append(tp, batch(7, 0, 3, 1)));

  // A broker that got the log's bytes (a move's copy) knows the producers without having seen an append.
  storage::memory_partition_store copy;
  REQUIRE(copy.ensure_topic("t", 1));
  auto bytes = store.read(tp, 0, 1 << 20);
  REQUIRE(bytes);
  REQUIRE(copy.append_at(tp, 0, bytes->bytes.view(), nullptr));
  cluster::producer_states moved(copy);
  auto retried = moved.append(tp, batch(7, 0, 3, 1));
  REQUIRE(retried);
  CHECK(*copy.end_offset(tp) == *store.end_offset(tp));  // deduplicated: nothing written
  CHECK(moved.append(tp, batch(7, 0, 4, 1)));

  // A mixed batch is refused whole.
  auto mixed = batch(7, 0, 5, 2);
  mixed[1].producer->id = 8;
  CHECK(moved.append(tp, mixed).code() == errc::invalid_argument);
}

namespace {
std::vector<storage::record> txn_batch(std::uint64_t id, std::uint32_t epoch, std::uint32_t first, int count) {
  auto out = batch(id, epoch, first, count);
  for (auto& r : out) r.attributes |= storage::attr_transactional;
  return out;
}

/// What a read_committed reader gets from the start of `tp`.
std::vector<std::string> committed_values(storage::partition_store& store, cluster::producer_states& states,
                                          const topic_partition& tp) {
  auto view = states.committed(tp, 0);
  REQUIRE(view);
  auto bytes = store.read(tp, 0, 1 << 20);
  REQUIRE(bytes);
  std::vector<std::string> out;
  for (const auto& v : storage::decode_frames(bytes->bytes.view(), 0))
    if (view->visible(v)) out.emplace_back(v.value);
  return out;
}
}  // namespace

TEST_CASE("partition transactions: enrolment opens, markers close, the LSO holds readers back, and aborted records "
          "are never read",
          "[txn]") {
  storage::memory_partition_store store;
  const topic_partition tp{"t", 0};
  REQUIRE(store.ensure_topic("t", 1));
  cluster::producer_states states(store);

  // The first transactional batch opens the transaction (a begin record before it); an enrolment of the open
  // transaction writes nothing.
  auto first = states.append(tp, txn_batch(1, 0, 0, 2));
  REQUIRE(first);
  REQUIRE(first->size() == 2);
  CHECK((*first)[0] > 0);  // the begin record is at 0
  CHECK(states.committed(tp, 0)->open.at(1).first == 0);
  const auto before = *store.end_offset(tp);
  REQUIRE(states.enroll(tp, 1, 0));
  CHECK(*store.end_offset(tp) == before);
  auto retried = states.append(tp, txn_batch(1, 0, 0, 2));  // a retry: the original offsets
  REQUIRE(retried);
  CHECK(*retried == *first);
  REQUIRE(states.append(tp, {storage::record{std::nullopt, "plain", 1, 0}}));
  // Open: nothing from the enrolment on is visible, not even the plain record after it.
  CHECK(committed_values(store, states, tp).empty());
  REQUIRE(states.end_transaction(tp, 1, 1, true));
  CHECK(committed_values(store, states, tp) == std::vector<std::string>{"r0", "r1", "plain"});
  REQUIRE(states.end_transaction(tp, 1, 1, true));  // a repeated marker writes nothing
  const auto end = *store.end_offset(tp);
  REQUIRE(states.end_transaction(tp, 1, 1, true));
  CHECK(*store.end_offset(tp) == end);

  // The ended transaction's epoch is fenced: a delayed batch can neither join nor open a transaction again, nor
  // can an enrolment; nothing is written for them.
  CHECK(states.append(tp, txn_batch(1, 0, 2, 1)).code() == errc::producer_fenced);
  CHECK(states.append(tp, txn_batch(1, 0, 0, 1)).code() == errc::producer_fenced);
  CHECK(*store.end_offset(tp) == end);
  CHECK(states.enroll(tp, 1, 0).code() == errc::producer_fenced);

  // An aborted transaction: its records are skipped, the records around it are not.
  REQUIRE(states.enroll(tp, 1, 1));
  REQUIRE(states.append(tp, txn_batch(1, 1, 0, 2)));
  REQUIRE(states.end_transaction(tp, 1, 2, false));
  REQUIRE(states.append(tp, {storage::record{std::nullopt, "after", 1, 0}}));
  CHECK(committed_values(store, states, tp) == std::vector<std::string>{"r0", "r1", "plain", "after"});

  // An owner restarted mid-transaction (the state rebuilt from the log) keeps its LSO.
  REQUIRE(states.enroll(tp, 1, 2));
  REQUIRE(states.append(tp, txn_batch(1, 2, 0, 1)));
  cluster::producer_states restarted(store);
  auto view = restarted.committed(tp, 0);
  REQUIRE(view);
  CHECK(view->open.count(1));
  CHECK(committed_values(store, restarted, tp) == std::vector<std::string>{"r0", "r1", "plain", "after"});
  REQUIRE(restarted.end_transaction(tp, 1, 3, true));
  CHECK(committed_values(store, restarted, tp).back() == "r0");  // the last transaction's one record
  CHECK(committed_values(store, restarted, tp).size() == 5);

  // A marker arriving before a (delayed) enrolment still fences it.
  REQUIRE(restarted.end_transaction(tp, 9, 4, false));
  CHECK(restarted.enroll(tp, 9, 3).code() == errc::producer_fenced);
  // Control records cannot be produced.
  auto forged = batch(5, 0, 0, 1);
  forged[0].attributes = storage::attr_control;
  CHECK(restarted.append(tp, forged).code() == errc::invalid_argument);
}

TEST_CASE("partition transactions: a late marker never closes the next transaction, and a transaction's sequences "
          "start at 0",
          "[txn]") {
  storage::memory_partition_store store;
  const topic_partition tp{"t", 0};
  REQUIRE(store.ensure_topic("t", 1));
  cluster::producer_states states(store);
  // Stamped records outside a transaction at epoch 0, then a transaction at epoch 0: its first batch is sequence 0
  // and is written, not taken for a retry of the earlier records.
  REQUIRE(states.append(tp, batch(1, 0, 0, 2)));
  REQUIRE(states.enroll(tp, 1, 0));
  const auto before = *store.end_offset(tp);
  REQUIRE(states.append(tp, txn_batch(1, 0, 0, 1)));
  CHECK(*store.end_offset(tp) > before);
  REQUIRE(states.end_transaction(tp, 1, 1, false));  // aborted, ended at epoch 1

  // The next transaction runs at epoch 1; the same abort marker, re-sent late, must leave it open.
  REQUIRE(states.enroll(tp, 1, 1));
  REQUIRE(states.append(tp, txn_batch(1, 1, 0, 1)));
  REQUIRE(states.end_transaction(tp, 1, 1, false));
  auto view = states.committed(tp, 0);
  REQUIRE(view);
  CHECK(view->open.count(1));
  REQUIRE(states.end_transaction(tp, 1, 2, true));
  CHECK(committed_values(store, states, tp) == std::vector<std::string>{"r0", "r1", "r0"});
}

TEST_CASE("partition transactions: a commit marker commits only the transaction right below its epoch, an orphan "
          "older one is aborted",
          "[txn]") {
  storage::memory_partition_store store;
  const topic_partition tp{"t", 0};
  REQUIRE(store.ensure_topic("t", 1));
  cluster::producer_states states(store);
  REQUIRE(states.enroll(tp, 3, 0));
  REQUIRE(states.append(tp, txn_batch(3, 0, 0, 1)));
  // The end of that transaction never reached this partition; a later transaction's commit (epoch 5) arrives.
  REQUIRE(states.end_transaction(tp, 3, 5, true));
  CHECK(committed_values(store, states, tp).empty());
  auto view = states.committed(tp, 0);
  REQUIRE(view);
  CHECK(view->open.empty());  // closed, as aborted
}

TEST_CASE("partition transactions: a marker records its coordinator's epoch, and a replaced coordinator's markers "
          "are refused, also after a restart",
          "[txn]") {
  storage::memory_partition_store store;
  const topic_partition tp{"t", 0};
  REQUIRE(store.ensure_topic("t", 1));
  cluster::producer_states states(store);
  REQUIRE(states.append(tp, txn_batch(4, 0, 0, 1)));
  REQUIRE(states.end_transaction(tp, 4, 1, true, 7));  // coordinator epoch 7
  REQUIRE(states.append(tp, txn_batch(4, 1, 0, 1)));
  // The coordinator as it was before it restarted (epoch 6) may not end the next transaction.
  const auto end = *store.end_offset(tp);
  auto stale = states.end_transaction(tp, 4, 2, false, 6);
  CHECK(stale.code() == errc::conflict);
  CHECK_THAT(stale.message(), Catch::Contains("coordinator epoch 6 is fenced by 7"));
  CHECK(*store.end_offset(tp) == end);
  // A re-sent marker it already wrote is still answered (idempotent), whoever sends it.
  CHECK(states.end_transaction(tp, 4, 1, true, 6));
  // The epoch is in the log: rebuilt after a restart.
  cluster::producer_states restarted(store);
  CHECK(restarted.end_transaction(tp, 4, 2, false, 6).code() == errc::conflict);
  REQUIRE(restarted.end_transaction(tp, 4, 2, true, 8));
  CHECK(committed_values(store, restarted, tp) == std::vector<std::string>{"r0", "r0"});
}

TEST_CASE("partition transactions: a session that keeps its epoch (a Kafka client's) runs its sequences on across "
          "transactions, a numbered marker ends the one open at its epoch, and a late copy of it never closes the "
          "next, also after a restart",
          "[txn]") {
  storage::memory_partition_store store;
  const topic_partition tp{"t", 0};
  REQUIRE(store.ensure_topic("t", 1));
  cluster::producer_states states(store);
  const cluster::append_options kafka{false, true};
  // Transaction 1 at epoch 0: sequences 0..1, committed by marker number 1, stamped with the same epoch.
  REQUIRE(states.append(tp, txn_batch(6, 0, 0, 2), kafka));
  REQUIRE(states.end_transaction(tp, 6, 0, true, 0, 1));
  // Transaction 2 at the same epoch: its first batch continues the sequences (2), and opens it.
  // A late retry of transaction 1's first batch is a duplicate: it opens nothing.
  const auto before_retry = *store.end_offset(tp);
  REQUIRE(states.append(tp, txn_batch(6, 0, 0, 1), kafka));
  CHECK(*store.end_offset(tp) == before_retry);
  CHECK(states.committed(tp, 0)->open.empty());
  REQUIRE(states.append(tp, txn_batch(6, 0, 2, 1), kafka));
  // The retry of transaction 2's batch is a duplicate: nothing more is written.
  const auto end = *store.end_offset(tp);
  REQUIRE(states.append(tp, txn_batch(6, 0, 2, 1), kafka));
  CHECK(*store.end_offset(tp) == end);
  // Marker 1 again (a late copy): transaction 2 stays open.
  REQUIRE(states.end_transaction(tp, 6, 0, true, 0, 1));
  CHECK(*store.end_offset(tp) == end);
  auto view = states.committed(tp, 0);
  REQUIRE(view);
  CHECK(view->open.count(6));
  CHECK(committed_values(store, states, tp) == std::vector<std::string>{"r0", "r1"});
  // After a restart the numbers and sequences are read back from the log.
  cluster::producer_states restarted(store);
  REQUIRE(restarted.end_transaction(tp, 6, 0, true, 0, 1));
  CHECK(*store.end_offset(tp) == end);
  REQUIRE(restarted.append(tp, txn_batch(6, 0, 3, 1), kafka));
  REQUIRE(restarted.end_transaction(tp, 6, 0, false, 0, 2));  // transaction 2 aborted
  CHECK(committed_values(store, restarted, tp) == std::vector<std::string>{"r0", "r1"});
  // A partition declared but not written gets marker 3 too, so that a late copy of it is known.
  const auto before_three = *store.end_offset(tp);
  REQUIRE(restarted.end_transaction(tp, 6, 0, true, 0, 3));
  CHECK(*store.end_offset(tp) > before_three);  // written with nothing open
  REQUIRE(restarted.append(tp, txn_batch(6, 0, 4, 1), kafka));
  const auto with_four = *store.end_offset(tp);
  REQUIRE(restarted.end_transaction(tp, 6, 0, true, 0, 3));
  CHECK(*store.end_offset(tp) == with_four);  // the late copy of marker 3 writes nothing
  view = restarted.committed(tp, 0);
  REQUIRE(view);
  CHECK(view->open.count(6));  // transaction 4 is open still
  // A new session (epoch 1, as InitProducerId bumps it) aborts what is open with an unnumbered marker; the old
  // session's numbered markers write nothing after it.
  REQUIRE(restarted.end_transaction(tp, 6, 1, false));
  const auto fenced_end = *store.end_offset(tp);
  REQUIRE(restarted.end_transaction(tp, 6, 0, true, 0, 4));
  CHECK(*store.end_offset(tp) == fenced_end);
  CHECK(committed_values(store, restarted, tp) == std::vector<std::string>{"r0", "r1"});
  CHECK(restarted.append(tp, txn_batch(6, 0, 5, 1), kafka).code() == errc::producer_fenced);
}

TEST_CASE("producer states: a batch that must find its transaction open is refused where it would open one",
          "[txn]") {
  storage::memory_partition_store store;
  const topic_partition tp{"t", 0};
  REQUIRE(store.ensure_topic("t", 1));
  cluster::producer_states states(store);
  CHECK(states.append(tp, txn_batch(2, 0, 0, 1), {true, false}).code() == errc::not_found);
  CHECK(*store.end_offset(tp) == 0);  // nothing written, not even a begin record
  REQUIRE(states.append(tp, txn_batch(2, 0, 0, 1)));
  REQUIRE(states.append(tp, txn_batch(2, 0, 1, 1), {true, false}));  // open: taken
  REQUIRE(states.end_transaction(tp, 2, 0, true, 0, 1));
  CHECK(states.append(tp, txn_batch(2, 0, 2, 1), {true, false}).code() == errc::not_found);
  // A Kafka producer's late retry of a batch written in the ended transaction is a duplicate before it would need
  // the transaction open: answered with its offset, nothing joined, nothing written.
  const auto end = *store.end_offset(tp);
  auto retried = states.append(tp, txn_batch(2, 0, 1, 1), {true, true});
  REQUIRE(retried);
  CHECK(*store.end_offset(tp) == end);
  CHECK(states.append(tp, txn_batch(2, 0, 2, 1), {true, true}).code() == errc::not_found);
}

namespace {
/// A memory store whose next append waits until the test releases it: an append under way, held at will.
class held_store final : public test::forwarding_store {
 public:
  bool hold_next = false;  ///< set before the appending thread starts
  std::promise<void> entered, release;

  result<std::vector<std::uint64_t>> append(const topic_partition& tp,
                                            const std::vector<storage::record>& records) override {
    if (hold_next) {
      hold_next = false;
      entered.set_value();
      release.get_future().wait();
    }
    return inner.append(tp, records);
  }
};
}  // namespace

TEST_CASE("producer states: an append that must not wait is refused, writing nothing, while another is under way",
          "[txn]") {
  held_store store;
  const topic_partition tp{"t", 0};
  REQUIRE(store.ensure_topic("t", 1));
  cluster::producer_states states(store);
  const cluster::append_options never_wait{.never_wait = true};
  REQUIRE(states.append(tp, batch(7, 0, 0, 1), never_wait));  // nothing to wait for: written at once
  store.hold_next = true;
  std::thread slow([&] { (void)states.append(tp, batch(7, 0, 1, 1)); });
  std::future<result<std::vector<std::uint64_t>>> attempt;  // destroyed after the releaser: it may wait on `slow`
  std::future<result<cluster::producer_states::committed_view>> view;  // likewise
  struct releaser {
    held_store& s;
    std::thread& t;
    ~releaser() {
      s.release.set_value();
      t.join();
    }
  } on_exit{store, slow};
  // The other append holds the partition now.
  REQUIRE(store.entered.get_future().wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  const auto end = *store.end_offset(tp);
  attempt = std::async(std::launch::async, [&] { return states.append(tp, batch(8, 0, 0, 1), never_wait); });
  // Refused at once; an append that waited for the held one would still be waiting (and the test fails here).
  REQUIRE(attempt.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  CHECK(attempt.get().code() == errc::would_block);
  CHECK(*store.end_offset(tp) == end);
  // So is a read_committed fetch's view that must not wait.
  view = std::async(std::launch::async, [&] { return states.committed(tp, 0, true); });
  REQUIRE(view.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  CHECK(view.get().code() == errc::would_block);
}

TEST_CASE("producer states: a view that must not wait is refused while the log holds bytes the table has not read",
          "[txn]") {
  storage::memory_partition_store store;
  const topic_partition tp{"t", 0};
  REQUIRE(store.ensure_topic("t", 1));
  cluster::producer_states states(store);
  REQUIRE(states.append(tp, batch(7, 0, 0, 1)));
  CHECK(states.committed(tp, 0, true));  // the table has read everything: answered at once
  // A copied batch (a move's), which the table reads at its next look: reading it may wait for the disk.
  REQUIRE(store.append_at(tp, *store.end_offset(tp), storage::encode_records(batch(9, 0, 0, 2)).bytes));
  CHECK(states.committed(tp, 0, true).code() == errc::would_block);
  REQUIRE(states.committed(tp, 0));  // a thread that may wait reads it
  CHECK(states.committed(tp, 0, true));
}
