#include "status_api.hpp"

#include <tuple>

#include "api_reply.hpp"
#include "broker_metrics.hpp"
#include "console_assets.hpp"

namespace moonmq::daemon {

namespace {
using json::put;
using json_writer = json::writer;
}  // namespace

void status_api::routes(api_routes& api) {
  const std::string self = p_.view->self().value();
  api.Get("/v1/health", [self](const httplib::Request&, httplib::Response& res) {
    reply(res, 200, json_object([&](json_writer& w) {
            put(w, "status", "ok");
            put(w, "broker", self);
          }));
  });
  // Alive: the process answers. Ready: it can serve what it owns (storage recovered before the listener opened;
  // under Raft, caught up with the ownership log, without which it does not know what it serves).
  api.Get("/livez", [self](const httplib::Request&, httplib::Response& res) {
    reply(res, 200, json_object([&](json_writer& w) {
            put(w, "status", "alive");
            put(w, "broker", self);
          }));
  });
  api.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) { readyz(res); });
  api.Get("/ui", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/ui/"); });
  api.Get(R"(/ui/([a-z.]*))", [](const httplib::Request& req, httplib::Response& res) { console(req, res); });
  api.Get("/v1/cluster", [this](const httplib::Request&, httplib::Response& res) { cluster_document(res); });
  api.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    observe_storage();
    res.status = 200;
    res.set_content(p_.metrics->render(), "text/plain; version=0.0.4; charset=utf-8");
  });
}

void status_api::readyz(httplib::Response& res) {
  const bool table = p_.ownership->ready();
  reply(res, table ? 200 : 503, json_object([&](json_writer& w) {
          put(w, "ready", table);
          put(w, "broker", p_.view->self().value());
          w.Key("checks");
          w.StartArray();
          for (auto [name, ok, detail] :
               {std::tuple<const char*, bool, std::string>{"storage", true, "partition logs recovered"},
                {"client_listener", true, p_.client_address},
                {"ownership", table,
                 table ? "ownership table current" : "catching up with the cluster's ownership log (Raft)"}}) {
            w.StartObject();
            put(w, "name", name);
            put(w, "ok", ok);
            put(w, "detail", detail);
            w.EndObject();
          }
          w.EndArray();
        }));
}

void status_api::console(const httplib::Request& req, httplib::Response& res) {
  const std::string name = req.matches[1].str().empty() ? "index.html" : req.matches[1].str();
  for (const auto& a : console_assets())
    if (a.name == name) {
      res.status = 200;
      res.set_content(std::string(a.body), std::string(a.content_type));
      res.set_header("Cache-Control", "no-cache");
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_header("Content-Security-Policy", "default-src 'self'; object-src 'none'; frame-ancestors 'none'");
      return;
    }
  reply_error(res, 404, "not_found", "no console file " + name);
}

void status_api::observe_storage() {
  const broker_id& self = p_.view->self();
  double served_bytes = 0, unserved_bytes = 0, stray_bytes = 0, served = 0, unserved = 0, strays = 0;
  for (const auto& tp : p_.store->list_partitions()) {
    auto size = p_.store->size_bytes(tp);
    const double bytes = size.ok() ? static_cast<double>(*size) : 0;
    if (p_.ownership->withheld(tp)) {
      stray_bytes += bytes;
      strays += bytes > 0 ? 1 : 0;  // an emptied stray (reconciled) wants nothing more
    } else if (cluster::serves(*p_.ownership, tp, self)) {
      served_bytes += bytes;
      ++served;
    } else {
      unserved_bytes += bytes;
      ++unserved;
    }
  }
  p_.metrics->set(metrics::stored_bytes, {{"state", "served"}}, served_bytes);
  p_.metrics->set(metrics::stored_bytes, {{"state", "unserved"}}, unserved_bytes);
  p_.metrics->set(metrics::partitions, {{"state", "served"}}, served);
  p_.metrics->set(metrics::partitions, {{"state", "unserved"}}, unserved);
  // Logs the topic catalog did not make here (docs/cluster.md, "Strays"): anything above 0 wants an operator.
  p_.metrics->set(metrics::stored_bytes, {{"state", "stray"}}, stray_bytes);
  p_.metrics->set(metrics::partitions, {{"state", "stray"}}, strays);
}

void status_api::cluster_document(httplib::Response& res) {
  // Every peer at once (the peers' own loads route): one slow peer costs one timeout, not one each.
  auto answers = p_.view->ask_peers(transport::get_request("/cluster/loads"));
  auto h = p_.fence->highest();
  reply(res, 200, json_object([&](json_writer& w) {
          put(w, "broker", p_.view->self().value());
          w.Key("peers");
          w.StartArray();
          for (std::size_t i = 0; i < answers.size(); ++i) {
            const auto& p = p_.view->peers()[i];
            w.StartObject();
            put(w, "id", p.id);
            put(w, "address", p.host + ":" + std::to_string(p.port));
            put(w, "reachable", answers[i].response.ok());
            w.EndObject();
          }
          w.EndArray();
          w.Key("controller");
          w.StartObject();
          put(w, "epoch", h.claim_epoch.value());
          put(w, "id", h.controller.value());
          w.EndObject();
          w.Key("raft");
          w.StartObject();
          put(w, "enabled", p_.raft != nullptr);
          if (p_.raft) {
            auto rs = p_.raft->status();
            put(w, "role", raft::role_name(rs.current_role));
            put(w, "term", rs.term);
            put(w, "leader", rs.leader);
            put(w, "commit_index", rs.commit);
            put(w, "applied_index", rs.applied);
            put(w, "last_index", rs.last_index);
            put(w, "snapshot_index", rs.snapshot_index);
            put(w, "caught_up", rs.caught_up);
          }
          w.EndObject();
          w.Key("ownership");
          w.StartArray();
          for (const auto& e : p_.ownership->entries()) {
            w.StartObject();
            put(w, "topic", e.partition.topic);
            put(w, "partition", e.partition.partition);
            put(w, "broker", e.owner.value());
            put(w, "version", e.version);
            put(w, "handover", e.handover);
            w.EndObject();
          }
          w.EndArray();
        }));
}

}  // namespace moonmq::daemon
