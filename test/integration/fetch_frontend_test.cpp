// The fetch front end on a thread that must not wait (frontend::fetch_request::never_wait, the Kafka listener's
// reactor): it answers exactly what a fetch that may wait answers, and refuses (errc::would_block) where it would
// wait for the brokers or for the producer table to read the log, instead of waiting.
#include <catch2/catch.hpp>

#include "support/in_process_cluster.hpp"

using namespace moonmq;
using namespace moonmq::test;

TEST_CASE("fetch front end: a fetch that must not wait answers as one that may, and refuses where it would wait",
          "[frontend]") {
  in_process_cluster c(3, 4096);
  const topic_partition tp{"orders", 0};
  REQUIRE(c[1].store.ensure_topic("orders", 1));
  for (int i = 0; i < 5; ++i) REQUIRE(c.produce(1, tp, {rec(std::string(100, 'a' + i))}));
  auto here = c[1].fetch_frontend();
  for (const bool read_committed : {false, true}) {
    INFO("read_committed " << read_committed);
    auto at_once = here.fetch({tp, 1, 1 << 20, read_committed, false, true});
    auto waiting = here.fetch({tp, 1, 1 << 20, read_committed});
    REQUIRE(waiting);
    REQUIRE(at_once);
    CHECK(at_once->offset == waiting->offset);
    CHECK(at_once->read.bytes.view() == waiting->read.bytes.view());
    CHECK(at_once->records.size() == 4);
    CHECK(at_once->next_offset == waiting->next_offset);
    CHECK(at_once->last_stable_offset == waiting->last_stable_offset);
  }
  // Bytes the producer table has not read (a copied batch): read_committed would have it read them first.
  REQUIRE(c[1].store.append_at(tp, *c[1].store.end_offset(tp), storage::encode_frame(rec("copied"))));
  CHECK(here.fetch({tp, 0, 1 << 20, true, false, true}).code() == errc::would_block);
  CHECK(here.fetch({tp, 0, 1 << 20, false, false, true}));  // read_uncommitted needs no table
  REQUIRE(here.fetch({tp, 0, 1 << 20, true}));             // a thread that may wait reads them
  CHECK(here.fetch({tp, 0, 1 << 20, true, false, true}));
  // A broker that does not hold the topic would ask the brokers who serves it.
  CHECK(c[2].fetch_frontend().fetch({tp, 0, 1 << 20, false, false, true}).code() == errc::would_block);
}

namespace {

/// `count` records of 100 bytes that arrived in one Kafka batch.
std::vector<storage::record> kafka_batch(std::uint32_t count) {
  std::vector<storage::record> out;
  std::uint32_t distance = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    auto r = rec(std::string(100, static_cast<char>('a' + i)));
    r.batch = storage::batch_position{i, count, distance};
    distance += static_cast<std::uint32_t>(storage::frame_size(r));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

TEST_CASE("fetch front end: with whole batches, a read ends at a stored batch's end, and completes a first batch",
          "[frontend]") {
  in_process_cluster c(1, 4096);
  const topic_partition tp{"orders", 0};
  REQUIRE(c[1].store.ensure_topic("orders", 1));
  REQUIRE(c.produce(1, tp, kafka_batch(1)));
  const std::uint64_t second = *c[1].store.end_offset(tp);
  REQUIRE(c.produce(1, tp, kafka_batch(10)));
  const std::uint64_t end = *c[1].store.end_offset(tp);
  const std::size_t frame = storage::frame_size(kafka_batch(1)[0]);
  auto here = c[1].fetch_frontend();
  for (const bool never_wait : {false, true}) {
    INFO("never_wait " << never_wait);
    // Without whole batches, the limit cuts the second batch after its third record.
    auto cut = here.fetch({tp, 0, 4 * frame, false, false, never_wait});
    REQUIRE(cut);
    CHECK(cut->records.size() == 4);
    CHECK(cut->next_offset == second + 3 * frame);
    // With them, the cut batch is left for the next fetch.
    auto ends = here.fetch({tp, 0, 4 * frame, false, false, never_wait, 1 << 20});
    REQUIRE(ends);
    REQUIRE(ends->records.size() == 1);
    CHECK(ends->data_records == 1);
    CHECK_FALSE(ends->batch_cut);
    CHECK(ends->next_offset == second);
    // The first batch of a read is completed past the limit, within whole_batch_bytes.
    auto whole = here.fetch({tp, second, 4 * frame, false, false, never_wait, 1 << 20});
    REQUIRE(whole);
    REQUIRE(whole->records.size() == 10);
    CHECK(whole->data_records == 10);
    CHECK(whole->records.back().batch->index == 9);
    CHECK(whole->next_offset == end);
    CHECK_FALSE(whole->batch_cut);
    // From inside the batch, its rest.
    auto rest = here.fetch({tp, second + 1, 2 * frame, false, false, never_wait, 1 << 20});
    REQUIRE(rest);
    CHECK(rest->records.size() == 9);
    CHECK(rest->next_offset == end);
    // Too little room to complete it: it comes cut, and says so.
    auto small = here.fetch({tp, second, 4 * frame, false, false, never_wait, 6 * frame});
    REQUIRE(small);
    CHECK(small->records.size() == 4);
    CHECK(small->batch_cut);
    CHECK(small->next_offset == second + 4 * frame);
  }
}
