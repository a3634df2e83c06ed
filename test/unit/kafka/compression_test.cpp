// Kafka's batch compression codecs (include/moonmq/kafka/compression.hpp): each one decompresses what its library
// compressed, a limit stops a small input from becoming a large buffer, and damaged or cut input is refused; a
// compressed produce batch decodes to the same records as the uncompressed one.
#include <catch2/catch.hpp>

#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <string>
#include <variant>

#include "moonmq/core/crc32c.hpp"
#include "moonmq/kafka/codec.hpp"
#include "moonmq/kafka/compression.hpp"
#include "moonmq/kafka/record_batch.hpp"

using namespace moonmq;

namespace {

std::string gzip(const std::string& in) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, static_cast<uLong>(in.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string snappy(const std::string& in) {
  std::size_t n = snappy_max_compressed_length(in.size());
  std::string out(n, '\0');
  REQUIRE(snappy_compress(in.data(), in.size(), out.data(), &n) == SNAPPY_OK);
  out.resize(n);
  return out;
}

std::string xerial(const std::string& in) {
  std::string out("\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01", 16);
  for (std::size_t at = 0; at < in.size(); at += 1000) {
    const std::string block = snappy(in.substr(at, 1000));
    for (int i = 3; i >= 0; --i) out += static_cast<char>((block.size() >> (8 * i)) & 0xff);
    out += block;
  }
  return out;
}

std::string lz4(const std::string& in) {
  std::string out(LZ4F_compressFrameBound(in.size(), nullptr), '\0');
  const std::size_t n = LZ4F_compressFrame(out.data(), out.size(), in.data(), in.size(), nullptr);
  REQUIRE_FALSE(LZ4F_isError(n));
  out.resize(n);
  return out;
}

std::string zstd(const std::string& in) {
  std::string out(ZSTD_compressBound(in.size()), '\0');
  const std::size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3);
  REQUIRE_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

void put_be32(std::string& s, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) s[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * (3 - i))) & 0xff);
}

}  // namespace

TEST_CASE("kafka compression: every codec decompresses what its library made", "[kafka][compression]") {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "record " + std::to_string(i) + ";";
  using kafka::compression;
  for (const auto& [codec, bytes] : std::vector<std::pair<compression, std::string>>{
           {compression::gzip, gzip(text)},
           {compression::snappy, snappy(text)},
           {compression::snappy, xerial(text)},
           {compression::lz4, lz4(text)},
           {compression::zstd, zstd(text)}}) {
    INFO("codec " << static_cast<int>(codec));
    auto out = kafka::decompress(codec, bytes, 1u << 20);
    REQUIRE(out);
    CHECK(*out == text);
    // Exactly the size is enough; one byte less is not.
    CHECK(kafka::decompress(codec, bytes, text.size()));
    CHECK(kafka::decompress(codec, bytes, text.size() - 1).code() == errc::resource_exhausted);
    // Cut short, or with bytes after the end: refused as corrupt.
    CHECK(kafka::decompress(codec, bytes.substr(0, bytes.size() / 2), 1u << 20).code() == errc::corrupt);
    CHECK_FALSE(kafka::decompress(codec, bytes + "trailing", 1u << 20));
    CHECK_FALSE(kafka::decompress(codec, "not compressed at all", 1u << 20));
  }
}

TEST_CASE("kafka compression: 64 MiB of zeros in a few kilobytes stops at the limit", "[kafka][compression]") {
  const std::string zeros(64u << 20, '\0');
  using kafka::compression;
  for (const auto& [codec, bytes] : std::vector<std::pair<compression, std::string>>{
           {compression::gzip, gzip(zeros)}, {compression::lz4, lz4(zeros)}, {compression::zstd, zstd(zeros)}}) {
    INFO("codec " << static_cast<int>(codec) << ", " << bytes.size() << " bytes compressed");
    CHECK(bytes.size() < (1u << 20));
    auto out = kafka::decompress(codec, bytes, 1u << 20);
    CHECK(out.code() == errc::resource_exhausted);
  }
  // Snappy states its length up front: refused before any output is made.
  CHECK(kafka::decompress(compression::snappy, snappy(std::string(8u << 20, '\0')), 1u << 20).code() ==
        errc::resource_exhausted);
}

TEST_CASE("kafka compression: a compressed produce batch decodes to the records of the plain one",
          "[kafka][compression]") {
  // A plain batch of two records, built by hand: header, then the records.
  kafka::writer records;
  for (int i = 0; i < 2; ++i) {
    kafka::writer rec;
    rec.i8(0);
    rec.varlong(i);  // timestamp delta
    rec.varint(i);   // offset delta
    rec.varint(2);
    rec.raw("k" + std::to_string(i));
    rec.varint(5);
    rec.raw("value");
    rec.varint(0);  // no headers
    records.varint(static_cast<std::int32_t>(rec.size()));
    records.raw(rec.bytes());
  }
  auto batch = [&](std::int16_t codec, const std::string& body) {
    kafka::writer w;
    w.i64(0);
    w.i32(0);  // length, below
    w.i32(-1);
    w.i8(2);
    w.i32(0);  // crc, below
    w.i16(codec);
    w.i32(1);  // lastOffsetDelta
    w.i64(1000);
    w.i64(1001);
    w.i64(-1);
    w.i16(-1);
    w.i32(-1);
    w.i32(2);
    w.raw(body);
    std::string b = w.take();
    put_be32(b, 8, static_cast<std::uint32_t>(b.size() - 12));
    put_be32(b, 17, crc32c(b.data() + 21, b.size() - 21));
    return b;
  };
  const std::string plain = records.bytes();
  for (const auto& [codec, body] : std::vector<std::pair<std::int16_t, std::string>>{
           {0, plain}, {1, gzip(plain)}, {2, snappy(plain)}, {3, lz4(plain)}, {4, zstd(plain)}}) {
    INFO("codec " << codec);
    CHECK(kafka::names_compression(batch(codec, body)) == (codec != 0));  // read before anything is checked
    auto decoded = kafka::decode_produced_batch(batch(codec, body));
    REQUIRE(std::holds_alternative<kafka::produced_batch>(decoded));
    const auto& b = std::get<kafka::produced_batch>(decoded);
    REQUIRE(b.records.size() == 2);
    const auto v = storage::decode_frames(b.records.bytes, 0);
    CHECK(v[1].key == std::optional<std::string_view>("k1"));
    CHECK(v[1].value == "value");
    CHECK(v[1].timestamp_ms == 1001);
    // Past the limit once decompressed: refused as too large, for this partition alone.
    if (codec != 0) {
      auto big = kafka::decode_produced_batch(batch(codec, body), plain.size() - 1);
      REQUIRE(std::holds_alternative<kafka::batch_refusal>(big));
      CHECK(std::get<kafka::batch_refusal>(big).fault == kafka::batch_fault::too_large);
    }
  }
  CHECK_FALSE(kafka::names_compression(batch(1, plain).substr(0, 22)));  // too short to hold the attributes
  // Codec 5 is not Kafka's; damaged compressed bytes are corrupt.
  auto unknown = kafka::decode_produced_batch(batch(5, plain));
  REQUIRE(std::holds_alternative<kafka::batch_refusal>(unknown));
  CHECK(std::get<kafka::batch_refusal>(unknown).fault == kafka::batch_fault::unsupported_compression);
  auto damaged = kafka::decode_produced_batch(batch(4, "garbage that is not zstd"));
  REQUIRE(std::holds_alternative<kafka::batch_refusal>(damaged));
  CHECK(std::get<kafka::batch_refusal>(damaged).fault == kafka::batch_fault::corrupt);
}
