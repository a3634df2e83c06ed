// The seam between the cluster layer and a broker's partition data.
//
// A partition is a log of framed records (record.hpp) whose offsets are byte positions. The cluster layer reads whole
// frames to migrate them, appends forwarded produces at the end, and appends migration batches with `append_at`,
// which refuses (with the store's real end offset) unless the batch lands exactly at the expected offset, so that a
// retried batch is never written twice. An embedding broker implements this over its own log; the project ships a
// file-backed one (lib/) and an in-memory twin (memory_partition_store.hpp).
// Thread safety: implementations must allow concurrent calls, including appends to the same partition from several
// threads (each append is atomic: its records are contiguous and its offsets are those returned).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "moonmq/core/byte_buffer.hpp"
#include "moonmq/core/ids.hpp"
#include "moonmq/core/result.hpp"
#include "moonmq/storage/record.hpp"

namespace moonmq::storage {

/// The most partitions one topic may have on a broker, whatever is configured.
inline constexpr std::int32_t max_partitions_per_topic_hard = 10000;

/// Whole frames read from a partition.
struct read_result {
  byte_buffer bytes;              ///< whole frames, possibly none
  std::uint64_t next_offset = 0;  ///< the offset after the last frame returned (== from when none)
  std::uint64_t end_offset = 0;   ///< the partition's end offset at the time of the read
};

class partition_store {
 public:
  virtual ~partition_store() = default;

  /// Creates `topic` with `partitions` partitions, or grows it to that count. Never shrinks: asking for fewer than it
  /// has is not an error and changes nothing. Returns the resulting partition count.
  virtual result<std::int32_t> ensure_topic(const std::string& topic, std::int32_t partitions) = 0;

  /// Whether ensure_topic(topic, partitions) would pass this store's limits: the error it would give otherwise. A
  /// topic decided for the cluster asks every broker that is to hold it first, so that no broker is handed a topic
  /// it then cannot make. No limits: ok.
  virtual status room_for(const std::string& topic, std::int32_t partitions) const {
    (void)topic;
    (void)partitions;
    return {};
  }

  /// Removes a topic and its logs, durably (a deleted topic: docs/cluster.md, "Topics"); not_found when there is no
  /// such topic. Reads and appends racing it fail with not_found or land in a log that no longer exists; a later
  /// ensure_topic of the name starts empty.
  virtual status remove_topic(const std::string& topic) = 0;

  /// The topic's partition count; not_found for an unknown topic.
  virtual result<std::int32_t> partition_count(const std::string& topic) const = 0;

  /// Every topic, sorted.
  virtual std::vector<std::string> topics() const = 0;

  /// Every partition of every topic, sorted.
  virtual std::vector<topic_partition> list_partitions() const = 0;

  /// The offset the next append will get (the log's size in bytes for the byte-offset backend).
  virtual result<std::uint64_t> end_offset(const topic_partition& tp) const = 0;

  /// Bytes of the partition's log.
  virtual result<std::uint64_t> size_bytes(const topic_partition& tp) const = 0;

  /// Whole frames from `from` (a frame boundary) up to `max_bytes`; at least one frame when one exists there, even if
  /// larger than `max_bytes`. A checksum failure is a `corrupt` error naming the partition and offset.
  virtual result<read_result> read(const topic_partition& tp, std::uint64_t from, std::size_t max_bytes) const = 0;

  /// Where the first record at or after `offset` starts: `offset` itself on a record boundary, the next record's
  /// start inside a record (as Kafka serves a fetch inside a batch), the end offset when no record starts later. An
  /// offset past the end is an `invalid_argument` error. A client's fetch reads from here; a migration never does
  /// (its offsets must be boundaries, and read() refuses any other).
  virtual result<std::uint64_t> next_record(const topic_partition& tp, std::uint64_t offset) const = 0;

  /// read() and next_record() from memory only, for a thread that must not wait (the Kafka listener's reactor): where
  /// they would wait for the disk (bytes the page cache does not hold), errc::would_block, and nothing is read. A
  /// store that cannot tell refuses every call this way (the default); the caller then asks from a thread that may
  /// wait.
  virtual result<read_result> read_cached(const topic_partition& tp, std::uint64_t from, std::size_t max_bytes) const {
    (void)from;
    (void)max_bytes;
    return error{errc::would_block, name_of(tp) + ": this store reads only from a thread that may wait"};
  }
  virtual result<std::uint64_t> next_record_cached(const topic_partition& tp, std::uint64_t offset) const {
    (void)offset;
    return error{errc::would_block, name_of(tp) + ": this store reads only from a thread that may wait"};
  }

  /// Appends records at the end; returns the offset of each.
  virtual result<std::vector<std::uint64_t>> append(const topic_partition& tp, const std::vector<record>& records) = 0;

  /// Appends records already encoded as frames (encoded_records: the caller encoded them, so they are not checked
  /// again) at the end, together; returns the offset of each. The same as append() of the records they encode, with
  /// their Kafka batch positions; a store that writes frames overrides it to write them as they are.
  virtual result<std::vector<std::uint64_t>> append_encoded(const topic_partition& tp, const encoded_records& records) {
    std::vector<record> decoded;
    decoded.reserve(records.size());
    for_each_frame(records.bytes, 0, [&](const record_view& v) {
      decoded.push_back(to_record(v));
      decoded.back().batch = v.batch;
    });
    return append(tp, decoded);
  }

  /// Appends whole frames (a migration batch) only if the partition ends exactly at `expected_offset`; otherwise a
  /// `conflict` error whose message holds the real end offset (and `actual_end`, when given, receives it). Frames are
  /// validated first: a batch that is not whole valid frames is refused and nothing is written.
  virtual status append_at(const topic_partition& tp, std::uint64_t expected_offset, std::string_view frames,
                           std::uint64_t* actual_end = nullptr) = 0;

  /// Makes everything appended to the partition so far durable.
  virtual status sync(const topic_partition& tp) = 0;

  /// Empties the partition's log, durably: its end offset becomes 0 and its bytes are given back to the disk. The
  /// partition itself stays (a topic never shrinks). The cluster layer calls it only for a copy this broker does not
  /// serve (a cancelled move's destination, a reclaimed source), never while anything may still read it.
  virtual status discard(const topic_partition& tp) = 0;
};

/// CRC-32C of a partition's bytes [0, upto), read in 1 MiB steps. `upto` must be a record boundary no further than the
/// end (otherwise invalid_argument). Used to tell whether one broker's copy is a prefix of another's.
inline result<std::uint32_t> prefix_crc32c(const partition_store& store, const topic_partition& tp,
                                           std::uint64_t upto) {
  std::uint32_t crc = 0;
  std::uint64_t at = 0;
  while (at < upto) {
    auto r = store.read(tp, at, static_cast<std::size_t>(std::min<std::uint64_t>(1u << 20, upto - at)));
    if (!r) return r.err();
    if (r->bytes.empty() || r->next_offset > upto)
      return error{errc::invalid_argument, "offset " + std::to_string(upto) + " is not a record boundary"};
    crc = crc32c_extend(crc, r->bytes.data(), r->bytes.size());
    at = r->next_offset;
  }
  return crc;
}

}  // namespace moonmq::storage
