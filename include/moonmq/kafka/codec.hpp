// The Kafka wire protocol's primitive types: a bounds-checked reader and an appending writer.
//
// Every integer is big-endian; varints are zigzag-encoded (records) or unsigned (the compact types of flexible
// versions). The reader never throws and never allocates from a length field it has not checked: a read past the end,
// a negative length where none is allowed, or an array longer than the bytes left could hold makes it fail, after
// which every read returns an empty value and ok() is false. Decoders read everything, then ask ok() once.
// Thread safety: values; one reader or writer per thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <algorithm>
#include <string_view>

namespace moonmq::kafka {

class reader {
 public:
  explicit reader(std::string_view bytes) : b_(bytes) {}
  /// A reader views its input: never one of a temporary string, which is gone before the first read.
  explicit reader(std::string&&) = delete;

  bool ok() const noexcept { return ok_; }
  std::size_t left() const noexcept { return b_.size() - at_; }
  std::size_t position() const noexcept { return at_; }
  /// Marks the input as malformed (a decoder's own check failed).
  void fail() noexcept { ok_ = false; }

  std::int8_t i8();
  std::int16_t i16();
  std::int32_t i32();
  std::int64_t i64();
  std::uint32_t u32();
  bool boolean() { return i8() != 0; }
  /// Zigzag varint (32 and 64 bits), as in records.
  std::int32_t varint();
  std::int64_t varlong();
  /// Unsigned varint, as in the compact types.
  std::uint32_t uvarint();

  /// STRING (i16 length) or COMPACT_STRING (uvarint length + 1); null only where `nullable`.
  std::optional<std::string> string(bool compact, bool nullable = false);
  std::string string_or_empty(bool compact, bool nullable = false) { return string(compact, nullable).value_or(""); }
  /// BYTES (i32 length) or COMPACT_BYTES; null (length -1) only where `nullable`.
  std::optional<std::string_view> bytes(bool compact, bool nullable = false);
  /// A view of the next `n` bytes.
  std::string_view raw(std::size_t n);

  /// An ARRAY (i32) or COMPACT_ARRAY (uvarint + 1) count; -1 for a null array (only where `nullable`). A count
  /// larger than the bytes left, at `min_element_bytes` each, fails: nothing is sized from an unchecked length.
  std::int32_t array_count(bool compact, std::size_t min_element_bytes = 1, bool nullable = false);
  /// Skips a flexible version's tagged fields (none of them is understood).
  void tagged_fields();

 private:
  const char* take(std::size_t n);
  std::string_view b_;
  std::size_t at_ = 0;
  bool ok_ = true;
};

class writer {
 public:
  std::string& bytes() noexcept { return out_; }
  std::string take() { return std::move(out_); }

  void i8(std::int8_t v) { out_.push_back(static_cast<char>(v)); }
  void i16(std::int16_t v);
  void i32(std::int32_t v);
  void i64(std::int64_t v);
  void u32(std::uint32_t v);
  void boolean(bool v) { i8(v ? 1 : 0); }
  void varint(std::int32_t v);
  void varlong(std::int64_t v);
  void uvarint(std::uint32_t v);

  void string(std::string_view s, bool compact);
  void nullable_string(const std::optional<std::string>& s, bool compact);
  void bytes(std::string_view s, bool compact);
  void nullable_bytes(const std::optional<std::string_view>& s, bool compact);
  void array_count(std::size_t n, bool compact);
  void null_array(bool compact);
  /// An empty tagged-field section (flexible versions).
  void tagged_fields() { uvarint(0); }
  void raw(std::string_view s) { out_.append(s); }

  /// Overwrites 4 bytes at `at` with `v` (a length or checksum written after what it covers).
  void patch_i32(std::size_t at, std::int32_t v);
  std::size_t size() const noexcept { return out_.size(); }

 private:
  std::string out_;
};

/// Bytes a zigzag varint takes.
std::size_t varint_size(std::int64_t v);

/// The most bytes a zigzag varint takes.
inline constexpr std::size_t max_varint_bytes = 10;

/// Writes `v` as a zigzag varint at `at` (room for max_varint_bytes); returns the bytes written.
std::size_t put_varint(char* at, std::int64_t v);

}  // namespace moonmq::kafka
