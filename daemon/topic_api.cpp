#include "topic_api.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <map>
#include <set>

#include "api_reply.hpp"
#include "cluster/topic_json.hpp"
#include "json/object_reader.hpp"
#include "json/writer.hpp"
#include "moonmq/core/topic_name.hpp"
#include "moonmq/storage/partition_store.hpp"

namespace moonmq::daemon {

namespace {

using json::put;
using json_writer = json::writer;
using transport::error_response;

transport::response json_response(int status, std::string body) { return {status, std::move(body), "application/json"}; }

transport::response refusal(const error& e) {
  if (e.code == errc::already_exists) return error_response(409, "topic_exists", e.message);
  return error_response(transport::http_status_of(e.code), errc_name(e.code), e.message);
}

std::string owners_text(const std::vector<broker_id>& owners) {
  std::vector<std::string> ids;
  for (const auto& o : owners) ids.push_back(o.value());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ", ") + id;
  return out;
}

std::string change_body(const std::string& op, const std::string& name, std::uint32_t partitions,
                        const std::string& placement, const std::vector<std::string>& brokers) {
  return json::object([&](json_writer& w) {
    put(w, "op", op);
    put(w, "name", name);
    put(w, "partitions", partitions);
    put(w, "placement", placement);
    w.Key("brokers");
    w.StartArray();
    for (const auto& b : brokers) w.String(b.c_str(), static_cast<rapidjson::SizeType>(b.size()));
    w.EndArray();
  });
}

/// A topic's partition count, as a client gives it: 1 to the hard limit (a broker's own limit is asked later).
void check_count(json::object_reader& r, const char* key, std::uint32_t n) {
  if (r.ok() && (n < 1 || n > static_cast<std::uint32_t>(storage::max_partitions_per_topic_hard)))
    r.fail(key, "must be from 1 to " + std::to_string(storage::max_partitions_per_topic_hard));
}

void write_record(json_writer& w, const cluster::topic_record& r) {
  put(w, "name", r.name);
  put(w, "partitions", r.partitions());
  put(w, "version", r.version);
  cluster::wire::write_owners(w, "owners", r.owners);
}

}  // namespace

void topic_api::routes(api_routes& api) {
  api.Post("/v1/topics", [this](const httplib::Request& req, httplib::Response& res) { create(req, res); });
  api.Get("/v1/topics", [this](const httplib::Request&, httplib::Response& res) { list(res); });
  api.Post(R"(/v1/topics/([^/]+)/partitions)",
           [this](const httplib::Request& req, httplib::Response& res) { grow(req, res); });
  api.Delete(R"(/v1/topics/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) { remove(req, res); });
  api.Post(R"(/v1/topics/([^/]+)/adopt)", [this](const httplib::Request& req, httplib::Response& res) { adopt(req, res); });
}

void topic_api::adopt(const httplib::Request& req, httplib::Response& res) {
  const std::string name = req.matches[1];
  if (auto v = validate_topic_name(name); !v) return reply_error(res, 400, "invalid_argument", v.message());
  if (topics_.find(name))
    return reply_error(res, 409, "conflict", "topic '" + name + "' is in the cluster's catalog already");
  // Who serves each partition now; a broker that does not answer might, and nothing is decided without it.
  std::map<std::int32_t, std::vector<std::pair<std::string, std::uint64_t>>> servers;  // partition -> broker, size
  std::vector<std::string> holders;
  for (const auto& b : view_.brokers()) {
    if (!b.reachable)
      return reply_error(res, 503, "unavailable",
                         b.id + " did not answer (" + b.error + "): it may hold a log of '" + name + "'; nothing changed");
    bool holds = false;
    for (const auto& p : b.partitions)
      if (p.partition.topic == name) {
        servers[p.partition.partition].emplace_back(b.id, p.size_bytes);
        holds = true;
      }
    if (holds) holders.push_back(b.id);
  }
  // Brokers that hold logs of it without serving any (a move's leftover or half-made copy) claim theirs too: once the
  // catalog lists the topic, an unclaimed log of it would be a stray.
  transport::request hq = transport::get_request("/cluster/admin/topics/holds");
  hq.params = {{"name", name}};
  for (const auto& a : view_.ask_peers(hq)) {
    rapidjson::Document d;
    if (!a.response.ok() || !json::parse_object(a.response.body, d) || !d.HasMember("holds") || !d["holds"].IsBool())
      return reply_error(res, 503, "unavailable",
                         a.broker + " did not say whether it holds '" + name + "' (" + describe_answer(a.response) +
                             "); nothing changed");
    if (d["holds"].GetBool() && std::find(holders.begin(), holders.end(), a.broker) == holders.end())
      holders.push_back(a.broker);
  }
  if (store_.partition_count(name) &&
      std::find(holders.begin(), holders.end(), view_.self().value()) == holders.end())
    holders.push_back(view_.self().value());
  if (servers.empty()) return reply_error(res, 404, "not_found", "no broker serves a partition of '" + name + "'");
  const std::int32_t count = servers.rbegin()->first + 1;
  // Each partition's log: of the brokers serving it, the one whose own entry for it is newest (a move confirmed there:
  // the others route to it), then the largest, then the first by id. The others' logs of it become strays.
  std::vector<std::string> owners;
  for (std::int32_t p = 0; p < count; ++p) {
    auto it = servers.find(p);
    if (it == servers.end())
      return reply_error(res, 409, "conflict",
                         name + "-" + std::to_string(p) + " is served by no broker: adopt it once every partition is");
    std::string best;
    std::uint64_t best_version = 0, best_size = 0;
    for (const auto& [b, size] : it->second) {
      std::uint64_t version = 0;  // of b's own entry for the partition, when it names b
      if (b == view_.self().value()) {
        if (auto e = own_entry_({name, p}); e && e->owner == view_.self()) version = e->version;
      } else {
        transport::request q = transport::get_request("/cluster/owner");
        q.params = {{"topic", name}, {"partition", std::to_string(p)}};
        auto a = view_.ask(b, q);
        rapidjson::Document d;
        if (!a.ok() || !json::parse_object(a.body, d) || !d.HasMember("version") || !d["version"].IsUint64())
          return reply_error(res, 503, "unavailable",
                             b + " did not say who owns " + name + "-" + std::to_string(p) + " (" + describe_answer(a) +
                                 "); nothing changed");
        if (d.HasMember("owner") && d["owner"].IsString() && b == d["owner"].GetString())
          version = d["version"].GetUint64();
      }
      if (best.empty() || version > best_version || (version == best_version && size > best_size) ||
          (version == best_version && size == best_size && b < best)) {
        best = b;
        best_version = version;
        best_size = size;
      }
    }
    owners.push_back(best);
  }
  // First every holder stamps its logs as the incarnation about to be made (version 1) and learns which of them are
  // not the partition's; then the create is decided like any other, with these owners.
  for (const auto& b : holders) {
    std::vector<std::int32_t> disowned;
    for (std::int32_t p = 0; p < count; ++p) {
      const auto& list = servers[p];
      if (owners[static_cast<std::size_t>(p)] != b &&
          std::any_of(list.begin(), list.end(), [&](const auto& e) { return e.first == b; }))
        disowned.push_back(p);
    }
    transport::request claim;
    claim.path = "/cluster/admin/topics/claim";
    claim.body = json::object([&](json_writer& w) {
      put(w, "name", name);
      put(w, "created", std::uint64_t{1});
      put(w, "partitions", count);
      w.Key("disowned");
      w.StartArray();
      for (std::int32_t p : disowned) w.Int(p);
      w.EndArray();
    });
    auto a = b == view_.self().value() ? handle_cluster(claim) : view_.ask(b, claim);
    if (!a.ok()) {
      rapidjson::Document e;
      std::string code = a.status ? "internal" : "unavailable";
      if (json::parse_object(a.body, e) && e.HasMember("error") && e["error"].IsString()) code = e["error"].GetString();
      return reply_error(res, a.status ? a.status : 503, code,
                         b + " did not claim its logs of '" + name + "': " + describe_answer(a) +
                             "; the topic was not adopted (brokers that claimed theirs keep the claim until the next "
                             "adoption of the name)");
    }
  }
  change_request c;
  c.op = "adopt";
  c.name = name;
  c.partitions = static_cast<std::uint32_t>(count);
  c.brokers = owners;
  relay(res, submit(c));
}

void topic_api::create(const httplib::Request& req, httplib::Response& res) {
  rapidjson::Document d;
  if (!parse_body(req, res, d)) return;
  json::object_reader r(d, "");
  change_request c;
  c.op = "create";
  c.partitions = 1;
  r.get("name", c.name, true);
  r.get("partitions", c.partitions);
  r.get("placement", c.placement);
  r.get("brokers", c.brokers);
  if (r.ok())
    if (auto v = validate_topic_name(c.name); !v) r.fail("name", v.message());
  check_count(r, "partitions", c.partitions);
  if (r.ok() && c.placement != "spread" && c.placement != "local") r.fail("placement", "expected spread or local");
  if (r.ok() && c.placement == "local" && !c.brokers.empty())
    r.fail("brokers", "a local placement puts every partition on the receiving broker: name no brokers");
  for (const auto& b : c.brokers)
    if (r.ok() && b != view_.self().value() && !view_.is_peer(b)) r.fail("brokers", "unknown broker '" + b + "'");
  if (auto s = r.finish(); !s) return reply_error(res, s.err());
  if (c.placement == "local") c.brokers = {view_.self().value()};
  relay(res, submit(c));
}

void topic_api::grow(const httplib::Request& req, httplib::Response& res) {
  rapidjson::Document d;
  if (!parse_body(req, res, d)) return;
  json::object_reader r(d, "");
  change_request c;
  c.op = "grow";
  c.name = req.matches[1];
  r.get("count", c.partitions, true);
  check_count(r, "count", c.partitions);
  if (auto s = r.finish(); !s) return reply_error(res, s.err());
  if (!topics_.find(c.name) && store_.partition_count(c.name)) {
    // A topic made before topics were cluster metadata: grown on this broker alone, as it was made.
    auto n = topics_.grow_unlisted(c.name, static_cast<std::int32_t>(c.partitions));
    if (!n) return reply_error(res, n.err());
    return reply(res, 200, json_object([&](json_writer& w) {
                   put(w, "name", c.name);
                   put(w, "partitions", *n);
                   put(w, "catalog", false);
                 }));
  }
  relay(res, submit(c));
}

void topic_api::remove(const httplib::Request& req, httplib::Response& res) {
  change_request c;
  c.op = "delete";
  c.name = req.matches[1];
  if (auto v = validate_topic_name(c.name); !v) return reply_error(res, 400, "invalid_argument", v.message());
  relay(res, submit(c));
}

void topic_api::list(httplib::Response& res) {
  const auto live = topics_.live();
  reply(res, 200, json_object([&](json_writer& w) {
          w.Key("topics");
          w.StartArray();
          for (const auto& t : live) {
            w.StartObject();
            write_record(w, t);
            w.EndObject();
          }
          // This broker's own topics that the catalog does not list (made before topics were cluster metadata).
          for (const auto& name : store_.topics()) {
            if (topics_.find(name)) continue;
            w.StartObject();
            put(w, "name", name);
            put(w, "partitions", store_.partition_count(name).ok() ? *store_.partition_count(name) : 0);
            put(w, "catalog", false);
            put(w, "broker", view_.self().value());
            w.EndObject();
          }
          w.EndArray();
        }));
}

transport::response topic_api::submit(const change_request& c) {
  if (topics_.replicated()) return decide_here(c);
  const broker_id coordinator = topics_.coordinator_of(c.name);
  if (coordinator == view_.self()) return decide_here(c);
  transport::request fwd;
  fwd.path = "/cluster/admin/topics/change";
  fwd.body = change_body(c.op, c.name, c.partitions, c.placement, c.brokers);
  auto r = view_.ask(coordinator.value(), fwd);
  if (r.status == 0)
    return error_response(503, "unavailable",
                          "topic '" + c.name + "' is decided by its coordinator " + coordinator.value() +
                              ", which does not answer: no change to it can be made now (" + r.body + ")");
  return r;
}

topic_api::survey topic_api::ask_everyone(const std::string& name, std::uint32_t partitions, bool refuse_holders) {
  survey out;
  const auto exists = [&](const std::string& b) {
    return error_response(409, "topic_exists", "topic '" + name + "' already exists: " + b + " holds a log of that name");
  };
  answer me{view_.self(), served_(), store_.partition_count(name).ok(),
            store_.room_for(name, static_cast<std::int32_t>(partitions))};
  if (refuse_holders && me.holds) {
    out.refusal = exists(me.broker.value());
    return out;
  }
  out.answers.push_back(std::move(me));
  transport::request q = transport::get_request("/cluster/admin/topics/holds");
  q.params["name"] = name;
  q.params["partitions"] = std::to_string(partitions);
  std::vector<std::string> silent;
  for (const auto& a : view_.ask_peers(q)) {
    rapidjson::Document d;
    if (!a.response.ok() || !json::parse_object(a.response.body, d) || !d.HasMember("holds") || !d["holds"].IsBool() ||
        !d.HasMember("served") || !d["served"].IsUint64()) {
      silent.push_back(a.broker);
      continue;
    }
    if (refuse_holders && d["holds"].GetBool()) {
      out.refusal = exists(a.broker);
      return out;
    }
    answer got{broker_id(a.broker), d["served"].GetUint64(), d["holds"].GetBool(), {}};
    if (d.HasMember("no_room") && d["no_room"].IsObject()) {
      const auto& why = d["no_room"];
      const bool full = why.HasMember("error") && why["error"].IsString() &&
                        std::string_view(why["error"].GetString()) == errc_name(errc::resource_exhausted);
      got.room = {full ? errc::resource_exhausted : errc::invalid_argument,
                  a.broker + ": " + (why.HasMember("message") && why["message"].IsString() ? why["message"].GetString() : "")};
    }
    out.answers.push_back(std::move(got));
  }
  if (refuse_holders && !silent.empty()) {
    std::string names;
    for (const auto& b : silent) names += (names.empty() ? "" : ", ") + b;
    out.refusal = error_response(503, "unavailable", names + " might hold a topic named '" + name +
                                                         "' and did not answer: try again when every broker answers");
  }
  return out;
}

std::vector<std::string> topic_api::tell_everyone(const cluster::topic_record& r) {
  transport::request tell;
  tell.path = "/cluster/admin/topics/learn";
  tell.body = cluster::wire::topic_record_body(r);
  std::vector<std::string> missed;
  for (const auto& a : view_.ask_peers(tell))
    if (!a.response.ok()) missed.push_back(a.broker);
  return missed;
}

transport::response topic_api::decide_here(const change_request& c) {
  const auto existing = topics_.find(c.name);
  const bool live = existing && !existing->deleted;
  cluster::topic_change change;
  change.name = c.name;
  change.expect = existing ? existing->version : 0;
  if (c.op == "adopt") {
    // A topic made before topics were cluster metadata, its logs claimed on every broker holding them (adopt()).
    if (existing) return error_response(409, "conflict", "topic '" + c.name + "' is in the cluster's catalog already");
    if (c.brokers.size() != c.partitions || c.brokers.empty())
      return error_response(400, "invalid_argument", "adopt: one owner per partition");
    change.op = cluster::topic_op::create;
    for (const auto& b : c.brokers) change.added.emplace_back(b);
  } else if (c.op == "create") {
    if (live)
      return error_response(409, "topic_exists", "topic '" + c.name + "' already exists (its partitions were created on " +
                                                     owners_text(existing->owners) + ")");
    change.op = cluster::topic_op::create;
  } else if (c.op == "grow") {
    if (!live) return error_response(404, "not_found", "unknown topic '" + c.name + "'");
    if (static_cast<std::int32_t>(c.partitions) <= existing->partitions())  // a topic never shrinks
      return json_response(200, json::object([&](json_writer& w) { write_record(w, *existing); }));
    change.op = cluster::topic_op::grow;
  } else if (c.op == "delete") {
    if (!live) return error_response(404, "not_found", "unknown topic '" + c.name + "'");
    change.op = cluster::topic_op::remove;
  } else {
    return error_response(400, "invalid_argument", "op: expected create, grow or delete");
  }

  if (change.op != cluster::topic_op::remove && c.op != "adopt") {
    survey s = ask_everyone(c.name, c.partitions, change.op == cluster::topic_op::create);
    if (s.refusal) return *s.refusal;
    // A grow makes the new partitions' logs on every broker that holds the topic: each must have room for them.
    for (const auto& a : s.answers)
      if (a.holds && !a.room) return refusal(a.room.err());
    std::vector<std::pair<broker_id, std::size_t>> candidates;
    std::optional<error> full;  // why a broker that could have taken partitions may not
    auto consider = [&](const answer& a) {
      if (a.room)
        candidates.emplace_back(a.broker, a.served);
      else if (!full)
        full = a.room.err();
    };
    if (c.brokers.empty()) {
      for (const auto& a : s.answers) consider(a);
    } else {
      for (const auto& b : c.brokers) {
        auto it = std::find_if(s.answers.begin(), s.answers.end(), [&](const answer& a) { return a.broker.value() == b; });
        if (it == s.answers.end())
          return error_response(503, "unavailable", b + " was named for topic '" + c.name + "' but did not answer");
        if (!it->room) return refusal(it->room.err());
        consider(*it);
      }
    }
    if (candidates.empty())
      return full ? refusal(*full) : error_response(503, "unavailable", "no broker can take topic '" + c.name + "'");
    const std::size_t adding = change.op == cluster::topic_op::create
                                   ? c.partitions
                                   : c.partitions - static_cast<std::size_t>(existing->partitions());
    std::vector<std::string> ids;
    for (const auto& [b, n] : candidates) ids.push_back(b.value());
    change.added = cluster::spread_partitions(candidates, adding, autobalancer::relative_capacities(balance_, ids));
  }

  auto decided = topics_.decide(change);
  if (!decided) return refusal(decided.err());
  const std::vector<std::string> missed = topics_.replicated() ? std::vector<std::string>{} : tell_everyone(*decided);
  return json_response(200, json::object([&](json_writer& w) {
                         write_record(w, *decided);
                         if (decided->deleted) put(w, "deleted", true);
                         if (!missed.empty()) {
                           // Decided and durable on the coordinator; these brokers learn it when they next start.
                           w.Key("not_yet_told");
                           w.StartArray();
                           for (const auto& b : missed) w.String(b.c_str(), static_cast<rapidjson::SizeType>(b.size()));
                           w.EndArray();
                         }
                       }));
}

transport::response topic_api::handle_cluster(const transport::request& req) {
  const bool post = req.method == "POST", get = req.method == "GET";
  if (get && req.path == "/cluster/admin/topics/holds") {
    auto name = req.params.find("name");
    if (name == req.params.end()) return error_response(400, "invalid_argument", "query parameter name is required");
    const bool holds = store_.partition_count(name->second).ok();
    status room;
    if (auto n = req.params.find("partitions"); n != req.params.end()) {
      auto count = whole_number(n->second, INT32_MAX);
      if (!count) return error_response(400, "invalid_argument", "partitions: expected a whole number");
      room = store_.room_for(name->second, static_cast<std::int32_t>(*count));
    }
    return json_response(200, json::object([&](json_writer& w) {
                           put(w, "holds", holds);
                           put(w, "served", static_cast<std::uint64_t>(served_()));
                           if (!room) {
                             w.Key("no_room");
                             w.StartObject();
                             put(w, "error", errc_name(room.code()));
                             put(w, "message", room.message());
                             w.EndObject();
                           }
                         }));
  }
  if (get && req.path == "/cluster/admin/topics/catalog")
    return json_response(200, json::object([&](json_writer& w) { cluster::wire::write_catalog(w, topics_.catalog()); }));
  if (post && req.path == "/cluster/admin/topics/claim") {
    rapidjson::Document d;
    if (auto s = json::parse_document(req.body, d, "body"); !s) return error_response(400, "invalid_argument", s.message());
    json::object_reader r(d, "");
    std::string name;
    std::uint64_t created = 0;
    std::uint32_t partitions = 0;
    r.get("name", name, true);
    r.get("created", created, true);
    r.get("partitions", partitions, true);
    std::set<std::int32_t> disowned;
    if (const rapidjson::Value* list = r.member("disowned"); list && list->IsArray()) {
      for (const auto& v : list->GetArray())
        if (v.IsInt() && v.GetInt() >= 0) disowned.insert(v.GetInt());
        else r.fail("disowned", "expected partitions");
    }
    check_count(r, "partitions", partitions);
    if (r.ok() && created < 1) r.fail("created", "must be at least 1");
    if (r.ok() && !disowned.empty() && *disowned.rbegin() >= static_cast<std::int32_t>(partitions))
      r.fail("disowned", "names a partition past the topic's count");
    if (auto s = r.finish(); !s) return error_response(400, "invalid_argument", s.message());
    if (auto s = topics_.claim(name, created, static_cast<std::int32_t>(partitions), std::move(disowned)); !s)
      return refusal(s.err());
    return json_response(200, "{}");
  }
  if (post && req.path == "/cluster/admin/topics/learn") {
    auto r = cluster::wire::read_topic_record(req.body);
    if (!r) return error_response(400, "invalid_argument", r.message());
    if (auto s = topics_.learn(*r); !s) return refusal(s.err());
    return json_response(200, "{}");
  }
  if (post && req.path == "/cluster/admin/topics/change") {
    rapidjson::Document d;
    if (auto s = json::parse_document(req.body, d, "body"); !s) return error_response(400, "invalid_argument", s.message());
    json::object_reader r(d, "");
    change_request c;
    r.get("op", c.op, true);
    r.get("name", c.name, true);
    r.get("partitions", c.partitions, true);
    r.get("placement", c.placement, true);
    r.get("brokers", c.brokers, true);
    if (r.ok())
      if (auto v = validate_topic_name(c.name); !v) r.fail("name", v.message());
    if (r.ok() && c.partitions > static_cast<std::uint32_t>(storage::max_partitions_per_topic_hard))
      r.fail("partitions", "must be at most " + std::to_string(storage::max_partitions_per_topic_hard));
    if (auto s = r.finish(); !s) return error_response(400, "invalid_argument", s.message());
    if (topics_.replicated() || topics_.coordinator_of(c.name) != view_.self())
      return error_response(421, "not_coordinator",
                            view_.self().value() + " does not decide topic '" + c.name + "' (its coordinator is " +
                                topics_.coordinator_of(c.name).value() + ")");
    return decide_here(c);
  }
  return error_response(404, "not_found", req.method + " " + req.path + " is not a cluster route");
}

void topic_api::catch_up() {
  if (topics_.replicated()) return;
  for (const auto& a : view_.ask_peers(transport::get_request("/cluster/admin/topics/catalog"))) {
    rapidjson::Document d;
    if (!a.response.ok() || !json::parse_object(a.response.body, d)) continue;
    auto c = cluster::wire::read_catalog(d, a.broker);
    if (!c) continue;
    for (const auto& t : c->records())
      if (topics_.coordinator_of(t.name).value() == a.broker) (void)topics_.learn(t);
  }
}

}  // namespace moonmq::daemon
