// Kafka's transaction messages (include/moonmq/kafka/txn_messages.hpp). AddPartitionsToTxn, AddOffsetsToTxn and
// EndTxn are answered in versions 0-1, whose fields are the same; TxnOffsetCommit in 0-3, flexible in 3.
#include "moonmq/kafka/txn_messages.hpp"

#include <algorithm>

namespace moonmq::kafka {

namespace {
bool read_producer(reader& r, bool compact, txn_producer& p) {
  p.transactional_id = r.string_or_empty(compact);
  p.producer_id = r.i64();
  p.producer_epoch = r.i16();
  return r.ok();
}
/// Throttle time, then an error code per partition by topic; COMPACT with tagged fields when `c`.
void encode_errors(writer& w, const partition_errors& e, bool c) {
  w.i32(0);
  w.array_count(e.topics.size(), c);
  for (const auto& t : e.topics) {
    w.string(t.name, c);
    w.array_count(t.partitions.size(), c);
    for (const auto& p : t.partitions) {
      w.i32(p.index);
      w.i16(p.error);
      if (c) w.tagged_fields();
    }
    if (c) w.tagged_fields();
  }
  if (c) w.tagged_fields();
}

}  // namespace

// AddPartitionsToTxn request: transactional_id, producer_id, producer_epoch, topics [name partitions [i32]].
bool decode(reader& r, std::int16_t, add_partitions_to_txn_request& a) {
  if (!read_producer(r, false, a.producer)) return false;
  const std::int32_t n = r.array_count(false, 6);
  std::size_t entries = 0;
  for (std::int32_t i = 0; i < n && r.ok(); ++i) {
    add_partitions_to_txn_request::topic t;
    t.name = r.string_or_empty(false);
    const std::int32_t k = r.array_count(false, 4);
    if ((entries += static_cast<std::size_t>(std::max(k, 0))) > max_txn_request_entries) return false;
    for (std::int32_t j = 0; j < k && r.ok(); ++j) t.partitions.push_back(r.i32());
    a.topics.push_back(std::move(t));
  }
  return r.ok();
}

// AddPartitionsToTxn response: throttle, results [name results [index error]].
void encode(writer& w, std::int16_t, const add_partitions_to_txn_response& a) { encode_errors(w, a, false); }

// AddOffsetsToTxn request: transactional_id, producer_id, producer_epoch, group_id.
bool decode(reader& r, std::int16_t, add_offsets_to_txn_request& a) {
  if (!read_producer(r, false, a.producer)) return false;
  a.group_id = r.string_or_empty(false);
  return r.ok();
}

// EndTxn request: transactional_id, producer_id, producer_epoch, committed.
bool decode(reader& r, std::int16_t, end_txn_request& e) {
  if (!read_producer(r, false, e.producer)) return false;
  e.committed = r.boolean();
  return r.ok();
}

// AddOffsetsToTxn and EndTxn response: throttle, error.
void encode(writer& w, std::int16_t, const txn_error_response& e) {
  w.i32(0);
  w.i16(e.error);
}

// TxnOffsetCommit request: transactional_id, group_id, producer_id, producer_epoch, generation_id (v3+),
// member_id (v3+), group_instance_id (v3+, nullable), topics [name partitions [index offset leader_epoch (v2+)
// metadata (nullable)]]; compact with tagged fields in v3.
bool decode(reader& r, std::int16_t version, txn_offset_commit_request& t) {
  const bool c = version >= 3;
  t.producer.transactional_id = r.string_or_empty(c);
  t.group_id = r.string_or_empty(c);
  t.producer.producer_id = r.i64();
  t.producer.producer_epoch = r.i16();
  if (version >= 3) {
    t.generation_id = r.i32();
    t.member_id = r.string_or_empty(c);
    t.group_instance_id = r.string(c, true);
  }
  const std::int32_t n = r.array_count(c, c ? 3 : 6);
  std::size_t entries = 0;
  for (std::int32_t i = 0; i < n && r.ok(); ++i) {
    txn_offset_commit_request::topic tp;
    tp.name = r.string_or_empty(c);
    const std::int32_t k = r.array_count(c, 14);
    if ((entries += static_cast<std::size_t>(std::max(k, 0))) > max_txn_request_entries) return false;
    for (std::int32_t j = 0; j < k && r.ok(); ++j) {
      txn_offset_commit_request::partition p;
      p.index = r.i32();
      p.offset = r.i64();
      if (version >= 2) r.i32();
      p.metadata = r.string(c, true);
      if (c) r.tagged_fields();
      tp.partitions.push_back(std::move(p));
    }
    if (c) r.tagged_fields();
    t.topics.push_back(std::move(tp));
  }
  if (c) r.tagged_fields();
  return r.ok();
}

// TxnOffsetCommit response: throttle, topics [name partitions [index error]]; compact with tagged fields in v3.
void encode(writer& w, std::int16_t version, const txn_offset_commit_response& t) {
  encode_errors(w, t, version >= 3);
}

}  // namespace moonmq::kafka
