#include "cluster_lists.hpp"

#include <httplib.h>
#include <rapidjson/document.h>

#include <algorithm>

#include "json/writer.hpp"

namespace moonmq::daemon {

namespace {

/// The broker entries of a merged list: who answered, and why not when one did not (its own error fields, or the
/// transport's when nothing came back).
void write_brokers(json::writer& w, const std::string& self, const std::vector<std::string>& ids,
                   const std::vector<int>& statuses, const std::vector<rapidjson::Document>& bodies,
                   const std::vector<transport::response>& responses) {
  w.Key("brokers");
  w.StartArray();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    w.StartObject();
    json::put(w, "id", ids[i]);
    json::put(w, "self", ids[i] == self);
    const bool answered = statuses[i] >= 200 && statuses[i] < 300 && bodies[i].IsObject();
    json::put(w, "answered", answered);
    if (!answered) {
      const auto e = cluster::read_peer_error(responses[i]);
      w.Key("error");
      w.StartObject();
      json::put(w, "error", e.error);
      json::put(w, "message", e.message);
      w.EndObject();
    }
    w.EndObject();
  }
  w.EndArray();
}

/// Whether a broker's page stopped short of its end.
bool has_more(const rapidjson::Document& b) { return b.IsObject() && b.HasMember("more") && b["more"].IsTrue(); }

/// The first `limit` of `names` (sorted here) and, when more remain anywhere, the name to ask after next.
template <typename Entry>
std::optional<std::string> take_page(std::vector<Entry>& entries, std::size_t limit, bool any_more) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  const bool more = any_more || entries.size() > limit;
  if (entries.size() > limit) entries.resize(limit);
  if (more && !entries.empty()) return entries.back().name;
  return std::nullopt;
}

}  // namespace

result<transport::list_page> cluster_lists::page_of(const httplib::Request& req) {
  std::map<std::string, std::string> params;
  for (const char* k : {"after", "limit"})
    if (req.has_param(k)) params[k] = req.get_param_value(k);
  return transport::list_page::from(params);
}

std::tuple<std::vector<std::string>, std::vector<int>, std::vector<rapidjson::Document>> cluster_lists::read(
    const std::vector<part>& parts) {
  std::vector<std::string> ids;
  std::vector<int> statuses;
  std::vector<rapidjson::Document> bodies(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    ids.push_back(parts[i].broker);
    statuses.push_back(parts[i].status);
    bodies[i].Parse(parts[i].body.c_str(), parts[i].body.size());
  }
  return {std::move(ids), std::move(statuses), std::move(bodies)};
}

std::vector<transport::response> cluster_lists::responses_of(const std::vector<part>& parts) {
  std::vector<transport::response> out;
  for (const auto& p : parts) out.push_back({p.status, p.body, "application/json"});
  return out;
}

std::vector<cluster_lists::part> cluster_lists::ask_all(const std::string& own, const std::string& path,
                                                        const transport::list_page& page) {
  std::vector<part> out{{view_.self().value(), own, 200}};
  auto r = transport::get_request(path);
  r.params = page.params();
  for (auto& a : view_.ask_peers(r))
    out.push_back({a.broker, std::move(a.response.body), a.response.status});
  return out;
}

std::string cluster_lists::groups(const std::string& own, const transport::list_page& page) {
  const auto parts = ask_all(own, "/cluster/group/list", page);
  auto [ids, statuses, bodies] = read(parts);
  struct entry {
    std::string name, coordinator;
  };
  std::vector<entry> entries;
  bool any_more = false;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto& b = bodies[i];
    if (statuses[i] != 200 || !b.IsObject() || !b.HasMember("groups") || !b["groups"].IsArray()) continue;
    any_more = any_more || has_more(b);
    for (const auto& g : b["groups"].GetArray())
      if (g.IsString() && g.GetString() > page.after) entries.push_back({g.GetString(), ids[i]});
  }
  const auto next = take_page(entries, page.limit, any_more);
  return json::object([&](json::writer& w) {
    w.Key("groups");
    w.StartArray();
    for (const auto& e : entries) {
      w.StartObject();
      json::put(w, "group", e.name);
      json::put(w, "coordinator", e.coordinator);
      w.EndObject();
    }
    w.EndArray();
    if (next) json::put(w, "next", *next);
    write_brokers(w, view_.self().value(), ids, statuses, bodies, responses_of(parts));
  });
}

std::string cluster_lists::transactions(const std::string& own, const transport::list_page& page) {
  const auto parts = ask_all(own, "/cluster/txn/list", page);
  auto [ids, statuses, bodies] = read(parts);
  struct entry {
    std::string name;
    rapidjson::Value* value;
  };
  std::vector<entry> entries;
  bool any_more = false;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    auto& b = bodies[i];
    if (statuses[i] != 200 || !b.IsObject() || !b.HasMember("transactions") || !b["transactions"].IsArray()) continue;
    any_more = any_more || has_more(b);
    for (auto& t : b["transactions"].GetArray()) {
      if (!t.IsObject() || !t.HasMember("transactional_id") || !t["transactional_id"].IsString()) continue;
      std::string name = t["transactional_id"].GetString();
      if (name <= page.after) continue;
      if (!t.HasMember("coordinator"))
        t.AddMember("coordinator", rapidjson::Value(ids[i].c_str(), b.GetAllocator()), b.GetAllocator());
      entries.push_back({std::move(name), &t});
    }
  }
  const auto next = take_page(entries, page.limit, any_more);
  return json::object([&](json::writer& w) {
    w.Key("transactions");
    w.StartArray();
    for (const auto& e : entries) e.value->Accept(w);
    w.EndArray();
    if (next) json::put(w, "next", *next);
    write_brokers(w, view_.self().value(), ids, statuses, bodies, responses_of(parts));
  });
}

}  // namespace moonmq::daemon
