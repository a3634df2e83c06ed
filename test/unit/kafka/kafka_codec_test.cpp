// The Kafka codec: primitives, record batches as produced and as fetched, and the refusals a produce can meet.
#include <catch2/catch.hpp>

#include <variant>

#include "moonmq/kafka/codec.hpp"
#include "moonmq/kafka/messages.hpp"
#include "moonmq/kafka/record_batch.hpp"

using namespace moonmq;

namespace {

void put_be32(std::string& s, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) s[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * (3 - i))) & 0xff);
}

/// One record encoded as a fetch encodes the log's frames, then as a produce sends it: the last offset delta is the
/// record count less one (a fetch's reaches the frame's last byte), CRC recomputed.
std::string batch_of(std::vector<storage::record> records) {
  std::string frames;
  for (const auto& r : records) storage::encode_frame(r, frames);
  auto views = storage::decode_frames(frames, 0);
  std::string out;
  kafka::encode_batches(views, out);
  REQUIRE(records.size() == 1);
  CHECK(kafka::reader(std::string_view(out).substr(23, 4)).i32() == static_cast<std::int32_t>(views[0].frame_size - 1));
  put_be32(out, 23, 0);
  put_be32(out, 17, crc32c(out.data() + 21, out.size() - 21));
  return out;
}

}  // namespace

TEST_CASE("kafka codec: varints, strings and arrays round-trip, and a length past the input fails the reader",
          "[kafka]") {
  kafka::writer w;
  w.varlong(-1);
  w.varlong(300);
  w.uvarint(1u << 28);
  w.string("abc", false);
  w.string("de", true);
  w.nullable_string(std::nullopt, false);
  w.array_count(2, false);
  kafka::reader r(w.bytes());
  CHECK(r.varlong() == -1);
  CHECK(r.varlong() == 300);
  CHECK(r.uvarint() == 1u << 28);
  CHECK(r.string_or_empty(false) == "abc");
  CHECK(r.string_or_empty(true) == "de");
  CHECK(!r.string(false, true).has_value());
  CHECK(r.ok());
  // Two elements of at least 4 bytes each cannot fit in what is left (nothing): refused before any allocation.
  CHECK(r.array_count(false, 4) == 0);
  CHECK(!r.ok());

  const std::string length_past_the_end("\x7f\xff\xff\xff", 4), null_length("\xff\xff", 2);
  kafka::reader huge(length_past_the_end);
  CHECK(!huge.bytes(false).has_value());
  CHECK(!huge.ok());
  kafka::reader null_not_allowed(null_length);
  null_not_allowed.string(false, false);
  CHECK(!null_not_allowed.ok());
}

TEST_CASE("kafka record batch: what a fetch encodes, a produce decodes, with key, value, headers and timestamp",
          "[kafka]") {
  storage::record rec;
  rec.key = "k";
  rec.value = "v";
  rec.timestamp_ms = 1234;
  rec.headers = std::string("\x02\x02h\x02x", 5);  // one header: h = x
  auto decoded = kafka::decode_produced_batch(batch_of({rec}));
  REQUIRE(std::holds_alternative<kafka::produced_batch>(decoded));
  const auto& b = std::get<kafka::produced_batch>(decoded);
  REQUIRE(b.records.size() == 1);
  REQUIRE(storage::scan_frames(b.records.bytes).end == storage::frame_scan::ending::clean);
  const auto v = storage::decode_frames(b.records.bytes, 0);
  CHECK(v[0].key == std::optional<std::string_view>("k"));
  CHECK(v[0].value == "v");
  CHECK(v[0].timestamp_ms == 1234);
  CHECK(v[0].headers == rec.headers);
  CHECK(v[0].batch == storage::batch_position{0, 1, 0});
  CHECK(!v[0].producer.has_value());
  CHECK(!b.producer.has_value());

  storage::record tombstone;
  tombstone.attributes = storage::attr_null_value;
  auto null_value = kafka::decode_produced_batch(batch_of({tombstone}));
  REQUIRE(std::holds_alternative<kafka::produced_batch>(null_value));
  const auto tomb = storage::decode_frames(std::get<kafka::produced_batch>(null_value).records.bytes, 0);
  CHECK(tomb[0].attributes & storage::attr_null_value);
  CHECK(!tomb[0].key.has_value());
}

TEST_CASE("kafka record batch: a produced batch becomes the frames its records encode to, stamped and numbered",
          "[kafka]") {
  // Three records of a transactional producer (id 5, epoch 1, sequences 10..12), as one stored batch would hold them.
  std::vector<storage::record> records(3);
  std::uint32_t distance = 0;
  for (std::uint32_t i = 0; i < 3; ++i) {
    auto& r = records[i];
    if (i != 1) r.key = "key" + std::to_string(i);
    r.value = std::string(20 + i, 'a' + static_cast<char>(i));
    r.timestamp_ms = 5000 + i;
    r.attributes = storage::attr_transactional;
    r.producer = storage::producer_stamp{5, 1, 10 + i};
    r.batch = storage::batch_position{i, 3, distance};
    distance += static_cast<std::uint32_t>(storage::frame_size(r));
  }
  const auto want = storage::encode_records(records);
  std::string produced;
  kafka::encode_batches(storage::decode_frames(want.bytes, 0), produced);
  put_be32(produced, 23, 2);  // a producer's lastOffsetDelta: count - 1 (a fetch's reaches the last byte)
  put_be32(produced, 17, crc32c(produced.data() + 21, produced.size() - 21));
  auto decoded = kafka::decode_produced_batch(produced);
  REQUIRE(std::holds_alternative<kafka::produced_batch>(decoded));
  const auto& b = std::get<kafka::produced_batch>(decoded);
  CHECK(b.transactional);
  CHECK(b.producer == storage::producer_stamp{5, 1, 10});
  CHECK(b.records.starts == want.starts);
  CHECK(b.records.bytes == want.bytes);  // byte for byte: every field, stamp and batch position
}

TEST_CASE("kafka record batch: a record larger than a log record may be is refused as too large", "[kafka]") {
  storage::record big;
  big.value = std::string(storage::max_payload_size, 'x');  // with the frame's fixed fields, past the limit
  auto decoded = kafka::decode_produced_batch(batch_of({big}), 128u << 20);
  REQUIRE(std::holds_alternative<kafka::batch_refusal>(decoded));
  CHECK(std::get<kafka::batch_refusal>(decoded).fault == kafka::batch_fault::too_large);
  big.value.resize(storage::max_payload_size - storage::payload_fixed_size - storage::batch_fields_size);
  CHECK(std::holds_alternative<kafka::produced_batch>(kafka::decode_produced_batch(batch_of({big}))));  // just fits
}

TEST_CASE("kafka record batch: a bad CRC, a control batch, a wrong count and a second batch are refused", "[kafka]") {
  storage::record rec;
  rec.value = "payload";
  const std::string good = batch_of({rec});
  auto fault = [](const std::string& bytes) {
    auto d = kafka::decode_produced_batch(bytes);
    return std::holds_alternative<kafka::batch_refusal>(d) ? std::get<kafka::batch_refusal>(d).fault
                                                           : static_cast<kafka::batch_fault>(-1);
  };
  std::string flipped = good;
  flipped.back() ^= 1;
  CHECK(fault(flipped) == kafka::batch_fault::corrupt);

  // The attributes (offset 21) with the control bit, CRC recomputed: a client may not write markers.
  std::string control = good;
  control[22] = static_cast<char>(control[22] | kafka::batch_control);
  put_be32(control, 17, crc32c(control.data() + 21, control.size() - 21));
  CHECK(fault(control) == kafka::batch_fault::invalid);

  CHECK(fault(good + good) == kafka::batch_fault::corrupt);
  CHECK(fault(good.substr(0, 30)) == kafka::batch_fault::corrupt);

  std::string old_format = good;
  old_format[16] = 1;
  CHECK(fault(old_format) == kafka::batch_fault::unsupported_magic);
}

TEST_CASE("kafka framing: an ApiVersions of an unknown version is read far enough to answer it", "[kafka]") {
  const std::string request("\x00\x12\x00\x63\x00\x00\x00\x09", 8);
  kafka::reader r(request);
  kafka::request_header h;
  REQUIRE(kafka::decode_header(r, h));
  CHECK(h.api_key == 18);
  CHECK(h.api_version == 99);
  CHECK(h.correlation_id == 9);
  kafka::writer w;
  kafka::start_response(w, h);
  kafka::encode(w, 0, kafka::api_versions_response{kafka::error_code::unsupported_version});
  kafka::finish_response(w);
  kafka::reader answer(w.bytes());
  CHECK(answer.i32() == static_cast<std::int32_t>(w.size() - 4));
  CHECK(answer.i32() == 9);
  CHECK(answer.i16() == kafka::error_code::unsupported_version);
  CHECK(answer.array_count(false, 6) == static_cast<std::int32_t>(kafka::supported_versions().size()));
}

TEST_CASE("kafka admin messages: CreatePartitions, DeleteTopics v4, DescribeConfigs and OffsetForLeaderEpoch",
          "[kafka]") {
  auto body = [](auto fill) {
    kafka::writer w;
    fill(w);
    return w.take();
  };
  SECTION("CreatePartitions v1 with and without assignments") {
    const auto bytes = body([](kafka::writer& w) {
      w.array_count(2, false);
      w.string("a", false);
      w.i32(5);
      w.i32(-1);  // no assignments
      w.string("b", false);
      w.i32(3);
      w.array_count(1, false);
      w.array_count(2, false);
      w.i32(1);
      w.i32(2);
      w.i32(1500);
      w.boolean(true);
    });
    kafka::reader r(bytes);
    kafka::create_partitions_request c;
    REQUIRE(kafka::decode(r, 1, c));
    REQUIRE(c.topics.size() == 2);
    CHECK(c.topics[0].count == 5);
    CHECK_FALSE(c.topics[0].assignments);
    REQUIRE(c.topics[1].assignments);
    CHECK((*c.topics[1].assignments)[0] == std::vector<std::int32_t>{1, 2});
    CHECK(c.timeout_ms == 1500);
    CHECK(c.validate_only);
    kafka::reader cut(std::string_view(bytes).substr(0, bytes.size() - 3));
    kafka::create_partitions_request partial;
    CHECK_FALSE(kafka::decode(cut, 1, partial));
  }
  SECTION("DeleteTopics v4 is flexible, v1 is not") {
    const auto flexible = body([](kafka::writer& w) {
      w.array_count(1, true);
      w.string("gone", true);
      w.i32(100);
      w.tagged_fields();
    });
    kafka::reader r(flexible);
    kafka::delete_topics_request d;
    REQUIRE(kafka::decode(r, 4, d));
    CHECK(d.names == std::vector<std::string>{"gone"});
    kafka::writer w4, w1;
    kafka::delete_topics_response out{{{"gone", kafka::error_code::unknown_topic_or_partition}}};
    kafka::encode(w4, 4, out);
    kafka::encode(w1, 1, out);
    // v4: throttle, compact count 2, compact "gone", error, element tags, trailing tags.
    CHECK(w4.bytes() == std::string("\0\0\0\0\x02\x05gone\x00\x03\x00\x00", 14));
    CHECK(w1.bytes() == std::string("\0\0\0\0\0\0\0\x01\0\x04gone\x00\x03", 16));
  }
  SECTION("DescribeConfigs: all keys (null) or some; v0 says is_default where v1 says the source") {
    const auto bytes = body([](kafka::writer& w) {
      w.array_count(2, false);
      w.i8(2);
      w.string("t", false);
      w.i32(-1);
      w.i8(4);
      w.string("1", false);
      w.array_count(1, false);
      w.string("broker.id", false);
      w.boolean(false);
    });
    kafka::reader r(bytes);
    kafka::describe_configs_request d;
    REQUIRE(kafka::decode(r, 1, d));
    REQUIRE(d.resources.size() == 2);
    CHECK_FALSE(d.resources[0].keys);
    CHECK(d.resources[1].keys == std::optional<std::vector<std::string>>({"broker.id"}));
    kafka::describe_configs_response out;
    out.results.push_back({0, std::nullopt, 2, "t", {{"retention.ms", "-1", true, 5}}});
    kafka::writer v0, v1;
    kafka::encode(v0, 0, out);
    kafka::encode(v1, 1, out);
    // v1 adds an empty synonyms array (4 bytes); is_default (1 byte) and the source (1 byte) take the same place.
    CHECK(v1.size() == v0.size() + 4);
    CHECK(v0.bytes()[v0.size() - 3] == 1);  // read_only, then is_default = true, then sensitive = false
    CHECK(v0.bytes()[v0.size() - 2] == 1);
    CHECK(v1.bytes()[v1.size() - 6] == 5);  // the source: DEFAULT_CONFIG
  }
  SECTION("OffsetForLeaderEpoch v3 reads the replica id and current epochs; the answer puts the error first") {
    const auto bytes = body([](kafka::writer& w) {
      w.i32(-1);
      w.array_count(1, false);
      w.string("t", false);
      w.array_count(1, false);
      w.i32(2);
      w.i32(7);
      w.i32(6);
    });
    kafka::reader r(bytes);
    kafka::offset_for_leader_epoch_request o;
    REQUIRE(kafka::decode(r, 3, o));
    CHECK(o.topics[0].partitions[0].index == 2);
    CHECK(o.topics[0].partitions[0].current_leader_epoch == 7);
    CHECK(o.topics[0].partitions[0].leader_epoch == 6);
    kafka::offset_for_leader_epoch_response out;
    out.topics.push_back({"t", {{kafka::error_code::fenced_leader_epoch, 2, 6, 100}}});
    kafka::writer w;
    kafka::encode(w, 3, out);
    CHECK(w.bytes() == std::string("\0\0\0\0\0\0\0\x01\0\x01t\0\0\0\x01\0\x4a\0\0\0\x02\0\0\0\x06\0\0\0\0\0\0\0\x64", 33));
  }
}

TEST_CASE("kafka offsets: a stored Kafka batch is numbered base + index, fetched whole or cut, next to other records",
          "[kafka]") {
  // A single frame before (numbered by its position), then a batch of three, then another single frame.
  std::vector<storage::record> batch(3);
  for (int i = 0; i < 3; ++i) {
    batch[static_cast<std::size_t>(i)].key = "b" + std::to_string(i);
    batch[static_cast<std::size_t>(i)].value = std::string(40 + 10 * static_cast<std::size_t>(i), 'v');
    batch[static_cast<std::size_t>(i)].producer = storage::producer_stamp{9, 1, 100 + static_cast<std::uint32_t>(i)};
  }
  std::uint32_t distance = 0;  // numbered as the Kafka decoder numbers a produced batch
  for (std::uint32_t i = 0; i < 3; ++i) {
    batch[i].batch = storage::batch_position{i, 3, distance};
    distance += static_cast<std::uint32_t>(storage::frame_size(batch[i]));
  }
  storage::record alone;
  alone.value = "alone";
  std::string log;
  storage::encode_frame(alone, log);
  const std::uint64_t base = log.size();
  for (const auto& r : batch) storage::encode_frame(r, log);
  const std::uint64_t after = log.size();
  storage::encode_frame(alone, log);
  REQUIRE(storage::scan_frames(log).end == storage::frame_scan::ending::clean);
  const auto views = storage::decode_frames(log, 0);
  REQUIRE(views.size() == 5);
  CHECK(storage::kafka_offset(views[0]) == 0);
  for (std::uint32_t i = 0; i < 3; ++i) {
    REQUIRE(views[1 + i].batch);
    CHECK(views[1 + i].batch->index == i);
    CHECK(views[1 + i].batch->count == 3);
    CHECK(storage::kafka_offset(views[1 + i]) == base + i);
    CHECK(views[1 + i].offset >= base + i);  // within the batch's bytes
  }
  CHECK(storage::kafka_offset(views[4]) == after);
  // A copy appended on its own is numbered by its own frame.
  CHECK_FALSE(storage::to_record(views[2]).batch);

  auto header = [](const std::string& bytes, std::size_t at) {
    kafka::reader r(std::string_view(bytes).substr(at, 61));
    const std::int64_t base_offset = r.i64();
    r.i32();
    r.i32();
    r.i8();
    r.i32();
    r.i16();
    const std::int32_t last_delta = r.i32();
    r.i64();
    r.i64();
    r.i64();
    r.i16();
    const std::int32_t base_sequence = r.i32();
    const std::int32_t count = r.i32();
    return std::tuple{base_offset, last_delta, base_sequence, count};
  };
  auto batch_length = [](const std::string& bytes, std::size_t at) {
    return static_cast<std::size_t>(kafka::reader(std::string_view(bytes).substr(at + 8, 4)).i32()) + 12;
  };
  // Whole: three Kafka batches; the stored one keeps base, its three records, and reaches its last byte.
  std::string out;
  kafka::encode_batches(views, out);
  const std::size_t second = batch_length(out, 0);
  const auto [b0, d0, s0, n0] = header(out, 0);
  CHECK(b0 == 0);
  CHECK(n0 == 1);
  const auto [b1, d1, s1, n1] = header(out, second);
  CHECK(b1 == static_cast<std::int64_t>(base));
  CHECK(d1 == static_cast<std::int32_t>(after - 1 - base));
  CHECK(s1 == 100);
  CHECK(n1 == 3);
  const auto [b2, d2, s2, n2] = header(out, second + batch_length(out, second));
  CHECK(b2 == static_cast<std::int64_t>(after));
  CHECK(n2 == 1);
  // Cut after the batch's second record: it ends at that record, so the next fetch asks for base + 2.
  std::string cut;
  kafka::encode_batches(std::span(views).subspan(1, 2), cut);
  const auto [cb, cd, cs, cn] = header(cut, 0);
  CHECK(cb == static_cast<std::int64_t>(base));
  CHECK(cd == 1);
  CHECK(cn == 2);
  // Starting inside: base stays, the first record's delta is its index, the base sequence is the batch's.
  std::string inside;
  kafka::encode_batches(std::span(views).subspan(2, 2), inside);
  const auto [ib, id, is, in] = header(inside, 0);
  CHECK(ib == static_cast<std::int64_t>(base));
  CHECK(id == static_cast<std::int32_t>(after - 1 - base));
  CHECK(is == 100);
  CHECK(in == 2);
}
