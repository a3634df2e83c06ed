#include "moonmq/cluster/raft_ownership_table.hpp"

#include <rapidjson/document.h>

#include "json/object_reader.hpp"
#include "json/writer.hpp"

namespace moonmq::cluster {

namespace {

/// One owner entry, {"topic","partition","broker","version","handover"[,"expect"]}: a log entry's data (with the
/// version it expects) and an element of the snapshot (without).
/// `incarnation`: in a log entry of a topic the catalog lists, the incarnation (topic_record::created) the proposer
/// decided it for.
void write_owner(json::writer& w, const ownership_entry& e, std::optional<ownership_point> expect = {},
                 std::optional<std::uint64_t> incarnation = {}) {
  w.StartObject();
  json::put(w, "topic", e.partition.topic);
  json::put(w, "partition", e.partition.partition);
  json::put(w, "broker", e.owner.value());
  json::put(w, "version", e.version);
  json::put(w, "handover", e.handover);
  if (expect) {
    json::put(w, "expect", expect->version);
    json::put(w, "expect_handover", expect->handover);
  }
  if (incarnation) json::put(w, "incarnation", *incarnation);
  w.EndObject();
}

struct owner_change {
  ownership_entry entry;
  bool versioned = true;  ///< false: written before ownership versions (applied unconditionally, version kept)
  std::optional<ownership_point> expect;
  std::optional<std::uint64_t> incarnation;
};

std::optional<owner_change> read_owner(const rapidjson::Value& v) {
  json::object_reader r(v, "owner");
  std::string topic, broker;
  std::int64_t partition = -1;
  owner_change c;
  r.get("topic", topic, true);
  r.get("partition", partition, true);
  r.get("broker", broker, true);
  c.versioned = v.IsObject() && v.HasMember("version");
  r.get("version", c.entry.version, false);
  r.get("handover", c.entry.handover, false);
  if (v.IsObject() && v.HasMember("expect")) {
    ownership_point p;
    r.get("expect", p.version, true);
    r.get("expect_handover", p.handover, false);
    c.expect = p;
  }
  if (v.IsObject() && v.HasMember("incarnation")) {
    std::uint64_t i = 0;
    r.get("incarnation", i, true);
    c.incarnation = i;
  }
  if (!r.finish() || partition < 0 || partition > INT32_MAX || broker.empty()) return std::nullopt;
  c.entry.partition = topic_partition{topic, static_cast<std::int32_t>(partition)};
  c.entry.owner = broker_id(broker);
  return c;
}

}  // namespace

raft_ownership_table::raft_ownership_table(broker_id self, std::unique_ptr<ownership_table> local)
    : self_(std::move(self)), local_(std::move(local)) {}

std::optional<ownership_entry> raft_ownership_table::entry(const topic_partition& tp) const {
  auto local = local_->entry(tp);
  std::lock_guard lock(mu_);
  auto it = replicated_.find(tp);
  if (it == replicated_.end()) return local;
  // At version 0 the local layer wins a tie: such replicated entries were written before versions existed, when the
  // local layer (a reservation) always won.
  if (local && (newer_than(*local, it->second) || (local->version == 0 && it->second.version == 0))) return local;
  return it->second;
}

status raft_ownership_table::record(const ownership_entry& e, std::optional<ownership_point> expect) {
  // Local knowledge only (a reservation, a namesake created for a peer, a source's handover marker), judged against
  // everything this broker knows, replicated entries included.
  auto current = entry(e.partition);
  switch (judge_record(current, e, expect)) {
    case record_verdict::already: return {};
    case record_verdict::refuse: return ownership_refusal(e, current);
    case record_verdict::apply: break;
  }
  return local_->record(e, expect);
}

status raft_ownership_table::decide(const ownership_entry& e, ownership_point expect) {
  const std::string name = e.partition.topic + "-" + std::to_string(e.partition.partition);
  if (!propose_) return {errc::unavailable, "Raft is not running: the ownership of " + name + " cannot be decided"};
  rapidjson::StringBuffer text;
  json::writer w(text);
  std::optional<std::uint64_t> incarnation;
  if (topics_)
    if (auto t = topics_->find(e.partition.topic); t && !t->deleted) incarnation = t->created;
  write_owner(w, e, expect, incarnation);
  auto index = propose_(raft::entry_kind::owner, std::string(text.GetString(), text.GetSize()));
  if (!index) return {errc::unavailable, "the outcome of " + name + "'s ownership entry is not known: " + index.message()};
  std::optional<ownership_entry> current;
  std::optional<bool> applied;
  {
    std::lock_guard lock(mu_);
    if (auto o = outcomes_.find(*index); o != outcomes_.end()) applied = o->second;
    auto it = replicated_.find(e.partition);
    if (it != replicated_.end()) current = it->second;
  }
  if (applied.value_or(current && *current == e)) return {};
  // Applied through a snapshot (or long ago): whether the compare-and-set took is no longer known.
  if (!applied) return {errc::unavailable, "the outcome of " + name + "'s ownership entry " + std::to_string(*index) +
                                               " is not known here (it arrived in a snapshot)"};
  return ownership_refusal(e, current);
}

std::vector<ownership_entry> raft_ownership_table::entries() const {
  std::map<topic_partition, ownership_entry> merged;
  {
    std::lock_guard lock(mu_);
    merged = replicated_;
  }
  for (const auto& e : local_->entries()) {
    auto it = merged.find(e.partition);
    if (it == merged.end() || newer_than(e, it->second) || (e.version == 0 && it->second.version == 0))
      merged[e.partition] = e;
  }
  std::vector<ownership_entry> out;
  for (const auto& [tp, e] : merged) out.push_back(e);
  return out;
}

status raft_ownership_table::forget_topic(const std::string& topic) { return local_->forget_topic(topic); }

std::vector<ownership_entry> raft_ownership_table::replicated_entries() const {
  std::lock_guard lock(mu_);
  std::vector<ownership_entry> out;
  for (const auto& [tp, e] : replicated_) out.push_back(e);
  return out;
}

controller_claim raft_ownership_table::controller() const {
  std::lock_guard lock(mu_);
  return controller_;
}

void raft_ownership_table::apply(const raft::entry& e) {
  if (e.kind == raft::entry_kind::topic) {
    // A topic's delete drops its replicated ownership entries here, at the delete's place in the log (on every
    // broker alike); the topic directory removes the logs and this broker's own entries afterwards.
    auto applied = topics_ ? topics_->apply_entry(e) : std::nullopt;
    if (applied && applied->deleted) {
      std::lock_guard lock(mu_);
      std::erase_if(replicated_, [&](const auto& kv) { return kv.first.topic == applied->name; });
    }
    return;
  }
  if (e.kind == raft::entry_kind::controller) {
    std::lock_guard lock(mu_);
    controller_ = {epoch(e.term), broker_id(e.data)};
    return;
  }
  rapidjson::Document d;
  // Written by write_owner and carried in CRC-checked logs, so always readable; one that is not changes nothing.
  auto c = json::parse_object(e.data, d) ? read_owner(d) : std::nullopt;
  // An entry of a move that was still running when its topic's delete was applied (earlier in the log), or decided
  // for an earlier incarnation of the name (an entry that committed late, after the name was made again), changes
  // nothing: it would outlive its topic and route a later incarnation's partition to where it does not live.
  if (c && topics_)
    if (auto t = topics_->find(c->entry.partition.topic))
      if (t->deleted || (c->incarnation && *c->incarnation != t->created)) c.reset();
  std::lock_guard lock(mu_);
  bool applied = false;
  if (c) {
    auto it = replicated_.find(c->entry.partition);
    std::optional<ownership_entry> current;
    if (it != replicated_.end()) current = it->second;
    if (!c->versioned) {
      c->entry.version = current ? current->version : 0;
      applied = true;
    } else {
      applied = judge_record(current, c->entry, c->expect) != record_verdict::refuse;
    }
    if (applied) replicated_[c->entry.partition] = c->entry;
  }
  outcomes_[e.index] = applied;
  while (outcomes_.size() > 4096) outcomes_.erase(outcomes_.begin());
}

void raft_ownership_table::restore(const std::string& snapshot) {
  if (topics_) topics_->restore(snapshot);
  rapidjson::Document d;
  const bool readable = json::parse_object(snapshot, d);
  std::lock_guard lock(mu_);
  replicated_.clear();
  controller_ = {};
  if (!readable) return;
  if (d.HasMember("owners") && d["owners"].IsArray())
    for (const auto& v : d["owners"].GetArray())
      if (auto c = read_owner(v)) replicated_[c->entry.partition] = c->entry;
  if (d.HasMember("controller") && d["controller"].IsObject()) {
    const auto& c = d["controller"];
    if (c.HasMember("term") && c["term"].IsUint64() && c.HasMember("id") && c["id"].IsString())
      controller_ = {epoch(c["term"].GetUint64()), broker_id(c["id"].GetString())};
  }
}

std::string raft_ownership_table::snapshot() const {
  const std::string topics = topics_ ? topics_->snapshot() : std::string();
  std::lock_guard lock(mu_);
  return json::object([&](json::writer& w) {
    rapidjson::Document t;
    if (!topics.empty() && json::parse_object(topics, t) && t.HasMember("topics")) {
      w.Key("topics");
      t["topics"].Accept(w);
    }
    w.Key("owners");
    w.StartArray();
    for (const auto& [tp, e] : replicated_) write_owner(w, e);
    w.EndArray();
    w.Key("controller");
    w.StartObject();
    json::put(w, "term", controller_.claim_epoch.value());
    json::put(w, "id", controller_.controller.value());
    w.EndObject();
  });
}

result<epoch> raft_fence::claim() {
  auto s = service_.status();
  if (s.current_role != raft::role::leader)
    return error{errc::not_owner,
                 "not the Raft leader" + (s.leader.empty() ? std::string() : " (" + s.leader + " is)")};
  return epoch(s.term);
}

status raft_fence::check(const controller_claim& c) {
  auto s = service_.status();
  if (c.claim_epoch.value() < s.term)
    return {errc::conflict, "controller " + c.controller.value() + " claims term " +
                                std::to_string(c.claim_epoch.value()) + ", this broker has heard term " +
                                std::to_string(s.term)};
  if (c.claim_epoch.value() == s.term && !s.leader.empty() && c.controller.value() != s.leader)
    return {errc::conflict,
            c.controller.value() + " is not the leader of term " + std::to_string(s.term) + " (" + s.leader + " is)"};
  return {};
}

controller_claim raft_fence::highest() const {
  auto s = service_.status();
  return {epoch(s.term), broker_id(s.leader)};
}

std::optional<controller_claim> raft_fence::own_claim() const {
  auto s = service_.status();
  if (s.current_role != raft::role::leader) return std::nullopt;
  return controller_claim{epoch(s.term), self_};
}

}  // namespace moonmq::cluster
