// Kafka's RecordBatch (magic 2), decoded from a produce request and encoded for a fetch response.
//
//   batch  = baseOffset:i64 batchLength:i32 partitionLeaderEpoch:i32 magic:i8 crc:u32 attributes:i16
//            lastOffsetDelta:i32 baseTimestamp:i64 maxTimestamp:i64 producerId:i64 producerEpoch:i16
//            baseSequence:i32 count:i32 records
//   record = length:varint attributes:i8 timestampDelta:varlong offsetDelta:varint key:varbytes value:varbytes
//            headerCount:varint (key:varstring value:varbytes)*
// The CRC-32C covers everything from the attributes to the end of the batch. A produced batch is validated as Kafka
// does (magic 2, its CRC, count = lastOffsetDelta + 1 with offset deltas 0..count-1, no control bit, producer fields
// all set or all -1, no compression this build cannot read) and its records become log frames that keep the key,
// the value (null as attr_null_value), the headers (as encoded) and the CreateTime timestamp: written once, straight
// from the request's bytes, and appended as they are (docs/kafka.md, "Records and offsets").
//
// Offsets (docs/kafka.md, "Records and offsets"): a record that arrived in a Kafka batch is numbered base + index,
// the base being its batch's first frame's byte position in the log (storage::kafka_offset); any other record is
// numbered by its frame's position. A fetch returns a stored batch as that batch; other records go one batch per
// producer run, with the byte distances as offset deltas (gaps, as in compacted Kafka batches). A batch's last offset
// delta reaches the last byte of its last frame, so that a consumer that has read it fetches next where the next
// record starts, and stands at the high watermark (no lag) once it has read the whole log; a stored batch that the
// read cut short ends at its last record returned.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "moonmq/core/result.hpp"
#include "moonmq/storage/record.hpp"

namespace moonmq::kafka {

inline constexpr std::int16_t batch_compression_mask = 0x07;
inline constexpr std::int16_t batch_log_append_time = 0x08;
inline constexpr std::int16_t batch_transactional = 0x10;
inline constexpr std::int16_t batch_control = 0x20;
/// The fixed part of a batch, from baseOffset to the record count.
inline constexpr std::size_t batch_overhead = 61;

/// A produced batch, as the log's frames: each record stamped with the producer (its sequence the first one's plus
/// its index), transactional when the batch is, and numbered as one Kafka batch (storage::batch_position).
struct produced_batch {
  storage::encoded_records records;
  std::optional<storage::producer_stamp> producer;  ///< the first record's id, epoch and sequence
  bool transactional = false;
  std::int64_t max_timestamp = 0;
};

/// Why a produced batch was refused, as Kafka names it.
enum class batch_fault {
  corrupt,             ///< CORRUPT_MESSAGE: bad CRC, length or record framing
  invalid,             ///< INVALID_RECORD: well framed, but against the rules (control bit, counts, producer fields)
  unsupported_compression,  ///< UNSUPPORTED_COMPRESSION_TYPE: a codec number Kafka does not define
  too_large,           ///< MESSAGE_TOO_LARGE: the records decompress past the limit
  unsupported_magic,   ///< UNSUPPORTED_FOR_MESSAGE_FORMAT: message format v0/v1
};

struct batch_refusal {
  batch_fault fault;
  std::string message;
};

/// Decodes the records field of one partition of a produce request: exactly one batch, uncompressed or compressed
/// (gzip, snappy, lz4, zstd; kafka/compression.hpp), whose records take at most `max_records_bytes` once
/// decompressed.
std::variant<produced_batch, batch_refusal> decode_produced_batch(std::string_view bytes,
                                                                 std::size_t max_records_bytes = 64u << 20);

/// Whether a produced batch's attributes name a compression codec, read before anything is checked (false for bytes
/// too short to hold them): decompressing costs far more than reading, so a caller may choose where to decode it.
bool names_compression(std::string_view bytes);

/// Appends `records` (in log order) to `out` as record batches: the records of one stored Kafka batch as that batch
/// (base + index, storage::kafka_offset), and other records one batch per run with the same producer stamp,
/// transactional flag and control flag, numbered by their frames.
void encode_batches(std::span<const storage::record_view> records, std::string& out);

}  // namespace moonmq::kafka
