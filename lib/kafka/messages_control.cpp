// The control-plane messages: framing, ApiVersions, Metadata, InitProducerId, the SASL pair.
#include "moonmq/kafka/messages.hpp"

namespace moonmq::kafka {

namespace {
/// The first flexible version of each API this broker answers (none in the advertised range: a large number).
std::int16_t first_flexible(api key) {
  switch (key) {
    case api::produce:
      return 9;
    case api::fetch:
      return 12;
    case api::list_offsets:
      return 6;
    case api::metadata:
      return 9;
    case api::offset_commit:
      return 8;
    case api::offset_fetch:
      return 6;
    case api::find_coordinator:
      return 3;
    case api::join_group:
      return 6;
    case api::heartbeat:
    case api::leave_group:
    case api::sync_group:
      return 4;
    case api::sasl_handshake:
      return 100;
    case api::api_versions:
      return 3;
    case api::create_topics:
      return 5;
    case api::init_producer_id:
      return 2;
    case api::sasl_authenticate:
      return 2;
    case api::delete_topics:
      return 4;
    case api::offset_for_leader_epoch:
      return 4;
    case api::describe_configs:
      return 4;
    case api::create_partitions:
      return 2;
    case api::add_partitions_to_txn:
    case api::add_offsets_to_txn:
    case api::end_txn:
    case api::txn_offset_commit:
      return 3;
  }
  return 100;
}
}  // namespace

const std::vector<version_range>& supported_versions() {
  static const std::vector<version_range> all{
      {api::produce, 3, 7},         {api::fetch, 4, 11},         {api::list_offsets, 0, 3},
      {api::metadata, 0, 8},        {api::sasl_handshake, 0, 1}, {api::api_versions, 0, 3},
      {api::create_topics, 0, 4},   {api::init_producer_id, 0, 4}, {api::sasl_authenticate, 0, 2},
      {api::delete_topics, 0, 4},   {api::describe_configs, 0, 2}, {api::create_partitions, 0, 1},
      {api::offset_for_leader_epoch, 0, 3},
      {api::offset_commit, 0, 7},   {api::offset_fetch, 0, 5},    {api::find_coordinator, 0, 2},
      {api::join_group, 0, 4},      {api::heartbeat, 0, 3},       {api::leave_group, 0, 3},
      {api::sync_group, 0, 3},
      {api::add_partitions_to_txn, 0, 1}, {api::add_offsets_to_txn, 0, 1}, {api::end_txn, 0, 1},
      {api::txn_offset_commit, 0, 3},
  };
  return all;
}

std::optional<version_range> supported(std::int16_t key) {
  for (const auto& v : supported_versions())
    if (static_cast<std::int16_t>(v.key) == key) return v;
  return std::nullopt;
}

bool flexible(api key, std::int16_t version) { return version >= first_flexible(key); }

bool decode_header(reader& r, request_header& h) {
  h.api_key = r.i16();
  h.api_version = r.i16();
  h.correlation_id = r.i32();
  if (!r.ok()) return false;
  auto range = supported(h.api_key);
  if (!range || h.api_version < range->min || h.api_version > range->max) return true;
  h.client_id = r.string(false, true);  // never compact, even in header v2
  if (flexible(range->key, h.api_version)) r.tagged_fields();
  return r.ok();
}

void start_response(writer& w, const request_header& h) {
  w.i32(0);  // size, patched by finish_response
  w.i32(h.correlation_id);
  // Response header v1 (tagged fields) for flexible versions, except ApiVersions, whose header is always v0 so that
  // a client can read it before it knows which versions the broker speaks.
  if (h.api_key != static_cast<std::int16_t>(api::api_versions) && supported(h.api_key) &&
      flexible(static_cast<api>(h.api_key), h.api_version))
    w.tagged_fields();
}

void finish_response(writer& w) { w.patch_i32(0, static_cast<std::int32_t>(w.size() - 4)); }

// ApiVersions: error, [key min max], throttle (v1+); compact with tagged fields in v3.
void encode(writer& w, std::int16_t version, const api_versions_response& r) {
  const bool c = version >= 3;
  w.i16(r.error);
  w.array_count(supported_versions().size(), c);
  for (const auto& v : supported_versions()) {
    w.i16(static_cast<std::int16_t>(v.key));
    w.i16(v.min);
    w.i16(v.max);
    if (c) w.tagged_fields();
  }
  if (version >= 1) w.i32(0);
  if (c) w.tagged_fields();
}

// Metadata request: topics [name] (v0: empty = all; v1+: null = all), allow_auto_topic_creation (v4+), the two
// include_*_authorized_operations flags (v8+).
bool decode(reader& r, std::int16_t version, metadata_request& m) {
  const std::int32_t n = r.array_count(false, 2, version >= 1);
  if (n >= 0 && !(version == 0 && n == 0)) {
    m.topics.emplace();
    for (std::int32_t i = 0; i < n && r.ok(); ++i) m.topics->push_back(r.string_or_empty(false));
  }
  if (version >= 4) m.allow_auto_topic_creation = r.boolean();
  if (version >= 8) {
    r.boolean();
    r.boolean();
  }
  return r.ok();
}

// Metadata response: throttle (v3+), brokers [id host port rack(v1+)], cluster_id (v2+), controller (v1+),
// topics [error name internal(v1+) partitions [error index leader epoch(v7+) replicas isr offline(v5+)]
// topic_ops(v8+)], cluster_ops (v8+).
void encode(writer& w, std::int16_t version, const metadata_response& m) {
  if (version >= 3) w.i32(0);
  w.array_count(m.brokers.size(), false);
  for (const auto& b : m.brokers) {
    w.i32(b.node_id);
    w.string(b.host, false);
    w.i32(b.port);
    if (version >= 1) w.nullable_string(std::nullopt, false);
  }
  if (version >= 2) w.nullable_string(m.cluster_id, false);
  if (version >= 1) w.i32(m.controller_id);
  w.array_count(m.topics.size(), false);
  for (const auto& t : m.topics) {
    w.i16(t.error);
    w.string(t.name, false);
    if (version >= 1) w.boolean(false);
    w.array_count(t.partitions.size(), false);
    for (const auto& p : t.partitions) {
      w.i16(p.error);
      w.i32(p.index);
      w.i32(p.leader);
      if (version >= 7) w.i32(p.leader_epoch);
      for (int list = 0; list < 2; ++list) {
        w.array_count(p.replicas.size(), false);
        for (auto id : p.replicas) w.i32(id);
      }
      if (version >= 5) w.array_count(0, false);
    }
    if (version >= 8) w.i32(INT32_MIN);
  }
  if (version >= 8) w.i32(INT32_MIN);
}

// InitProducerId request: transactional_id (nullable), timeout, producer id and epoch (v3+); flexible from v2.
bool decode(reader& r, std::int16_t version, init_producer_id_request& i) {
  const bool c = version >= 2;
  i.transactional_id = r.string(c, true);
  i.transaction_timeout_ms = r.i32();
  if (version >= 3) {
    i.producer_id = r.i64();
    i.producer_epoch = r.i16();
  }
  if (c) r.tagged_fields();
  return r.ok();
}

void encode(writer& w, std::int16_t version, const init_producer_id_response& i) {
  w.i32(0);
  w.i16(i.error);
  w.i64(i.producer_id);
  w.i16(i.producer_epoch);
  if (version >= 2) w.tagged_fields();
}

bool decode(reader& r, std::int16_t, sasl_handshake_request& s) {
  s.mechanism = r.string_or_empty(false);
  return r.ok();
}

void encode(writer& w, std::int16_t, const sasl_handshake_response& s) {
  w.i16(s.error);
  w.array_count(s.mechanisms.size(), false);
  for (const auto& m : s.mechanisms) w.string(m, false);
}

bool decode(reader& r, std::int16_t version, sasl_authenticate_request& s) {
  const bool c = version >= 2;
  s.auth_bytes = std::string(r.bytes(c).value_or(std::string_view()));
  if (c) r.tagged_fields();
  return r.ok();
}

// SaslAuthenticate response: error, message, auth_bytes, session_lifetime_ms (v1+); flexible from v2.
void encode(writer& w, std::int16_t version, const sasl_authenticate_response& s) {
  const bool c = version >= 2;
  w.i16(s.error);
  w.nullable_string(s.message, c);
  w.bytes(s.auth_bytes, c);
  if (version >= 1) w.i64(0);
  if (c) w.tagged_fields();
}

}  // namespace moonmq::kafka
