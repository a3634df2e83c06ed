// The data-plane messages: Produce, Fetch, ListOffsets, OffsetForLeaderEpoch (none of them flexible in the advertised
// ranges).
#include "moonmq/kafka/messages.hpp"

namespace moonmq::kafka {

// Produce request (v3-7): transactional_id, acks, timeout, topics [name partitions [index records]].
bool decode(reader& r, std::int16_t, produce_request& p) {
  p.transactional_id = r.string(false, true);
  p.acks = r.i16();
  p.timeout_ms = r.i32();
  const std::int32_t topics = r.array_count(false, 6);
  for (std::int32_t i = 0; i < topics && r.ok(); ++i) {
    produce_request::topic t;
    t.name = r.string_or_empty(false);
    const std::int32_t parts = r.array_count(false, 8);
    for (std::int32_t k = 0; k < parts && r.ok(); ++k) {
      produce_request::partition part;
      part.index = r.i32();
      part.records = r.bytes(false, true);
      t.partitions.push_back(part);
    }
    p.topics.push_back(std::move(t));
  }
  return r.ok();
}

// Produce response: topics [name partitions [index error base_offset log_append_time log_start_offset(v5+)]],
// throttle.
void encode(writer& w, std::int16_t version, const produce_response& p) {
  w.array_count(p.topics.size(), false);
  for (const auto& t : p.topics) {
    w.string(t.name, false);
    w.array_count(t.partitions.size(), false);
    for (const auto& part : t.partitions) {
      w.i32(part.index);
      w.i16(part.error);
      w.i64(part.base_offset);
      w.i64(-1);  // log_append_time: records keep their CreateTime
      if (version >= 5) w.i64(part.log_start_offset);
    }
  }
  w.i32(0);
}

// Fetch request (v4-11): replica, max_wait, min_bytes, max_bytes, isolation, session id and epoch (v7+),
// topics [name partitions [index leader_epoch(v9+) offset log_start(v5+) max_bytes]], forgotten (v7+), rack (v11+).
bool decode(reader& r, std::int16_t version, fetch_request& f) {
  r.i32();  // replica id: -1 for a consumer
  f.max_wait_ms = r.i32();
  f.min_bytes = r.i32();
  f.max_bytes = r.i32();
  f.read_committed = r.i8() == 1;
  if (version >= 7) {
    f.session_id = r.i32();
    f.session_epoch = r.i32();
  }
  const std::int32_t topics = r.array_count(false, 6);
  for (std::int32_t i = 0; i < topics && r.ok(); ++i) {
    fetch_request::topic t;
    t.name = r.string_or_empty(false);
    const std::int32_t parts = r.array_count(false, 16);
    for (std::int32_t k = 0; k < parts && r.ok(); ++k) {
      fetch_request::partition part;
      part.index = r.i32();
      if (version >= 9) r.i32();
      part.offset = r.i64();
      if (version >= 5) r.i64();
      part.max_bytes = r.i32();
      t.partitions.push_back(part);
    }
    f.topics.push_back(std::move(t));
  }
  if (version >= 7) {
    const std::int32_t forgotten = r.array_count(false, 6);
    for (std::int32_t i = 0; i < forgotten && r.ok(); ++i) {
      r.string(false);
      const std::int32_t n = r.array_count(false, 4);
      r.raw(static_cast<std::size_t>(n) * 4);
    }
  }
  if (version >= 11) r.string(false);
  return r.ok();
}

// Fetch response: throttle, error and session id (v7+), topics [name partitions [index error high_watermark
// last_stable_offset log_start(v5+) aborted[] preferred_read_replica(v11+) records]].
void encode_fetch_head(writer& w, std::int16_t version, std::int16_t error, std::size_t topics) {
  w.i32(0);
  if (version >= 7) {
    w.i16(error);
    w.i32(0);  // no fetch sessions: every fetch names its partitions
  }
  w.array_count(topics, false);
}

void encode_fetch_topic(writer& w, const std::string& name, std::size_t partitions) {
  w.string(name, false);
  w.array_count(partitions, false);
}

std::size_t encode_fetch_partition(writer& w, std::int16_t version, const fetch_response::partition& p) {
  w.i32(p.index);
  w.i16(p.error);
  w.i64(p.high_watermark);
  w.i64(p.last_stable_offset);
  if (version >= 5) w.i64(p.log_start_offset);
  w.array_count(0, false);  // aborted transactions: their records are never sent (docs/kafka.md)
  if (version >= 11) w.i32(-1);
  const std::size_t at = w.size();
  w.i32(0);
  return at;
}

void end_fetch_partition(writer& w, std::size_t records_at) {
  w.patch_i32(records_at, static_cast<std::int32_t>(w.size() - records_at - 4));
}

void encode(writer& w, std::int16_t version, const fetch_response& f) {
  encode_fetch_head(w, version, f.error, f.topics.size());
  for (const auto& t : f.topics) {
    encode_fetch_topic(w, t.name, t.partitions.size());
    for (const auto& p : t.partitions) {
      const std::size_t at = encode_fetch_partition(w, version, p);
      w.raw(p.records);
      end_fetch_partition(w, at);
    }
  }
}

// ListOffsets request: replica, isolation (v2+), topics [name partitions [index timestamp max_offsets(v0)]].
bool decode(reader& r, std::int16_t version, list_offsets_request& l) {
  r.i32();
  if (version >= 2) l.read_committed = r.i8() == 1;
  const std::int32_t topics = r.array_count(false, 6);
  for (std::int32_t i = 0; i < topics && r.ok(); ++i) {
    list_offsets_request::topic t;
    t.name = r.string_or_empty(false);
    const std::int32_t parts = r.array_count(false, 12);
    for (std::int32_t k = 0; k < parts && r.ok(); ++k) {
      list_offsets_request::partition p;
      p.index = r.i32();
      p.timestamp = r.i64();
      if (version == 0) r.i32();
      t.partitions.push_back(p);
    }
    l.topics.push_back(std::move(t));
  }
  return r.ok();
}

// ListOffsets response: throttle (v2+), topics [name partitions [index error offsets[] (v0) | timestamp offset]].
void encode(writer& w, std::int16_t version, const list_offsets_response& l) {
  if (version >= 2) w.i32(0);
  w.array_count(l.topics.size(), false);
  for (const auto& t : l.topics) {
    w.string(t.name, false);
    w.array_count(t.partitions.size(), false);
    for (const auto& p : t.partitions) {
      w.i32(p.index);
      w.i16(p.error);
      if (version == 0) {
        w.array_count(p.offset >= 0 ? 1 : 0, false);
        if (p.offset >= 0) w.i64(p.offset);
      } else {
        w.i64(p.timestamp);
        w.i64(p.offset);
      }
    }
  }
}

// OffsetForLeaderEpoch request: replica (v3+), topics [name [partition current_epoch (v2+) epoch]].
bool decode(reader& r, std::int16_t version, offset_for_leader_epoch_request& o) {
  if (version >= 3) o.replica_id = r.i32();
  const std::int32_t n = r.array_count(false, 6);
  for (std::int32_t i = 0; i < n && r.ok(); ++i) {
    offset_for_leader_epoch_request::topic t;
    t.name = r.string_or_empty(false);
    const std::int32_t k = r.array_count(false, 8);
    for (std::int32_t j = 0; j < k && r.ok(); ++j) {
      offset_for_leader_epoch_request::partition p;
      p.index = r.i32();
      if (version >= 2) p.current_leader_epoch = r.i32();
      p.leader_epoch = r.i32();
      t.partitions.push_back(p);
    }
    o.topics.push_back(std::move(t));
  }
  return r.ok();
}

// OffsetForLeaderEpoch response: throttle (v2+), topics [name [error partition epoch (v1+) end_offset]].
void encode(writer& w, std::int16_t version, const offset_for_leader_epoch_response& o) {
  if (version >= 2) w.i32(0);
  w.array_count(o.topics.size(), false);
  for (const auto& t : o.topics) {
    w.string(t.name, false);
    w.array_count(t.partitions.size(), false);
    for (const auto& p : t.partitions) {
      w.i16(p.error);
      w.i32(p.index);
      if (version >= 1) w.i32(p.leader_epoch);
      w.i64(p.end_offset);
    }
  }
}

}  // namespace moonmq::kafka
