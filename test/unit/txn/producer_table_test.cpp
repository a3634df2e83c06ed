// Idempotent producers: the frame's producer fields, and one partition's judgement of a producer's batches.
#include <catch2/catch.hpp>

#include "moonmq/txn/producer_table.hpp"

using namespace moonmq;
using storage::producer_stamp;
using txn::producer_table;

namespace {
/// Writes `count` records of `first` at offsets from `at` (10 apart), as the log would after an append.
void written(producer_table& t, producer_stamp first, int count, std::uint64_t at) {
  for (int i = 0; i < count; ++i) {
    auto s = first;
    s.sequence += static_cast<std::uint32_t>(i);
    t.observe(s, at + 10 * static_cast<std::uint64_t>(i));
  }
}
}  // namespace

TEST_CASE("record frames: producer fields survive encoding, are covered by the checksum, and older frames read as "
          "before",
          "[txn][storage]") {
  storage::record stamped{std::string("k"), "value", 7, 0, producer_stamp{42, 3, 9}};
  const std::string frame = storage::encode_frame(stamped);
  CHECK(frame.size() == storage::frame_size(stamped));
  auto scan = storage::scan_frames(frame);
  CHECK(scan.end == storage::frame_scan::ending::clean);
  auto views = storage::decode_frames(frame, 100);
  REQUIRE(views.size() == 1);
  REQUIRE(views[0].producer);
  CHECK(*views[0].producer == producer_stamp{42, 3, 9});
  CHECK(views[0].attributes & storage::attr_producer);
  CHECK(*views[0].key == "k");
  CHECK(views[0].value == "value");
  CHECK(storage::encode_frame(storage::to_record(views[0])) == frame);

  // Flipping a byte of the producer fields fails the checksum.
  std::string damaged = frame;
  damaged[storage::frame_header_size + storage::payload_fixed_size + 2] ^= 1;
  CHECK(storage::scan_frames(damaged).end == storage::frame_scan::ending::corrupt);

  // A frame without the bit: no producer, same layout as ever.
  storage::record plain{std::nullopt, "v", 1, 0};
  const std::string plain_frame = storage::encode_frame(plain);  // the views point into it
  auto plain_views = storage::decode_frames(plain_frame, 0);
  CHECK_FALSE(plain_views[0].producer);
  CHECK(plain_views[0].value == "v");

  // A frame claiming producer fields it is too short to hold is corrupt, not read past its end.
  std::string cut = storage::encode_frame(storage::record{std::nullopt, "", 1, 0});
  cut[storage::frame_header_size] = static_cast<char>(storage::attr_producer);
  const std::uint32_t crc = crc32c(cut.data() + storage::frame_header_size, cut.size() - storage::frame_header_size);
  for (int i = 0; i < 4; ++i) cut[4 + static_cast<std::size_t>(i)] = static_cast<char>((crc >> (8 * i)) & 0xff);
  CHECK(storage::scan_frames(cut).end == storage::frame_scan::ending::corrupt);
}

TEST_CASE("producer table: sequences follow on, retries get their offsets, gaps and old epochs are refused",
          "[txn]") {
  producer_table t;
  // A new producer starts at 0.
  CHECK(t.check({1, 0, 0}, 3));
  auto late_start = t.check({1, 0, 5}, 1);
  REQUIRE_FALSE(late_start);
  CHECK(late_start.code() == errc::out_of_order_sequence);
  written(t, {1, 0, 0}, 3, 1000);

  // The next batch follows on; a retry of a written one gets the original offsets, nothing is written again.
  auto next = t.check({1, 0, 3}, 2);
  REQUIRE(next);
  CHECK_FALSE(next->duplicate);
  auto retry = t.check({1, 0, 1}, 2);
  REQUIRE(retry);
  CHECK(retry->duplicate);
  CHECK(retry->offsets == std::vector<std::uint64_t>{1010, 1020});

  // A gap, and a batch that overlaps only part of what was written, are out of order.
  CHECK(t.check({1, 0, 4}, 1).code() == errc::out_of_order_sequence);
  CHECK(t.check({1, 0, 2}, 3).code() == errc::out_of_order_sequence);

  // A newer epoch starts at 0 and fences the older one.
  CHECK(t.check({1, 1, 1}, 1).code() == errc::out_of_order_sequence);
  REQUIRE(t.check({1, 1, 0}, 1));
  written(t, {1, 1, 0}, 1, 2000);
  auto fenced = t.check({1, 0, 3}, 1);
  REQUIRE_FALSE(fenced);
  CHECK(fenced.code() == errc::producer_fenced);
  // ...even for what the older epoch wrote: its retry is not answered with offsets any more.
  CHECK(t.check({1, 0, 0}, 1).code() == errc::producer_fenced);

  // Producers are independent.
  CHECK(t.check({2, 0, 0}, 1));
}

TEST_CASE("producer table: a retry older than the kept offsets is a duplicate without offsets, and the producer "
          "count is bounded",
          "[txn]") {
  producer_table t(2);
  written(t, {1, 0, 0}, static_cast<int>(producer_table::kept_offsets) + 10, 0);
  auto old = t.check({1, 0, 0}, 1);
  REQUIRE_FALSE(old);
  CHECK(old.code() == errc::duplicate_sequence);
  auto recent = t.check({1, 0, static_cast<std::uint32_t>(producer_table::kept_offsets) + 9}, 1);
  REQUIRE(recent);
  CHECK(recent->duplicate);

  written(t, {2, 0, 0}, 1, 0);
  auto third = t.check({3, 0, 0}, 1);
  REQUIRE_FALSE(third);
  CHECK(third.code() == errc::resource_exhausted);
  CHECK(t.check({2, 0, 1}, 1));  // known producers go on

  CHECK(t.check({1, 0, INT32_MAX}, 2).code() == errc::invalid_argument);  // past the sequence space
}
