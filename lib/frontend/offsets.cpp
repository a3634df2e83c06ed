#include "moonmq/frontend/offsets.hpp"

#include <algorithm>
#include <mutex>
#include <shared_mutex>

#include "moonmq/frontend/fetch.hpp"
#include "moonmq/groups/group_metrics.hpp"
#include "moonmq/groups/group_routes.hpp"
#include "moonmq/groups/group_service.hpp"
#include "json/object_reader.hpp"
#include "json/parse.hpp"
#include "json/writer.hpp"
#include "moonmq/core/topic_name.hpp"
#include "moonmq/core/utf8.hpp"
#include "moonmq/transport/peer_client.hpp"

namespace moonmq::frontend {

namespace {

refusal no_partition(const topic_partition& tp) {
  return {{errc::not_found, "topic '" + tp.topic + "' has no partition " + std::to_string(tp.partition)}, {}, {}};
}

constexpr const char* relay_path = "/cluster/admin/offsets";

/// A refusal as the relay carries it: the code's name and status, the message, and whether the coordinator refused.
transport::response refusal_response(const refusal& r) {
  return {transport::http_status_of(r.code()), json::object([&](json::writer& w) {
            json::put(w, "error", errc_name(r.code()));
            json::put(w, "message", r.message());
            json::put(w, "by_coordinator", r.by_coordinator);
            if (r.owner) json::put(w, "owner", r.owner->value());
          }),
          "application/json"};
}

/// The owner's answer, or what its silence or refusal means to the caller.
/// The most brokers a relay follows: each one that no longer serves the partition names the one it believes does
/// (without Raft, a broker's word on a partition that moved between two others may be stale).
constexpr int max_relay_hops = 3;

result<rapidjson::Document> relayed(const std::optional<transport::response>& a, const broker_id& owner,
                                    bool& by_coordinator, std::optional<broker_id>* next = nullptr) {
  by_coordinator = false;
  if (next) next->reset();
  if (!a || a->status == 0)
    return error{errc::unavailable, owner.value() + ", which serves the partition, did not answer"};
  rapidjson::Document d;
  if (!a->ok()) {
    if (json::parse_object(a->body, d)) {
      json::object_reader r(d, "");
      r.get("by_coordinator", by_coordinator);
      std::string hint;
      if (next && r.get("owner", hint) && !hint.empty()) *next = broker_id(hint);
    }
    return transport::error_of(*a);
  }
  if (auto s = json::parse_document(a->body, d, owner.value() + "'s answer"); !s) return s.err();
  return d;
}

/// `r` relayed to `owner`, then to the owner each broker that no longer serves the partition names, up to
/// max_relay_hops brokers; `owner` ends as the last broker asked.
result<rapidjson::Document> relay_following(transport::peer_client& peers, const broker_id& self, broker_id& owner,
                                            const transport::request& r, bool& by_coordinator) {
  std::optional<broker_id> next;
  auto d = relayed(peers.call_now(owner.value(), r), owner, by_coordinator, &next);
  for (int hop = 1; !d && d.code() == errc::not_owner && next && *next != owner && *next != self &&
                    hop < max_relay_hops;
       ++hop) {
    owner = *next;
    d = relayed(peers.call_now(owner.value(), r), owner, by_coordinator, &next);
  }
  return d;
}

bool exists(storage::partition_store& store, const topic_partition& tp) {
  auto count = store.partition_count(tp.topic);
  return count && tp.partition >= 0 && tp.partition < *count;
}

/// For a topic this broker does not have: the broker the placement says serves `tp` (a refusal naming it, so that a
/// relay goes there), or why none can be named. nullopt: this broker has the topic.
std::optional<refusal> served_elsewhere(const offsets_parts& p, const topic_partition& tp) {
  if (!p.placement || p.store->partition_count(tp.topic)) return std::nullopt;
  auto owner = p.placement->owner_of(tp);
  if (owner && *owner != p.self)
    return refusal{{errc::not_owner, name_of(tp) + " is served by " + owner->value()}, owner, {}};
  if (!owner)
    if (auto silent = unplaced_while_silent(p.placement, tp.topic, tp.partition, name_of(tp))) return refusal{*silent, {}, {}};
  return std::nullopt;
}

}  // namespace

offsets_frontend::offsets_frontend(offsets_parts parts) : p_(std::move(parts)) {
  if (!p_.fence)
    p_.fence = [routes = p_.group_routes](const std::string& group, const std::string& member_id,
                                          std::uint64_t member_epoch, const topic_partition& tp,
                                          const std::function<status()>& write) {
      return routes->fenced_commit(group, member_id, member_epoch, tp, write);
    };
}

outcome<done> offsets_frontend::commit(const commit_request& req) {
  const auto& tp = req.tp;
  if (req.metadata.size() > storage::max_commit_metadata || !valid_utf8(req.metadata))
    return error{errc::invalid_argument, "metadata: at most " + std::to_string(storage::max_commit_metadata) +
                                             " bytes of UTF-8"};
  // Where the partition is not served or does not exist, say so before asking the coordinator anything.
  if (auto elsewhere = served_elsewhere(p_, tp)) return *elsewhere;
  if (!cluster::serves(*p_.ownership, tp, p_.self)) return not_served(*p_.ownership, tp, p_.self);
  if (!exists(*p_.store, tp)) return no_partition(tp);
  if (auto end = p_.store->end_offset(tp); !end)
    return end.err();
  else if (req.offset > *end)
    return refusal{{errc::offset_out_of_range, name_of(tp) + ": offset " + std::to_string(req.offset) +
                                                   " is past the end offset " + std::to_string(*end)},
                   {},
                   *end};
  bool not_now = false, missing = false;
  auto written = p_.fence(req.group, req.member_id, req.member_epoch, tp, [&]() -> status {
    std::shared_lock gate(p_.gates->gate(tp));
    if (!cluster::serves(*p_.ownership, tp, p_.self)) {
      not_now = true;
      return {};
    }
    if (!exists(*p_.store, tp)) {
      missing = true;
      return {};
    }
    return p_.offsets->commit(req.group, tp, req.offset, req.metadata);
  });
  if (!written) {
    if (written.code() == errc::conflict && p_.metrics &&
        ((p_.groups && p_.groups->has_members(req.group)) ||
         (p_.group_routes && p_.group_routes->coordinator_of(req.group) != p_.self)))
      p_.metrics->add(groups::metrics::fenced_commits, {{"group", req.group}}, 1);
    const bool fenced_or_away = written.code() == errc::conflict || written.code() == errc::unavailable;
    return refusal{written.err(), {}, {}, fenced_or_away};
  }
  if (not_now) return not_served(*p_.ownership, tp, p_.self);
  if (missing) return no_partition(tp);
  return done{};
}

outcome<std::optional<storage::committed_offset>> offsets_frontend::committed(const std::string& group,
                                                                   const topic_partition& tp) const {
  // Like a commit: a broker that moved the partition away answers with its owner, never a stale offset; one that
  // does not have the partition never answers "nothing committed".
  if (auto elsewhere = served_elsewhere(p_, tp)) return *elsewhere;
  if (!cluster::serves(*p_.ownership, tp, p_.self)) return not_served(*p_.ownership, tp, p_.self);
  if (!exists(*p_.store, tp)) return no_partition(tp);
  return p_.offsets->committed_with_metadata(group, tp);
}

}  // namespace moonmq::frontend

namespace moonmq::frontend {

outcome<done> offsets_frontend::commit_at_owner(const commit_request& req) {
  auto here = commit(req);
  if (here || here.code() != errc::not_owner || !here.refused().owner || !p_.peers ||
      *here.refused().owner == p_.self)
    return here;
  broker_id owner = *here.refused().owner;
  transport::request r;
  r.path = relay_path;
  r.body = json::object([&](json::writer& w) {
    json::put(w, "group", req.group);
    json::put(w, "topic", req.tp.topic);
    json::put(w, "partition", req.tp.partition);
    json::put(w, "offset", req.offset);
    if (!req.metadata.empty()) json::put(w, "metadata", req.metadata);
    json::put(w, "member_id", req.member_id);
    json::put(w, "member_epoch", req.member_epoch);
  });
  bool by_coordinator = false;
  auto d = relay_following(*p_.peers, p_.self, owner, r, by_coordinator);
  if (!d) return refusal{d.err(), d.code() == errc::not_owner ? std::nullopt : std::optional(owner), {}, by_coordinator};
  return done{};
}

outcome<std::optional<storage::committed_offset>> offsets_frontend::committed_at_owner(const std::string& group,
                                                                            const topic_partition& tp) const {
  auto here = committed(group, tp);
  if (here || here.code() != errc::not_owner || !here.refused().owner || !p_.peers ||
      *here.refused().owner == p_.self)
    return here;
  broker_id owner = *here.refused().owner;
  auto r = transport::get_request(relay_path);
  r.params = {{"group", group}, {"topic", tp.topic}, {"partition", std::to_string(tp.partition)}};
  bool by_coordinator = false;
  auto d = relay_following(*p_.peers, p_.self, owner, r, by_coordinator);
  if (!d) return refusal{d.err(), std::nullopt, {}, by_coordinator};
  json::object_reader reader(*d, owner.value() + "'s answer");
  const auto* offset = reader.member("offset");
  if (!offset || offset->IsNull()) return std::optional<storage::committed_offset>{};
  if (!offset->IsUint64()) return error{errc::internal, owner.value() + " answered an offset that is not one"};
  storage::committed_offset got{offset->GetUint64(), {}};
  reader.get("metadata", got.metadata);
  return std::optional<storage::committed_offset>{std::move(got)};
}

namespace {

/// The group's offsets of the partitions `self` serves (a former owner's copy is never reported); errc::unavailable
/// while one of the group's partitions here is being handed over, when neither side would report it.
result<std::vector<std::pair<topic_partition, storage::committed_offset>>> served_offsets(const offsets_parts& p,
                                                                                         const std::string& group) {
  auto all = p.offsets->of_group(group);
  for (const auto& [tp, offset] : all)
    if (auto e = p.ownership->entry(tp); e && e->handover)
      return error{errc::unavailable, name_of(tp) + " is being handed over; its committed offset is read once it is "
                                                    "served again"};
  std::erase_if(all, [&](const auto& e) { return !cluster::serves(*p.ownership, e.first, p.self); });
  return all;
}

}  // namespace

outcome<std::vector<std::pair<topic_partition, storage::committed_offset>>> offsets_frontend::all_committed(
    const std::string& group) const {
  auto here = served_offsets(p_, group);
  if (!here) return refusal{here.err(), std::nullopt, {}, false};
  auto out = std::move(*here);
  if (!p_.peers) return out;
  for (const auto& peer : p_.peer_ids) {
    auto r = transport::get_request(relay_path);
    r.params = {{"group", group}};
    bool by_coordinator = false;
    auto d = relayed(p_.peers->call_now(peer, std::move(r)), broker_id(peer), by_coordinator);
    if (!d) return refusal{d.err(), std::nullopt, {}, false};
    const auto* list = d->IsObject() && d->HasMember("offsets") ? &(*d)["offsets"] : nullptr;
    if (!list || !list->IsArray()) return error{errc::internal, peer + " answered no list of offsets"};
    for (const auto& e : list->GetArray()) {
      if (!e.IsObject() || !e.HasMember("topic") || !e["topic"].IsString() || !e.HasMember("partition") ||
          !e["partition"].IsInt() || !e.HasMember("offset") || !e["offset"].IsUint64())
        return error{errc::internal, peer + " answered an offset that is not one"};
      storage::committed_offset got{e["offset"].GetUint64(), {}};
      if (e.HasMember("metadata") && e["metadata"].IsString()) got.metadata = e["metadata"].GetString();
      out.push_back({{e["topic"].GetString(), e["partition"].GetInt()}, std::move(got)});
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

transport::response offsets_frontend::handle_cluster(const transport::request& req) {
  std::string group, topic, member_id, metadata;
  std::int64_t partition = -1;
  std::uint64_t offset = 0, epoch = 0;
  rapidjson::Document d;
  const bool commit_call = req.method == "POST";
  if (commit_call) {
    if (auto s = json::parse_document(req.body, d, "body"); !s)
      return transport::error_response(400, "invalid_argument", s.message());
    json::object_reader r(d, "");
    r.get("group", group, true);
    r.get("topic", topic, true);
    r.get("partition", partition, true);
    r.get("offset", offset, true);
    r.get("member_id", member_id);
    r.get("metadata", metadata);
    r.get("member_epoch", epoch);
    if (auto s = r.finish(); !s) return transport::error_response(400, "invalid_argument", s.message());
  } else {
    auto param = [&](const char* k) {
      auto it = req.params.find(k);
      return it == req.params.end() ? std::string() : it->second;
    };
    group = param("group");
    topic = param("topic");
    if (topic.empty() && param("partition").empty()) {
      if (!valid_client_name(group)) return transport::error_response(400, "invalid_argument", "group: not a group id");
      auto served = served_offsets(p_, group);
      if (!served) return refusal_response(refusal{served.err(), std::nullopt, {}, false});
      return {200, json::object([&](json::writer& w) {
                w.Key("offsets");
                w.StartArray();
                for (const auto& [tp, offset] : *served) {
                  w.StartObject();
                  json::put(w, "topic", tp.topic);
                  json::put(w, "partition", tp.partition);
                  json::put(w, "offset", offset.offset);
                  if (!offset.metadata.empty()) json::put(w, "metadata", offset.metadata);
                  w.EndObject();
                }
                w.EndArray();
              }),
              "application/json"};
    }
    const std::string number = param("partition");
    partition = number.empty() || number.size() > 10 || number.find_first_not_of("0123456789") != std::string::npos
                    ? -1
                    : std::stoll(number);
  }
  if (!valid_client_name(group)) return transport::error_response(400, "invalid_argument", "group: not a group id");
  if (auto v = validate_topic_name(topic); !v) return transport::error_response(400, "invalid_argument", v.message());
  if (partition < 0 || partition > INT32_MAX)
    return transport::error_response(400, "invalid_argument", "partition: out of range");
  const topic_partition tp{topic, static_cast<std::int32_t>(partition)};
  if (commit_call) {
    auto done = commit({group, tp, offset, member_id, epoch, std::move(metadata)});
    if (!done) return refusal_response(done.refused());
    return {200, "{}", "application/json"};
  }
  auto got = committed(group, tp);
  if (!got) return refusal_response(got.refused());
  return {200, json::object([&](json::writer& w) {
            if (*got && !(*got)->metadata.empty()) json::put(w, "metadata", (*got)->metadata);
            w.Key("offset");
            if (*got) w.Uint64((*got)->offset);
            else w.Null();
          }),
          "application/json"};
}

}  // namespace moonmq::frontend
