#include "moonmq/kafka/codec.hpp"

namespace moonmq::kafka {

const char* reader::take(std::size_t n) {
  if (!ok_ || left() < n) {
    ok_ = false;
    return nullptr;
  }
  const char* p = b_.data() + at_;
  at_ += n;
  return p;
}

namespace {
template <typename T>
T big_endian(const char* p) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return static_cast<T>(v);
}
}  // namespace

std::int8_t reader::i8() {
  const char* p = take(1);
  return p ? static_cast<std::int8_t>(*p) : 0;
}
std::int16_t reader::i16() {
  const char* p = take(2);
  return p ? big_endian<std::int16_t>(p) : 0;
}
std::int32_t reader::i32() {
  const char* p = take(4);
  return p ? big_endian<std::int32_t>(p) : 0;
}
std::int64_t reader::i64() {
  const char* p = take(8);
  return p ? big_endian<std::int64_t>(p) : 0;
}
std::uint32_t reader::u32() {
  const char* p = take(4);
  return p ? big_endian<std::uint32_t>(p) : 0;
}

std::uint32_t reader::uvarint() {
  std::uint32_t v = 0;
  for (int shift = 0; shift <= 28; shift += 7) {
    const char* p = take(1);
    if (!p) return 0;
    const auto byte = static_cast<unsigned char>(*p);
    if (shift == 28 && (byte & 0xf0)) break;  // more than 32 bits
    v |= static_cast<std::uint32_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return v;
  }
  ok_ = false;
  return 0;
}

std::int64_t reader::varlong() {
  std::uint64_t v = 0;
  for (int shift = 0; shift <= 63; shift += 7) {
    const char* p = take(1);
    if (!p) return 0;
    const auto byte = static_cast<unsigned char>(*p);
    if (shift == 63 && (byte & 0xfe)) break;
    v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1));
  }
  ok_ = false;
  return 0;
}

std::int32_t reader::varint() {
  const std::int64_t v = varlong();
  if (v < INT32_MIN || v > INT32_MAX) {
    ok_ = false;
    return 0;
  }
  return static_cast<std::int32_t>(v);
}

std::optional<std::string> reader::string(bool compact, bool nullable) {
  std::int64_t n = compact ? static_cast<std::int64_t>(uvarint()) - 1 : i16();
  if (!ok_) return std::nullopt;
  if (n < 0) {
    if (n != -1 || !nullable) ok_ = false;
    return std::nullopt;
  }
  const char* p = take(static_cast<std::size_t>(n));
  return p ? std::optional<std::string>(std::string(p, static_cast<std::size_t>(n))) : std::nullopt;
}

std::optional<std::string_view> reader::bytes(bool compact, bool nullable) {
  std::int64_t n = compact ? static_cast<std::int64_t>(uvarint()) - 1 : i32();
  if (!ok_) return std::nullopt;
  if (n < 0) {
    if (n != -1 || !nullable) ok_ = false;
    return std::nullopt;
  }
  const char* p = take(static_cast<std::size_t>(n));
  return p ? std::optional<std::string_view>(std::string_view(p, static_cast<std::size_t>(n))) : std::nullopt;
}

std::string_view reader::raw(std::size_t n) {
  const char* p = take(n);
  return p ? std::string_view(p, n) : std::string_view();
}

std::int32_t reader::array_count(bool compact, std::size_t min_element_bytes, bool nullable) {
  std::int64_t n = compact ? static_cast<std::int64_t>(uvarint()) - 1 : i32();
  if (!ok_) return 0;
  if (n < 0) {
    if (n != -1 || !nullable) ok_ = false;
    return ok_ ? -1 : 0;
  }
  if (static_cast<std::uint64_t>(n) * std::max<std::size_t>(min_element_bytes, 1) > left()) {
    ok_ = false;
    return 0;
  }
  return static_cast<std::int32_t>(n);
}

void reader::tagged_fields() {
  const std::uint32_t n = uvarint();
  for (std::uint32_t i = 0; ok_ && i < n; ++i) {
    uvarint();  // tag
    raw(uvarint());
  }
}

namespace {
template <typename T>
void put_big_endian(std::string& out, T v) {
  const auto u = static_cast<std::make_unsigned_t<T>>(v);
  for (int i = static_cast<int>(sizeof(T)) - 1; i >= 0; --i) out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}
}  // namespace

void writer::i16(std::int16_t v) { put_big_endian(out_, v); }
void writer::i32(std::int32_t v) { put_big_endian(out_, v); }
void writer::i64(std::int64_t v) { put_big_endian(out_, v); }
void writer::u32(std::uint32_t v) { put_big_endian(out_, v); }

void writer::uvarint(std::uint32_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void writer::varlong(std::int64_t v) {
  char buf[max_varint_bytes];
  out_.append(buf, put_varint(buf, v));
}

std::size_t put_varint(char* at, std::int64_t v) {
  auto u = (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
  std::size_t n = 0;
  while (u >= 0x80) {
    at[n++] = static_cast<char>((u & 0x7f) | 0x80);
    u >>= 7;
  }
  at[n++] = static_cast<char>(u);
  return n;
}

void writer::varint(std::int32_t v) { varlong(v); }

void writer::string(std::string_view s, bool compact) {
  if (compact)
    uvarint(static_cast<std::uint32_t>(s.size() + 1));
  else
    i16(static_cast<std::int16_t>(s.size()));
  out_.append(s);
}

void writer::nullable_string(const std::optional<std::string>& s, bool compact) {
  if (s) return string(*s, compact);
  if (compact)
    uvarint(0);
  else
    i16(-1);
}

void writer::bytes(std::string_view s, bool compact) {
  if (compact)
    uvarint(static_cast<std::uint32_t>(s.size() + 1));
  else
    i32(static_cast<std::int32_t>(s.size()));
  out_.append(s);
}

void writer::nullable_bytes(const std::optional<std::string_view>& s, bool compact) {
  if (s) return bytes(*s, compact);
  if (compact)
    uvarint(0);
  else
    i32(-1);
}

void writer::array_count(std::size_t n, bool compact) {
  if (compact)
    uvarint(static_cast<std::uint32_t>(n + 1));
  else
    i32(static_cast<std::int32_t>(n));
}

void writer::null_array(bool compact) {
  if (compact)
    uvarint(0);
  else
    i32(-1);
}

void writer::patch_i32(std::size_t at, std::int32_t v) {
  const auto u = static_cast<std::uint32_t>(v);
  for (int i = 0; i < 4; ++i) out_[at + static_cast<std::size_t>(i)] = static_cast<char>((u >> (8 * (3 - i))) & 0xff);
}

std::size_t varint_size(std::int64_t v) {
  auto u = (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
  std::size_t n = 1;
  while (u >= 0x80) {
    u >>= 7;
    ++n;
  }
  return n;
}

}  // namespace moonmq::kafka
