#include "moonmq/kafka/record_batch.hpp"

#include "moonmq/core/crc32c.hpp"
#include "moonmq/kafka/codec.hpp"
#include "moonmq/kafka/compression.hpp"
#include "moonmq/txn/partition_txns.hpp"

namespace moonmq::kafka {

namespace {

batch_refusal corrupt(std::string what) { return {batch_fault::corrupt, std::move(what)}; }
batch_refusal invalid(std::string what) { return {batch_fault::invalid, std::move(what)}; }

/// A record's varint-length bytes (key, value, header value): -1 is null.
std::optional<std::string_view> var_bytes(reader& r) {
  const std::int32_t n = r.varint();
  if (n < 0) {
    if (n != -1) r.fail();
    return std::nullopt;
  }
  return r.raw(static_cast<std::size_t>(n));
}

}  // namespace

bool names_compression(std::string_view bytes) {
  reader r(bytes);
  r.raw(8 + 4 + 4 + 1 + 4);  // baseOffset, batchLength, partitionLeaderEpoch, magic, crc
  const std::int16_t attributes = r.i16();
  return r.ok() && (attributes & batch_compression_mask) != 0;
}

std::variant<produced_batch, batch_refusal> decode_produced_batch(std::string_view bytes, std::size_t max_records_bytes) {
  reader r(bytes);
  r.i64();  // baseOffset: the broker assigns offsets
  const std::int32_t length = r.i32();
  if (!r.ok() || length < static_cast<std::int32_t>(batch_overhead - 12))
    return corrupt("a record batch shorter than its header");
  if (static_cast<std::size_t>(length) != r.left())
    return corrupt("one record batch per partition, whose length covers exactly the bytes sent (batch length " +
                   std::to_string(length) + ", " + std::to_string(r.left()) + " bytes follow)");
  r.i32();  // partitionLeaderEpoch
  const std::int8_t magic = r.i8();
  if (magic != 2)
    return batch_refusal{batch_fault::unsupported_magic,
                         "message format v" + std::to_string(magic) + " is not supported; send record batches (magic 2)"};
  const std::uint32_t crc = r.u32();
  const std::string_view covered = bytes.substr(r.position());
  if (crc32c(covered) != crc) return corrupt("record batch CRC-32C mismatch");
  const std::int16_t attributes = r.i16();
  const std::int32_t last_offset_delta = r.i32();
  const std::int64_t base_timestamp = r.i64();
  const std::int64_t max_timestamp = r.i64();
  const std::int64_t producer_id = r.i64();
  const std::int16_t producer_epoch = r.i16();
  const std::int32_t base_sequence = r.i32();
  const std::int32_t count = r.i32();
  if (!r.ok()) return corrupt("a record batch shorter than its header");
  const auto codec = static_cast<compression>(attributes & batch_compression_mask);
  if (codec > compression::zstd)
    return batch_refusal{batch_fault::unsupported_compression,
                         "compression codec " + std::to_string(static_cast<int>(codec)) + " is unknown"};
  if (attributes & batch_control) return invalid("clients may not write control batches");
  if (count <= 0 || count != last_offset_delta + 1)
    return invalid("record count " + std::to_string(count) + " does not match lastOffsetDelta " +
                   std::to_string(last_offset_delta));
  const bool stamped = producer_id >= 0;
  if (stamped != (producer_epoch >= 0) || stamped != (base_sequence >= 0))
    return invalid("producer id, epoch and base sequence are all set or all -1");
  if (!stamped && (attributes & batch_transactional)) return invalid("a transactional batch names its producer");
  // The records: as sent, or decompressed (bounded: a small batch never becomes a large buffer).
  std::string inflated;
  std::string_view records_bytes = bytes.substr(r.position());
  if (codec != compression::none) {
    auto d = decompress(codec, records_bytes, max_records_bytes);
    if (!d)
      return d.code() == errc::resource_exhausted ? batch_refusal{batch_fault::too_large, d.message()}
                                                  : corrupt(d.message());
    inflated = std::move(*d);
    records_bytes = inflated;
  }
  reader rr(records_bytes);
  if (static_cast<std::size_t>(count) > rr.left() / 7)  // the smallest record is 7 bytes
    return corrupt("record count " + std::to_string(count) + " exceeds what the batch holds");

  produced_batch out;
  out.transactional = attributes & batch_transactional;
  out.max_timestamp = max_timestamp;
  if (stamped)
    out.producer = storage::producer_stamp{static_cast<std::uint64_t>(producer_id),
                                           static_cast<std::uint32_t>(producer_epoch),
                                           static_cast<std::uint32_t>(base_sequence)};
  // The frames take the records' bytes and, per record, at most the frame's fixed fields and lengths. Frame
  // positions within a batch are 32-bit (storage::batch_position, encoded_records::starts).
  constexpr std::size_t per_record = storage::frame_header_size + storage::payload_fixed_size +
                                     storage::producer_fields_size + storage::batch_fields_size + 4;
  const std::size_t most = records_bytes.size() + static_cast<std::size_t>(count) * per_record;
  if (most > UINT32_MAX)
    return batch_refusal{batch_fault::too_large, "the batch's records would take more than 4 GiB as log records"};
  out.records.bytes.reserve(most);
  out.records.starts.reserve(static_cast<std::size_t>(count));
  std::uint32_t distance = 0;
  for (std::int32_t i = 0; i < count; ++i) {
    const std::int32_t record_length = rr.varint();
    if (!rr.ok() || record_length < 0 || static_cast<std::size_t>(record_length) > rr.left())
      return corrupt("record " + std::to_string(i) + " is cut short");
    const std::string_view record_bytes = rr.raw(static_cast<std::size_t>(record_length));
    reader rec(record_bytes);
    rec.i8();  // attributes: unused
    const std::int64_t timestamp_delta = rec.varlong();
    const std::int32_t offset_delta = rec.varint();
    auto key = var_bytes(rec);
    auto value = var_bytes(rec);
    const std::size_t headers_at = rec.position();
    const std::int32_t header_count = rec.varint();
    if (header_count < 0 || static_cast<std::size_t>(header_count) > rec.left() / 2) rec.fail();
    for (std::int32_t h = 0; rec.ok() && h < header_count; ++h) {
      const std::int32_t key_length = rec.varint();
      if (key_length < 0) rec.fail();
      rec.raw(static_cast<std::size_t>(std::max(key_length, 0)));
      var_bytes(rec);
    }
    if (!rec.ok() || rec.left() != 0) return corrupt("record " + std::to_string(i) + " is malformed");
    if (offset_delta != i)
      return invalid("record " + std::to_string(i) + " has offset delta " + std::to_string(offset_delta));
    // The log's frame, written straight from the request's bytes.
    storage::record_view rec_out;
    rec_out.key = key;
    if (value)
      rec_out.value = *value;
    else
      rec_out.attributes |= storage::attr_null_value;
    if (out.transactional) rec_out.attributes |= storage::attr_transactional;
    rec_out.timestamp_ms = base_timestamp + timestamp_delta;
    // The headers as the client encoded them, from their count to the record's end (none: nothing kept).
    if (header_count > 0) rec_out.headers = record_bytes.substr(headers_at);
    if (out.producer) {
      rec_out.producer = out.producer;
      rec_out.producer->sequence += static_cast<std::uint32_t>(i);
    }
    rec_out.batch = storage::batch_position{static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(count), distance};
    const std::size_t frame = storage::frame_size(rec_out);
    if (frame - storage::frame_header_size > storage::max_payload_size)
      return batch_refusal{batch_fault::too_large,
                           "record " + std::to_string(i) + " is larger than a log record may be"};
    distance += static_cast<std::uint32_t>(frame);
    out.records.add(rec_out);
  }
  if (rr.left() != 0) return corrupt("bytes after the last record of the batch");
  return out;
}

}  // namespace moonmq::kafka

namespace moonmq::kafka {

namespace {

/// Whether `next` may share a batch with `first`: one producer's (or none's) records, alike in transaction and
/// control, close enough for an offset delta.
bool same_run(const storage::record_view& first, const storage::record_view& next) {
  // The records of one stored Kafka batch go together, and only with each other.
  if (first.batch || next.batch)
    return first.batch && next.batch && storage::kafka_offset(first) - first.batch->index ==
                                            storage::kafka_offset(next) - next.batch->index;
  constexpr std::uint8_t kind = storage::attr_transactional | storage::attr_control;
  if ((first.attributes & kind) != (next.attributes & kind)) return false;
  if (first.producer.has_value() != next.producer.has_value()) return false;
  if (first.producer && (first.producer->id != next.producer->id || first.producer->epoch != next.producer->epoch))
    return false;
  return next.offset - first.offset < (1u << 30) && next.timestamp_ms >= first.timestamp_ms - (1ll << 40);
}

void encode_record(const storage::record_view& v, std::int64_t offset_delta, std::int64_t timestamp_delta,
                   std::string& scratch, writer& out) {
  if (v.attributes & storage::attr_control) {
    writer body;
    body.i8(0);
    body.varlong(timestamp_delta);
    body.varlong(offset_delta);
    // A transaction marker as Kafka writes one: key (version 0, type 0 abort or 1 commit), value (version 0, the
    // coordinator's epoch, which the marker's sequence carries). A transaction's begin record has no Kafka
    // counterpart; it goes as a commit marker, which every client takes as nothing to do, so that a consumer's
    // position moves past it.
    writer key, value;
    key.i16(0);
    key.i16(v.value == txn::marker_abort ? 0 : 1);
    value.i16(0);
    value.i32(v.value == txn::marker_begin || !v.producer ? 0 : static_cast<std::int32_t>(v.producer->sequence));
    body.varint(static_cast<std::int32_t>(key.size()));
    body.raw(key.bytes());
    body.varint(static_cast<std::int32_t>(value.size()));
    body.raw(value.bytes());
    body.varint(0);
    scratch = body.take();
    out.varint(static_cast<std::int32_t>(scratch.size()));
    out.raw(scratch);
    return;
  }
  // A data record is written straight into the batch: its length is summed from its fields first (no copy of its
  // key and value into a record of its own). The small fields between the key and value go in runs, each appended
  // once.
  const bool null_value = (v.attributes & storage::attr_null_value) != 0;
  const auto key_length = v.key ? static_cast<std::int64_t>(v.key->size()) : -1;
  const auto value_length = null_value ? -1 : static_cast<std::int64_t>(v.value.size());
  const std::size_t length = 1 + varint_size(timestamp_delta) + varint_size(offset_delta) + varint_size(key_length) +
                             (v.key ? v.key->size() : 0) + varint_size(value_length) + (null_value ? 0 : v.value.size()) +
                             (v.headers.empty() ? varint_size(0) : v.headers.size());
  char run[6 * max_varint_bytes];
  std::size_t n = put_varint(run, static_cast<std::int64_t>(length));
  run[n++] = 0;  // record attributes
  n += put_varint(run + n, timestamp_delta);
  n += put_varint(run + n, offset_delta);
  n += put_varint(run + n, key_length);
  std::string& b = out.bytes();
  if (v.key) {
    b.append(run, n);
    b.append(*v.key);
    n = 0;
  }
  n += put_varint(run + n, value_length);
  b.append(run, n);
  if (!null_value) b.append(v.value);
  if (v.headers.empty())
    b.push_back(0);  // no headers: a varint 0
  else
    b.append(v.headers);
}

}  // namespace

void encode_batches(std::span<const storage::record_view> records, std::string& out) {
  std::string scratch;
  // Written in place at the end of `out`, which is sized once: a batch's records take about what their frames took.
  writer w;
  w.bytes() = std::move(out);
  std::size_t estimate = 0;
  for (const auto& r : records) estimate += r.frame_size + 32;
  w.bytes().reserve(w.size() + estimate);
  std::size_t i = 0;
  while (i < records.size()) {
    std::size_t end = i + 1;
    while (end < records.size() && same_run(records[i], records[end])) ++end;
    const auto& first = records[i];
    std::int64_t max_timestamp = first.timestamp_ms;
    for (std::size_t k = i; k < end; ++k) max_timestamp = std::max(max_timestamp, records[k].timestamp_ms);
    const auto& last = records[end - 1];
    // A stored Kafka batch keeps its numbering (base + index); other records are numbered by their frames.
    const std::uint64_t base = first.batch ? storage::kafka_offset(first) - first.batch->index : first.offset;
    w.i64(static_cast<std::int64_t>(base));
    const std::size_t length_at = w.size();
    w.i32(0);   // batchLength, below
    w.i32(-1);  // partitionLeaderEpoch
    w.i8(2);
    const std::size_t crc_at = w.size();
    w.i32(0);  // crc, below
    std::int16_t attributes = 0;
    if (first.attributes & storage::attr_transactional) attributes |= batch_transactional;
    if (first.attributes & storage::attr_control) attributes |= batch_control | batch_transactional;
    w.i16(attributes);
    // The last offset delta reaches the last byte of the last record's frame, so that a client's next fetch offset
    // (base + lastOffsetDelta + 1) is where the next record starts, and the log's end once it has read everything.
    // A stored batch cut short by the read ends at its last record here: the next fetch asks for the one after it.
    const bool cut = last.batch && last.batch->index + 1 < last.batch->count;
    w.i32(static_cast<std::int32_t>(cut ? last.batch->index : last.offset + last.frame_size - 1 - base));
    w.i64(first.timestamp_ms);
    w.i64(max_timestamp);
    w.i64(first.producer ? static_cast<std::int64_t>(first.producer->id) : -1);
    w.i16(first.producer ? static_cast<std::int16_t>(first.producer->epoch) : -1);
    // A control batch has no base sequence (its marker's sequence field is the coordinator's epoch).
    w.i32(first.producer && !(first.attributes & storage::attr_control)
              ? static_cast<std::int32_t>(first.producer->sequence - (first.batch ? first.batch->index : 0))
              : -1);
    w.i32(static_cast<std::int32_t>(end - i));
    for (std::size_t k = i; k < end; ++k)
      encode_record(records[k], static_cast<std::int64_t>(storage::kafka_offset(records[k]) - base),
                    records[k].timestamp_ms - first.timestamp_ms, scratch, w);
    w.patch_i32(length_at, static_cast<std::int32_t>(w.size() - length_at - 4));
    const std::string& b = w.bytes();
    w.patch_i32(crc_at, static_cast<std::int32_t>(crc32c(b.data() + crc_at + 4, b.size() - crc_at - 4)));
    i = end;
  }
  out = w.take();
}

}  // namespace moonmq::kafka
