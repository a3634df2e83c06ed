// The consumer group messages and the consumer protocol (group_messages.hpp).
#include <algorithm>

#include "moonmq/kafka/group_messages.hpp"

namespace moonmq::kafka {

// FindCoordinator request: key, key_type (v1+). Response: throttle (v1+), error, message (v1+), node, host, port.
bool decode(reader& r, std::int16_t version, find_coordinator_request& f) {
  f.key = r.string_or_empty(false);
  if (version >= 1) f.key_type = r.i8();
  return r.ok();
}

void encode(writer& w, std::int16_t version, const find_coordinator_response& f) {
  if (version >= 1) w.i32(0);
  w.i16(f.error);
  if (version >= 1) w.nullable_string(f.message, false);
  w.i32(f.node_id);
  w.string(f.host, false);
  w.i32(f.port);
}

// JoinGroup request: group, session timeout, rebalance timeout (v1+), member id, protocol type,
// protocols [name metadata].
bool decode(reader& r, std::int16_t version, join_group_request& j) {
  j.group_id = r.string_or_empty(false);
  j.session_timeout_ms = r.i32();
  if (version >= 1) j.rebalance_timeout_ms = r.i32();
  j.member_id = r.string_or_empty(false);
  j.protocol_type = r.string_or_empty(false);
  const std::int32_t n = r.array_count(false, 6);
  for (std::int32_t i = 0; i < n && r.ok(); ++i) {
    join_group_request::protocol p;
    p.name = r.string_or_empty(false);
    p.metadata = r.bytes(false).value_or(std::string_view{});
    j.protocols.push_back(std::move(p));
  }
  return r.ok();
}

// JoinGroup response: throttle (v2+), error, generation, protocol name, leader, member id, members [id metadata].
void encode(writer& w, std::int16_t version, const join_group_response& j) {
  if (version >= 2) w.i32(0);
  w.i16(j.error);
  w.i32(j.generation_id);
  w.string(j.protocol_name, false);
  w.string(j.leader, false);
  w.string(j.member_id, false);
  w.array_count(0, false);
}

// SyncGroup request: group, generation, member id, instance id (v3+), assignments [member assignment].
bool decode(reader& r, std::int16_t version, sync_group_request& s) {
  s.group_id = r.string_or_empty(false);
  s.generation_id = r.i32();
  s.member_id = r.string_or_empty(false);
  if (version >= 3) s.group_instance_id = r.string(false, true);
  const std::int32_t n = r.array_count(false, 6);
  for (std::int32_t i = 0; i < n && r.ok(); ++i) {
    r.string(false);
    r.bytes(false);
  }
  return r.ok();
}

// SyncGroup response: throttle (v1+), error, assignment.
void encode(writer& w, std::int16_t version, const sync_group_response& s) {
  if (version >= 1) w.i32(0);
  w.i16(s.error);
  w.bytes(s.assignment, false);
}

// Heartbeat request: group, generation, member id, instance id (v3+). Response: throttle (v1+), error.
bool decode(reader& r, std::int16_t version, heartbeat_request& h) {
  h.group_id = r.string_or_empty(false);
  h.generation_id = r.i32();
  h.member_id = r.string_or_empty(false);
  if (version >= 3) h.group_instance_id = r.string(false, true);
  return r.ok();
}

void encode(writer& w, std::int16_t version, const heartbeat_response& h) {
  if (version >= 1) w.i32(0);
  w.i16(h.error);
}

// LeaveGroup request: group, then member id (v0-2) or members [member id, instance id] (v3+).
bool decode(reader& r, std::int16_t version, leave_group_request& l) {
  l.group_id = r.string_or_empty(false);
  if (version < 3) {
    l.member_ids.push_back(r.string_or_empty(false));
    return r.ok();
  }
  const std::int32_t n = r.array_count(false, 4);
  if (static_cast<std::size_t>(std::max(n, 0)) > max_group_request_entries) return false;
  for (std::int32_t i = 0; i < n && r.ok(); ++i) {
    l.member_ids.push_back(r.string_or_empty(false));
    r.string(false, true);
  }
  return r.ok();
}

// LeaveGroup response: throttle (v1+), error, members [member id, instance id, error] (v3+).
void encode(writer& w, std::int16_t version, const leave_group_response& l) {
  if (version >= 1) w.i32(0);
  w.i16(l.error);
  if (version >= 3) {
    w.array_count(l.members.size(), false);
    for (const auto& [id, error] : l.members) {
      w.string(id, false);
      w.nullable_string(std::nullopt, false);
      w.i16(error);
    }
  }
}

// OffsetCommit request: group, generation (v1+), member id (v1+), instance id (v7+), retention (v2-4),
// topics [name partitions [index offset leader_epoch(v6+) timestamp(v1) metadata]].
bool decode(reader& r, std::int16_t version, offset_commit_request& o) {
  o.group_id = r.string_or_empty(false);
  if (version >= 1) {
    o.generation_id = r.i32();
    o.member_id = r.string_or_empty(false);
  }
  if (version >= 7) r.string(false, true);
  if (version >= 2 && version <= 4) r.i64();
  const std::int32_t n = r.array_count(false, 6);
  std::size_t entries = 0;
  for (std::int32_t i = 0; i < n && r.ok(); ++i) {
    offset_commit_request::topic t;
    t.name = r.string_or_empty(false);
    const std::int32_t k = r.array_count(false, 14);
    if ((entries += static_cast<std::size_t>(std::max(k, 0))) > max_group_request_entries) return false;
    for (std::int32_t j = 0; j < k && r.ok(); ++j) {
      offset_commit_request::partition p;
      p.index = r.i32();
      p.offset = r.i64();
      if (version >= 6) r.i32();
      if (version == 1) r.i64();
      p.metadata = r.string(false, true);
      t.partitions.push_back(std::move(p));
    }
    o.topics.push_back(std::move(t));
  }
  return r.ok();
}

// OffsetCommit response: throttle (v3+), topics [name partitions [index error]].
void encode(writer& w, std::int16_t version, const offset_commit_response& o) {
  if (version >= 3) w.i32(0);
  w.array_count(o.topics.size(), false);
  for (const auto& t : o.topics) {
    w.string(t.name, false);
    w.array_count(t.partitions.size(), false);
    for (const auto& [index, error] : t.partitions) {
      w.i32(index);
      w.i16(error);
    }
  }
}

// OffsetFetch request: group, topics [name [partition]] (null from v2: every partition).
bool decode(reader& r, std::int16_t version, offset_fetch_request& o) {
  o.group_id = r.string_or_empty(false);
  const std::int32_t n = r.array_count(false, 6, version >= 2);
  if (n < 0) return r.ok();
  o.topics.emplace();
  std::size_t entries = 0;
  for (std::int32_t i = 0; i < n && r.ok(); ++i) {
    offset_fetch_request::topic t;
    t.name = r.string_or_empty(false);
    const std::int32_t k = r.array_count(false, 4);
    if ((entries += static_cast<std::size_t>(std::max(k, 0))) > max_group_request_entries) return false;
    for (std::int32_t j = 0; j < k && r.ok(); ++j) t.partitions.push_back(r.i32());
    o.topics->push_back(std::move(t));
  }
  return r.ok();
}

// OffsetFetch response: throttle (v3+), topics [name partitions [index offset leader_epoch(v5+) metadata error]],
// error (v2+).
void encode(writer& w, std::int16_t version, const offset_fetch_response& o) {
  if (version >= 3) w.i32(0);
  w.array_count(o.topics.size(), false);
  for (const auto& t : o.topics) {
    w.string(t.name, false);
    w.array_count(t.partitions.size(), false);
    for (const auto& p : t.partitions) {
      w.i32(p.index);
      w.i64(p.offset);
      if (version >= 5) w.i32(-1);
      w.nullable_string(p.metadata, false);
      w.i16(p.error);
    }
  }
  if (version >= 2) w.i16(o.error);
}

// Subscription: version, topics [name], user data (nullable bytes), owned partitions [topic [partition]] (v1+),
// generation (v2+), rack (v3+). Later versions append fields this reader does not need.
std::optional<subscription> decode_subscription(std::string_view bytes) {
  reader r(bytes);
  subscription s;
  const std::int16_t version = r.i16();
  if (!r.ok() || version < 0) return std::nullopt;
  const std::int32_t n = r.array_count(false, 2);
  for (std::int32_t i = 0; i < n && r.ok(); ++i) s.topics.push_back(r.string_or_empty(false));
  if (r.left() == 0) return r.ok() ? std::optional(s) : std::nullopt;  // a subscription may end after its topics
  r.bytes(false, true);
  if (version >= 1 && r.left() > 0) {
    const std::int32_t k = r.array_count(false, 6);
    for (std::int32_t i = 0; i < k && r.ok(); ++i) {
      std::string topic = r.string_or_empty(false);
      const std::int32_t m = r.array_count(false, 4);
      for (std::int32_t j = 0; j < m && r.ok(); ++j) s.owned.emplace_back(topic, r.i32());
    }
  }
  if (!r.ok()) return std::nullopt;
  return s;
}

std::string encode_assignment(const std::vector<std::pair<std::string, std::int32_t>>& partitions) {
  auto sorted = partitions;
  std::sort(sorted.begin(), sorted.end());
  writer w;
  w.i16(0);
  std::size_t topics = 0;
  for (std::size_t i = 0; i < sorted.size(); ++i)
    if (i == 0 || sorted[i].first != sorted[i - 1].first) ++topics;
  w.array_count(topics, false);
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t end = i;
    while (end < sorted.size() && sorted[end].first == sorted[i].first) ++end;
    w.string(sorted[i].first, false);
    w.array_count(end - i, false);
    for (std::size_t k = i; k < end; ++k) w.i32(sorted[k].second);
    i = end;
  }
  w.bytes("", false);  // user data: present and empty
  return w.take();
}

}  // namespace moonmq::kafka
