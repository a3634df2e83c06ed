// The record frame: how one record is laid out in a partition log and on the wire between brokers.
//
//   frame   = length:u32le  crc:u32le  payload          (length = payload bytes, crc = CRC-32C of payload)
//   payload = attributes:u8  timestamp_ms:i64le  key_length:i32le (-1 = no key)  [producer] [batch] [headers] key value
//   producer = producer_id:u64le  producer_epoch:u32le  sequence:u32le      (present when attributes has 0x02)
//   batch    = index:u32le  count:u32le  distance:u32le                     (present when attributes has 0x20)
//   headers  = length:u32le  bytes                                           (present when attributes has 0x08)
//
// A record's offset is the byte position of its frame in the log, so a partition copied byte for byte from zero keeps
// every offset. The attribute bit `attr_control` marks control records (transaction markers), `attr_producer` a
// record stamped by an idempotent producer (the 16 producer bytes follow the fixed fields, inside the checksum), and
// `attr_transactional` a record written inside a transaction. Frames without the producer bit are laid out exactly
// as before it existed, so every older log reads unchanged. `attr_headers` marks a record that carries headers (kept
// as the Kafka client encoded them: a varint count, then each key and value; the log does not look inside), and
// `attr_null_value` a record whose value is null (a Kafka tombstone) rather than empty; both are written only by the
// Kafka listener, so logs without them read unchanged. `attr_batch` marks a record that arrived in a Kafka batch of
// `count` records as number `index`, its frame `distance` bytes after the batch's first frame: a Kafka client numbers
// the records of a batch base, base+1, … (docs/kafka.md, "Records and offsets"), and kafka_offset() gives that number
// back from the frame alone.
// `scan_frames()` is the one validator: log recovery, reads and migration batches all use it.
// Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "moonmq/core/crc32c.hpp"

namespace moonmq::storage {

inline constexpr std::uint8_t attr_control = 0x01;
inline constexpr std::uint8_t attr_producer = 0x02;
inline constexpr std::uint8_t attr_transactional = 0x04;
inline constexpr std::uint8_t attr_headers = 0x08;
inline constexpr std::uint8_t attr_null_value = 0x10;
inline constexpr std::uint8_t attr_batch = 0x20;
inline constexpr std::size_t producer_fields_size = 8 + 4 + 4;
inline constexpr std::size_t batch_fields_size = 4 + 4 + 4;
inline constexpr std::size_t frame_header_size = 8;
inline constexpr std::size_t payload_fixed_size = 1 + 8 + 4;
/// The largest payload a frame may carry; a length beyond it is corruption, not a record.
inline constexpr std::size_t max_payload_size = 64u << 20;

/// Who wrote a record, for deduplication and fencing: the producer, its epoch, and the record's number in this
/// partition for that producer (from 0, one per record).
struct producer_stamp {
  std::uint64_t id = 0;
  std::uint32_t epoch = 0;
  std::uint32_t sequence = 0;
  bool operator==(const producer_stamp&) const = default;
};

/// Where a record sits in the Kafka batch it arrived in.
struct batch_position {
  std::uint32_t index = 0;     ///< from 0
  std::uint32_t count = 1;     ///< records in the batch
  std::uint32_t distance = 0;  ///< bytes from the batch's first frame to this record's
  bool operator==(const batch_position&) const = default;
};

struct record {
  std::optional<std::string> key;
  std::string value;
  std::int64_t timestamp_ms = 0;
  std::uint8_t attributes = 0;  ///< attr_producer, attr_batch and attr_headers are set by encode_frame from the fields
  std::optional<producer_stamp> producer{};
  std::string headers{};  ///< encoded headers (see above); empty: none
  std::optional<batch_position> batch{};
};

/// A decoded record that points into the bytes it was decoded from.
struct record_view {
  std::uint64_t offset = 0;
  std::optional<std::string_view> key;
  std::string_view value;
  std::int64_t timestamp_ms = 0;
  std::uint8_t attributes = 0;
  std::optional<producer_stamp> producer;
  std::string_view headers;  ///< encoded headers; empty: none
  std::optional<batch_position> batch;
  std::size_t frame_size = 0;
};

/// The offset a Kafka client knows the record by: its frame's offset, or for a record of a Kafka batch, the batch's
/// first offset plus its index (within the batch's bytes, since every frame is larger than one byte).
inline std::uint64_t kafka_offset(const record_view& v) {
  return v.batch ? v.offset - v.batch->distance + v.batch->index : v.offset;
}

namespace detail {
inline void put_u32(std::string& out, std::uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out.append(b, 4);
}
inline void put_u64(std::string& out, std::uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out.append(b, 8);
}
inline std::uint32_t get_u32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
inline std::uint64_t get_u64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
}  // namespace detail

/// An owning copy of a decoded record, to be appended on its own: without its Kafka batch position, which holds only
/// where its batch's frames lie together (a copy appended elsewhere is numbered by its own frame).
inline record to_record(const record_view& v) {
  return record{v.key ? std::optional<std::string>(std::string(*v.key)) : std::nullopt,
                std::string(v.value),
                v.timestamp_ms,
                v.attributes,
                v.producer,
                std::string(v.headers),
                std::nullopt};
}

/// The frame size of a record, without encoding it.
template <typename Record>
std::size_t frame_size(const Record& r) {
  return frame_header_size + payload_fixed_size + (r.producer ? producer_fields_size : 0) +
         (r.batch ? batch_fields_size : 0) + (r.headers.empty() ? 0 : 4 + r.headers.size()) +
         (r.key ? r.key->size() : 0) + r.value.size();
}

/// Appends the frame of `r` (a record, or a record_view: its offset and frame_size are not read) to `out`.
template <typename Record>
void encode_frame(const Record& r, std::string& out) {
  std::size_t payload = frame_size(r) - frame_header_size;
  std::size_t start = out.size();
  detail::put_u32(out, static_cast<std::uint32_t>(payload));
  detail::put_u32(out, 0);  // crc, filled in below
  auto attributes = static_cast<std::uint8_t>(r.producer ? r.attributes | attr_producer : r.attributes & ~attr_producer);
  attributes = static_cast<std::uint8_t>(r.headers.empty() ? attributes & ~attr_headers : attributes | attr_headers);
  attributes = static_cast<std::uint8_t>(r.batch ? attributes | attr_batch : attributes & ~attr_batch);
  out.push_back(static_cast<char>(attributes));
  detail::put_u64(out, static_cast<std::uint64_t>(r.timestamp_ms));
  detail::put_u32(out, r.key ? static_cast<std::uint32_t>(r.key->size()) : 0xffffffffu);
  if (r.producer) {
    detail::put_u64(out, r.producer->id);
    detail::put_u32(out, r.producer->epoch);
    detail::put_u32(out, r.producer->sequence);
  }
  if (r.batch) {
    detail::put_u32(out, r.batch->index);
    detail::put_u32(out, r.batch->count);
    detail::put_u32(out, r.batch->distance);
  }
  if (!r.headers.empty()) {
    detail::put_u32(out, static_cast<std::uint32_t>(r.headers.size()));
    out.append(r.headers);
  }
  if (r.key) out.append(*r.key);
  out.append(r.value);
  std::uint32_t crc = crc32c(out.data() + start + frame_header_size, payload);
  for (int i = 0; i < 4; ++i) out[start + 4 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
}

inline std::string encode_frame(const record& r) {
  std::string out;
  out.reserve(frame_size(r));
  encode_frame(r, out);
  return out;
}

/// What scanning a run of bytes found.
struct frame_scan {
  enum class ending {
    clean,    ///< the bytes are whole, valid frames
    partial,  ///< the last frame is incomplete (a torn write, or a read cut short), or the tail is all zeros
    corrupt,  ///< a frame fails its checksum or has an impossible length
  };
  std::size_t whole = 0;    ///< bytes of whole valid frames from the start
  std::size_t records = 0;  ///< how many
  ending end = ending::clean;
  std::string what;  ///< for corrupt: what is wrong with the frame that starts at `whole`
};

/// Log recovery's rule for a frame that fails its check (frame_scan::ending::corrupt): it is the last write, torn by
/// a crash, and is truncated, when nothing but zero bytes follows where it claims to end (after its payload, or after
/// its header when the length itself is impossible): a length that reaches exactly the end of the file, or a torn
/// write followed by zero fill (a file system that extended the file but lost the data, a common shape after power
/// loss). Anything else, a bad frame with data after it, is damage in the middle of the log, and recovery refuses it.
/// `frame` holds the file's bytes from the frame's start (at least its header when the file has one), which is at
/// `frame_at` in a file of `file_size` bytes; `zeros_from(offset)` says whether the file holds only zero bytes from
/// `offset` to its end. Partition logs and the Raft log both recover by it.
template <typename ZerosFrom>
bool is_torn_last_write(std::string_view frame, std::uint64_t frame_at, std::uint64_t file_size, ZerosFrom&& zeros_from) {
  const std::uint32_t len = frame.size() >= 4 ? detail::get_u32(frame.data()) : 0;
  const bool possible = len >= payload_fixed_size && len <= max_payload_size;
  const std::uint64_t end = frame_at + frame_header_size + (possible ? len : 0);
  return end >= file_size || zeros_from(end);
}

/// Whether `bytes` from `from` on are all zero (true when `from` is past its end).
inline bool all_zero_from(std::string_view bytes, std::uint64_t from) {
  if (from >= bytes.size()) return true;
  return std::all_of(bytes.begin() + static_cast<std::ptrdiff_t>(from), bytes.end(), [](char c) { return c == 0; });
}

/// Walks frames from the start of `bytes`, calling `on_frame(start)` for each whole valid frame. A checksum failure
/// of a frame that ends exactly at the end of `bytes` is reported as corrupt too; log recovery decides with
/// is_torn_last_write() whether a bad *last* frame is a torn write.
template <typename OnFrame>
frame_scan scan_frames(std::string_view bytes, OnFrame&& on_frame) {
  frame_scan s;
  const char* p = bytes.data();
  const std::size_t n = bytes.size();
  // Frames are checked four at a time: their checksums are independent, so they are computed interleaved.
  constexpr std::size_t batch = 4;
  const void* payload[batch];
  std::size_t length[batch];
  std::uint32_t got[batch];
  while (s.whole < n) {
    std::size_t count = 0, at = s.whole;
    frame_scan::ending stop = frame_scan::ending::clean;
    while (count < batch && at < n) {
      if (n - at < frame_header_size) {
        stop = frame_scan::ending::partial;
        break;
      }
      std::uint32_t len = detail::get_u32(p + at);
      if (len == 0 && std::all_of(p + at, p + n, [](char c) { return c == 0; })) {
        stop = frame_scan::ending::partial;  // zero-filled tail: space allocated, data never written
        break;
      }
      if (len < payload_fixed_size || len > max_payload_size) {
        stop = frame_scan::ending::corrupt;
        s.what = "impossible frame length " + std::to_string(len);
        break;
      }
      if (n - at - frame_header_size < len) {
        stop = frame_scan::ending::partial;
        break;
      }
      payload[count] = p + at + frame_header_size;
      length[count] = len;
      ++count;
      at += frame_header_size + len;
    }
    crc32c_many(payload, length, got, count);
    for (std::size_t i = 0; i < count; ++i) {
      const char* frame = static_cast<const char*>(payload[i]) - frame_header_size;
      if (detail::get_u32(frame + 4) != got[i]) {
        s.end = frame_scan::ending::corrupt;
        s.what = "checksum mismatch";
        return s;
      }
      const auto attributes = static_cast<std::uint8_t>(frame[frame_header_size]);
      const bool stamped = attributes & attr_producer;
      std::size_t fixed = payload_fixed_size + (stamped ? producer_fields_size : 0) +
                          (attributes & attr_batch ? batch_fields_size : 0);
      if (length[i] < fixed) {
        s.end = frame_scan::ending::corrupt;
        s.what = "producer or batch fields cut short";
        return s;
      }
      if (attributes & attr_headers) {
        if (length[i] - fixed < 4 ||
            detail::get_u32(frame + frame_header_size + fixed) > length[i] - fixed - 4) {
          s.end = frame_scan::ending::corrupt;
          s.what = "headers longer than their frame";
          return s;
        }
        fixed += 4 + detail::get_u32(frame + frame_header_size + fixed);
      }
      std::uint32_t key_len = detail::get_u32(frame + frame_header_size + 9);
      if (key_len != 0xffffffffu && key_len > length[i] - fixed) {
        s.end = frame_scan::ending::corrupt;
        s.what = "key longer than its frame";
        return s;
      }
      on_frame(s.whole);
      s.whole += frame_header_size + length[i];
      ++s.records;
    }
    if (stop != frame_scan::ending::clean) {
      s.end = stop;
      return s;
    }
  }
  return s;
}

inline frame_scan scan_frames(std::string_view bytes) {
  return scan_frames(bytes, [](std::size_t) {});
}

/// How many leading bytes of `bytes` a read of at most `max_bytes` returns: whole frames only, and the first frame
/// even when it alone is larger than `max_bytes`. Frames are delimited by their length fields only (validate the
/// result with scan_frames). `first_frame` receives the first frame's full size, 0 when its header is cut off.
inline std::size_t frames_within(std::string_view bytes, std::size_t max_bytes, std::size_t* first_frame = nullptr) {
  std::size_t take = 0;
  if (first_frame) *first_frame = 0;
  while (bytes.size() - take >= frame_header_size) {
    std::size_t len = frame_header_size + detail::get_u32(bytes.data() + take);
    if (take == 0 && first_frame) *first_frame = len;
    if (len > bytes.size() - take || (take > 0 && take + len > max_bytes)) break;
    take += len;
  }
  return take;
}

/// Calls `on_record(view)` for each of the whole, already validated frames in `bytes`, in order; `base` is the log
/// offset of the first byte.
template <typename OnRecord>
void for_each_frame(std::string_view bytes, std::uint64_t base, OnRecord&& on_record) {
  std::size_t at = 0;
  while (at + frame_header_size <= bytes.size()) {
    const char* f = bytes.data() + at;
    std::uint32_t len = detail::get_u32(f);
    const char* pl = f + frame_header_size;
    record_view v;
    v.offset = base + at;
    v.attributes = static_cast<std::uint8_t>(pl[0]);
    v.timestamp_ms = static_cast<std::int64_t>(detail::get_u64(pl + 1));
    std::uint32_t key_len = detail::get_u32(pl + 9);
    const char* rest = pl + payload_fixed_size;
    std::size_t rest_len = len - payload_fixed_size;
    if (v.attributes & attr_producer) {
      v.producer = producer_stamp{detail::get_u64(rest), detail::get_u32(rest + 8), detail::get_u32(rest + 12)};
      rest += producer_fields_size;
      rest_len -= producer_fields_size;
    }
    if (v.attributes & attr_batch) {
      v.batch = batch_position{detail::get_u32(rest), detail::get_u32(rest + 4), detail::get_u32(rest + 8)};
      rest += batch_fields_size;
      rest_len -= batch_fields_size;
    }
    if (v.attributes & attr_headers) {
      const std::uint32_t n = detail::get_u32(rest);
      v.headers = std::string_view(rest + 4, n);
      rest += 4 + n;
      rest_len -= 4 + n;
    }
    if (key_len != 0xffffffffu) {
      v.key = std::string_view(rest, key_len);
      rest += key_len;
      rest_len -= key_len;
    }
    v.value = std::string_view(rest, rest_len);
    v.frame_size = frame_header_size + len;
    at += v.frame_size;
    on_record(v);
  }
}

/// Decodes whole, already validated frames; `base` is the log offset of the first byte.
inline std::vector<record_view> decode_frames(std::string_view bytes, std::uint64_t base) {
  std::vector<record_view> out;
  for_each_frame(bytes, base, [&](const record_view& v) { out.push_back(v); });
  return out;
}

/// Records already encoded as frames, to be appended together and as they are: the frames, and where each starts.
/// The Kafka listener decodes a produced batch straight into this (no record is copied twice), and an append of
/// `record`s encodes them into it once.
struct encoded_records {
  std::string bytes;
  std::vector<std::uint32_t> starts;

  std::size_t size() const { return starts.size(); }
  bool empty() const { return starts.empty(); }
  /// Appends the frame of `r`.
  template <typename Record>
  void add(const Record& r) {
    starts.push_back(static_cast<std::uint32_t>(bytes.size()));
    encode_frame(r, bytes);
  }
};

/// `records` encoded, in order.
inline encoded_records encode_records(const std::vector<record>& records) {
  encoded_records out;
  std::size_t total = 0;
  for (const auto& r : records) total += frame_size(r);
  out.bytes.reserve(total);
  out.starts.reserve(records.size());
  for (const auto& r : records) out.add(r);
  return out;
}

}  // namespace moonmq::storage
