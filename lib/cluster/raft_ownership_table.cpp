#include "moonmq/cluster/raft_ownership_table.hpp"

#include <rapidjson/document.h>

#include "json/object_reader.hpp"
#include "json/writer.hpp"

namespace moonmq::cluster {

namespace {

/// One owner entry, {"topic","partition","broker"}: a committed log entry's data and an element of the snapshot.
void write_owner(json::writer& w, const topic_partition& tp, const broker_id& b) {
  w.StartObject();
  json::put(w, "topic", tp.topic);
  json::put(w, "partition", tp.partition);
  json::put(w, "broker", b.value());
  w.EndObject();
}

std::optional<std::pair<topic_partition, broker_id>> read_owner(const rapidjson::Value& v) {
  json::object_reader r(v, "owner");
  std::string topic, broker;
  std::int64_t partition = -1;
  r.get("topic", topic, true);
  r.get("partition", partition, true);
  r.get("broker", broker, true);
  if (!r.finish() || partition < 0 || partition > INT32_MAX) return std::nullopt;
  return std::pair{topic_partition{topic, static_cast<std::int32_t>(partition)}, broker_id(broker)};
}

}  // namespace

raft_ownership_table::raft_ownership_table(broker_id self, std::unique_ptr<ownership_table> local)
    : self_(std::move(self)), local_(std::move(local)) {}

std::optional<broker_id> raft_ownership_table::owner(const topic_partition& tp) const {
  if (auto o = local_->owner(tp)) return o;
  std::lock_guard lock(mu_);
  auto it = replicated_.find(tp);
  if (it == replicated_.end()) return std::nullopt;
  return it->second;
}

status raft_ownership_table::set_owner(const topic_partition& tp, const broker_id& owner) {
  // Local knowledge: a reservation, a namesake created for a peer, or (owner == self) the end of a reservation.
  return local_->set_owner(tp, owner);
}

status raft_ownership_table::transfer(const topic_partition& tp, const broker_id& to) {
  if (!service_) return {errc::unavailable, "Raft is not running"};
  {
    std::lock_guard lock(mu_);
    auto it = replicated_.find(tp);
    if (it != replicated_.end() && it->second == to && !local_->owner(tp)) return {};
  }
  rapidjson::StringBuffer entry;
  json::writer w(entry);
  write_owner(w, tp, to);
  auto r = service_->propose_blocking(raft::entry_kind::owner, std::string(entry.GetString(), entry.GetSize()));
  if (!r) return r.err();
  if (to == self_) return local_->set_owner(tp, self_);  // a rollback also ends any local entry
  return {};
}

std::vector<ownership_entry> raft_ownership_table::entries() const {
  std::map<topic_partition, broker_id> merged;
  {
    std::lock_guard lock(mu_);
    merged = replicated_;
  }
  for (const auto& e : local_->entries()) merged[e.partition] = e.owner;
  std::vector<ownership_entry> out;
  for (const auto& [tp, b] : merged) out.push_back({tp, b});
  return out;
}

std::vector<ownership_entry> raft_ownership_table::replicated_entries() const {
  std::lock_guard lock(mu_);
  std::vector<ownership_entry> out;
  for (const auto& [tp, b] : replicated_) out.push_back({tp, b});
  return out;
}

controller_claim raft_ownership_table::controller() const {
  std::lock_guard lock(mu_);
  return controller_;
}

void raft_ownership_table::apply(const raft::entry& e) {
  std::lock_guard lock(mu_);
  if (e.kind == raft::entry_kind::controller) {
    controller_ = {epoch(e.term), broker_id(e.data)};
    return;
  }
  rapidjson::Document d;
  d.Parse(e.data.c_str(), e.data.size());
  // Written by write_owner and carried in CRC-checked logs, so always readable; one that is not changes nothing.
  if (auto o = d.HasParseError() ? std::nullopt : read_owner(d)) replicated_[o->first] = o->second;
}

void raft_ownership_table::restore(const std::string& snapshot) {
  rapidjson::Document d;
  d.Parse(snapshot.c_str(), snapshot.size());
  std::lock_guard lock(mu_);
  replicated_.clear();
  controller_ = {};
  if (d.HasParseError() || !d.IsObject()) return;
  if (d.HasMember("owners") && d["owners"].IsArray())
    for (const auto& v : d["owners"].GetArray())
      if (auto o = read_owner(v)) replicated_[o->first] = o->second;
  if (d.HasMember("controller") && d["controller"].IsObject()) {
    const auto& c = d["controller"];
    if (c.HasMember("term") && c["term"].IsUint64() && c.HasMember("id") && c["id"].IsString())
      controller_ = {epoch(c["term"].GetUint64()), broker_id(c["id"].GetString())};
  }
}

std::string raft_ownership_table::snapshot() const {
  std::lock_guard lock(mu_);
  return json::object([&](json::writer& w) {
    w.Key("owners");
    w.StartArray();
    for (const auto& [tp, b] : replicated_) write_owner(w, tp, b);
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
