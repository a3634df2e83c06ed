// Appends through producer_states: deduplication against what the log holds, after a restart (a new object over
// the same log) and on a broker that received the log's bytes by copy.
#include <catch2/catch.hpp>

#include "moonmq/cluster/producer_states.hpp"
#include "moonmq/storage/memory_partition_store.hpp"

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
