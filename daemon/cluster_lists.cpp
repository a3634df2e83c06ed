#include "cluster_lists.hpp"

#include <rapidjson/document.h>

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

}  // namespace

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

std::vector<cluster_lists::part> cluster_lists::ask_all(const std::string& own, const std::string& path) {
  std::vector<part> out{{view_.self().value(), own, 200}};
  for (auto& a : view_.ask_peers(transport::get_request(path)))
    out.push_back({a.broker, std::move(a.response.body), a.response.status});
  return out;
}

std::string cluster_lists::groups(const std::string& own) {
  const auto parts = ask_all(own, "/cluster/group/list");
  auto [ids, statuses, bodies] = read(parts);
  return json::object([&](json::writer& w) {
    w.Key("groups");
    w.StartArray();
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const auto& b = bodies[i];
      if (statuses[i] != 200 || !b.IsObject() || !b.HasMember("groups") || !b["groups"].IsArray()) continue;
      for (const auto& g : b["groups"].GetArray()) {
        if (!g.IsString()) continue;
        w.StartObject();
        json::put(w, "group", std::string(g.GetString()));
        json::put(w, "coordinator", ids[i]);
        w.EndObject();
      }
    }
    w.EndArray();
    write_brokers(w, view_.self().value(), ids, statuses, bodies, responses_of(parts));
  });
}

std::string cluster_lists::transactions(const std::string& own) {
  const auto parts = ask_all(own, "/cluster/txn/list");
  auto [ids, statuses, bodies] = read(parts);
  return json::object([&](json::writer& w) {
    w.Key("transactions");
    w.StartArray();
    for (std::size_t i = 0; i < parts.size(); ++i) {
      auto& b = bodies[i];
      if (statuses[i] != 200 || !b.IsObject() || !b.HasMember("transactions") || !b["transactions"].IsArray())
        continue;
      for (auto& t : b["transactions"].GetArray()) {
        if (!t.IsObject()) continue;
        if (!t.HasMember("coordinator"))
          t.AddMember("coordinator", rapidjson::Value(ids[i].c_str(), b.GetAllocator()), b.GetAllocator());
        t.Accept(w);
      }
    }
    w.EndArray();
    write_brokers(w, view_.self().value(), ids, statuses, bodies, responses_of(parts));
  });
}

}  // namespace moonmq::daemon
