// Kafka's RecordBatch (magic 2), decoded from a produce request and encoded for a fetch response.
//
//   batch  = baseOffset:i64 batchLength:i32 partitionLeaderEpoch:i32 magic:i8 crc:u32 attributes:i16
//            lastOffsetDelta:i32 baseTimestamp:i64 maxTimestamp:i64 producerId:i64 producerEpoch:i16
//            baseSequence:i32 count:i32 records
//   record = length:varint attributes:i8 timestampDelta:varlong offsetDelta:varint key:varbytes value:varbytes
//            headerCount:varint (key:varstring value:varbytes)*
// The CRC-32C covers everything from the attributes to the end of the batch. A produced batch is validated as Kafka
// does (magic 2, its CRC, count = lastOffsetDelta + 1 with offset deltas 0..count-1, no control bit, producer fields
// all set or all -1, no compression this build cannot read) and its records become log records that keep the key,
// the value (null as attr_null_value), the headers (as encoded) and the CreateTime timestamp.
//
// Offsets: a record's Kafka offset is its log offset (the byte position of its frame, see storage/record.hpp). A
// fetch groups consecutive records of one producer run into a batch whose base offset is the first record's and whose
// offset deltas are the byte distances, so a batch has gaps between its offsets, as compacted Kafka batches do; its
// last offset delta reaches the last byte of its last frame, so that a consumer that has read a batch fetches next
// where the next record starts, and stands at the high watermark (no lag) once it has read the whole log.
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

/// A produced batch, as log records.
struct produced_batch {
  std::vector<storage::record> records;
  std::optional<storage::producer_stamp> producer;  ///< the first record's id, epoch and sequence
  bool transactional = false;
  std::int64_t max_timestamp = 0;
};

/// Why a produced batch was refused, as Kafka names it.
enum class batch_fault {
  corrupt,             ///< CORRUPT_MESSAGE: bad CRC, length or record framing
  invalid,             ///< INVALID_RECORD: well framed, but against the rules (control bit, counts, producer fields)
  unsupported_compression,  ///< UNSUPPORTED_COMPRESSION_TYPE
  unsupported_magic,   ///< UNSUPPORTED_FOR_MESSAGE_FORMAT: message format v0/v1
};

struct batch_refusal {
  batch_fault fault;
  std::string message;
};

/// Decodes the records field of one partition of a produce request: exactly one batch.
std::variant<produced_batch, batch_refusal> decode_produced_batch(std::string_view bytes);

/// Appends `records` (in log order) to `out` as record batches: one per run of records with the same producer stamp
/// run (consecutive sequences), transactional flag and control flag.
void encode_batches(std::span<const storage::record_view> records, std::string& out);

}  // namespace moonmq::kafka
