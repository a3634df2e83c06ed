#include <catch2/catch.hpp>

#include "moonmq/storage/record.hpp"

using namespace moonmq::storage;

TEST_CASE("a record survives encoding and decoding", "[record]") {
  record r{std::string("k1"), "value-1", 1700000000123, 0};
  record no_key{std::nullopt, "v", -5, attr_control};
  std::string bytes = encode_frame(r);
  encode_frame(no_key, bytes);
  CHECK(bytes.size() == frame_size(r) + frame_size(no_key));
  auto scan = scan_frames(bytes);
  CHECK(scan.end == frame_scan::ending::clean);
  CHECK(scan.records == 2);
  auto views = decode_frames(bytes, 100);
  REQUIRE(views.size() == 2);
  CHECK(views[0].offset == 100);
  CHECK(*views[0].key == "k1");
  CHECK(views[0].value == "value-1");
  CHECK(views[0].timestamp_ms == 1700000000123);
  CHECK(views[1].offset == 100 + frame_size(r));
  CHECK_FALSE(views[1].key.has_value());
  CHECK(views[1].attributes == attr_control);
  CHECK(views[1].timestamp_ms == -5);
}

TEST_CASE("an empty key is not a missing key", "[record]") {
  auto views = decode_frames(encode_frame(record{std::string(), "v", 0, 0}), 0);
  REQUIRE(views[0].key.has_value());
  CHECK(views[0].key->empty());
}

TEST_CASE("a cut-off frame is partial and a flipped bit is corrupt", "[record]") {
  std::string bytes = encode_frame(record{std::nullopt, "abcdef", 1, 0});
  std::string two = bytes + bytes;
  auto cut = scan_frames(std::string_view(two).substr(0, two.size() - 3));
  CHECK(cut.end == frame_scan::ending::partial);
  CHECK(cut.whole == bytes.size());
  std::string flipped = two;
  flipped[frame_header_size + 3] ^= 0x40;
  auto bad = scan_frames(flipped);
  CHECK(bad.end == frame_scan::ending::corrupt);
  CHECK(bad.whole == 0);
  CHECK(bad.what == "checksum mismatch");
  std::string zeros = bytes + std::string(40, '\0');
  auto z = scan_frames(zeros);
  CHECK(z.end == frame_scan::ending::partial);
  CHECK(z.whole == bytes.size());
  std::string junk = bytes + std::string("\x01\x00\x00\x00\x00\x00\x00\x00", 8);
  CHECK(scan_frames(junk).end == frame_scan::ending::corrupt);
}

TEST_CASE("a read returns whole frames within the byte limit, and at least one", "[record]") {
  std::string one = encode_frame(record{std::nullopt, std::string(100, 'x'), 0, 0});
  std::string three = one + one + one;
  CHECK(frames_within(three, 10) == one.size());  // the first frame even when larger than the limit
  CHECK(frames_within(three, one.size() * 2) == one.size() * 2);
  CHECK(frames_within(three, one.size() * 2 + 5) == one.size() * 2);
  std::size_t first = 0;
  CHECK(frames_within(std::string_view(three).substr(0, 50), 1000, &first) == 0);
  CHECK(first == one.size());
}

TEST_CASE("a bad frame is a torn last write only when nothing but zeros follows it", "[record]") {
  const std::string first = encode_frame(record{std::nullopt, "first", 1, 0});
  std::string damaged = encode_frame(record{std::nullopt, "second", 2, 0});
  damaged.back() ^= 0x01;  // the crash tore its last bytes: the checksum fails
  auto torn = [](const std::string& file) {
    auto scan = scan_frames(file);
    REQUIRE(scan.end == frame_scan::ending::corrupt);
    return is_torn_last_write(std::string_view(file).substr(scan.whole), scan.whole, file.size(),
                              [&](std::uint64_t at) { return all_zero_from(file, at); });
  };
  CHECK(torn(first + damaged));                            // its length reaches the end of the file
  CHECK(torn(first + damaged + std::string(8192, '\0')));  // zero fill after it
  // The same damaged frame with a good one after it is damage in the middle of the log, zero fill or not.
  CHECK_FALSE(torn(first + damaged + first));
  CHECK_FALSE(torn(first + damaged + std::string(100, '\0') + first));
  // A length that cannot be: torn only when zeros follow its header.
  const std::string garbage("\xff\xff\xff\x7f", 4);
  CHECK(torn(first + garbage + std::string(64, '\0')));
  CHECK_FALSE(torn(first + garbage + std::string(64, '\0') + first));
}
