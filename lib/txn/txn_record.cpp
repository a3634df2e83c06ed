#include "txn/txn_record.hpp"

#include "json/object_reader.hpp"
#include "json/parse.hpp"

namespace moonmq::txn {

/// A transaction's partitions (with their owners and whether the marker is pending) and offsets (with their
/// owners): the same in a describe answer and in the coordinator's log record.
void write_holdings(json::writer& w, const transaction& t) {
  w.Key("partitions");
  w.StartArray();
  for (const auto& [tp, owner] : t.partitions) {
    w.StartObject();
    json::put(w, "topic", tp.topic);
    json::put(w, "partition", tp.partition);
    json::put(w, "owner", owner.value());
    json::put(w, "marker_pending", t.markers_pending.count(tp) > 0);
    w.EndObject();
  }
  w.EndArray();
  w.Key("offsets");
  w.StartArray();
  for (const auto& o : t.offsets) {
    w.StartObject();
    json::put(w, "group", o.group);
    json::put(w, "topic", o.partition.topic);
    json::put(w, "partition", o.partition.partition);
    json::put(w, "offset", o.offset);
    auto owner = t.offset_owners.find(o.partition);
    json::put(w, "owner", owner == t.offset_owners.end() ? std::string() : owner->second.value());
    w.EndObject();
  }
  w.EndArray();
}

void write_txn(json::writer& w, const transaction& t, std::int64_t now) {
  json::put(w, "transactional_id", t.id);
  json::put(w, "producer_id", t.producer_id);
  json::put(w, "producer_epoch", t.epoch);
  json::put(w, "state", to_string(t.phase));
  json::put(w, "age_ms", t.phase == txn_phase::ongoing ? now - t.started_ms : 0);
  if (t.keeps_epoch) json::put(w, "transactions_ended", t.ends);
  if (t.timeout_ms > 0) json::put(w, "timeout_ms", t.timeout_ms);
  write_holdings(w, t);
  if (!t.reason.empty()) json::put(w, "reason", t.reason);
}

/// One transaction as its log record: the id's producer, epoch, phase and what it holds.
std::string render_transaction(const transaction& t) {
  return json::object([&](json::writer& w) {
    json::put(w, "version", 1);
    json::put(w, "id", t.id);
    json::put(w, "producer_id", t.producer_id);
    json::put(w, "epoch", t.epoch);
    json::put(w, "phase", to_string(t.phase));
    json::put(w, "started_ms", t.started_ms);
    json::put(w, "reason", t.reason);
    json::put(w, "offsets_pending", t.offsets_pending);
    // Written only when set, so that a log of sessions that bump their epochs reads as it did; `ends` whenever a
    // session kept its epoch once, even if the id's session now bumps it: a later one that keeps it again must
    // never number a transaction as one the partitions have seen.
    if (t.keeps_epoch) json::put(w, "keeps_epoch", true);
    if (t.ends != 0) json::put(w, "ends", t.ends);
    if (t.marker_number != 0) json::put(w, "marker_number", t.marker_number);
    if (t.timeout_ms > 0) json::put(w, "timeout_ms", t.timeout_ms);
    write_holdings(w, t);
  });
}

result<transaction> parse_transaction(const std::string& text, const std::string& where) {
  rapidjson::Document d;
  if (auto s = json::parse_document(text, d, where); !s) return error{errc::corrupt, s.message()};
  json::object_reader t(d, where);
  std::uint64_t version = 0;
  t.get("version", version, true);
  if (t.ok() && version != 1) t.fail("version", "expected 1");
  transaction x;
  std::string phase;
  std::uint64_t epoch = 0;
  t.get("id", x.id, true);
  t.get("producer_id", x.producer_id, true);
  t.get("epoch", epoch, true);
  t.get("phase", phase, true);
  t.get("started_ms", x.started_ms, true);
  t.get("reason", x.reason);
  t.get("offsets_pending", x.offsets_pending);
  std::uint64_t ends = 0, marker_number = 0;
  std::int64_t timeout_ms = 0;
  t.get("keeps_epoch", x.keeps_epoch);
  t.get("ends", ends);
  t.get("marker_number", marker_number);
  t.get("timeout_ms", timeout_ms);
  if (t.ok() && (ends > UINT32_MAX || marker_number > ends)) t.fail("ends", "out of range");
  if (t.ok() && timeout_ms < 0) t.fail("timeout_ms", "must not be negative");
  x.ends = static_cast<std::uint32_t>(ends);
  x.marker_number = static_cast<std::uint32_t>(marker_number);
  x.timeout_ms = timeout_ms;
  auto p = phase_from_string(phase);
  if (t.ok() && !p) t.fail("phase", "unknown phase '" + phase + "'");
  if (t.ok() && epoch > UINT32_MAX) t.fail("epoch", "out of range");
  const auto* parts = t.member("partitions");
  const auto* offs = t.member("offsets");
  if (t.ok() && (!parts || !parts->IsArray() || !offs || !offs->IsArray()))
    t.fail_here("partitions and offsets must be arrays");
  if (auto s = t.finish(); !s) return error{errc::corrupt, s.message()};
  for (const auto& e : parts->GetArray()) {
    json::object_reader pr(e, where + ": partition");
    std::string topic, owner;
    std::int64_t partition = -1;
    bool pending = false;
    pr.get("topic", topic, true);
    pr.get("partition", partition, true);
    pr.get("owner", owner, true);
    pr.get("marker_pending", pending);
    if (pr.ok() && (partition < 0 || partition > INT32_MAX)) pr.fail("partition", "out of range");
    if (auto s = pr.finish(); !s) return error{errc::corrupt, s.message()};
    topic_partition tp{topic, static_cast<std::int32_t>(partition)};
    x.partitions[tp] = broker_id(owner);
    if (pending) x.markers_pending.insert(tp);
  }
  for (const auto& e : offs->GetArray()) {
    json::object_reader orr(e, where + ": offset");
    txn_offset o;
    std::string owner;
    std::int64_t partition = -1;
    orr.get("group", o.group, true);
    orr.get("topic", o.partition.topic, true);
    orr.get("partition", partition, true);
    orr.get("offset", o.offset, true);
    orr.get("owner", owner);
    if (orr.ok() && (partition < 0 || partition > INT32_MAX)) orr.fail("partition", "out of range");
    if (auto s = orr.finish(); !s) return error{errc::corrupt, s.message()};
    o.partition.partition = static_cast<std::int32_t>(partition);
    if (!owner.empty()) x.offset_owners[o.partition] = broker_id(owner);
    x.offsets.push_back(std::move(o));
  }
  x.epoch = static_cast<std::uint32_t>(epoch);
  x.phase = *p;
  return x;
}

}  // namespace moonmq::txn
