#include "balancer_api.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "api_reply.hpp"
#include "cluster/wire_json.hpp"
#include "json/object_reader.hpp"

namespace moonmq::daemon {

namespace {

using json::put;
using json_writer = json::writer;

/// `known`: the controller as this broker knows it, for a broker that holds no claim of its own (a Raft follower).
std::string autobalancer_document(const cluster::balance_status& s, const std::string& known,
                                  const std::vector<autobalancer::goal_config>& goals) {
  return json_object([&](json_writer& w) {
    put(w, "enabled", s.enabled);
    put(w, "dry_run", s.dry_run);
  put(w, "paused", s.paused);
  w.Key("goals");  // in priority order, with the band half-width the goals use (0.1 when not configured)
  w.StartArray();
  for (const auto& g : goals) {
    w.StartObject();
    put(w, "name", g.name);
    put(w, "deviation", g.deviation.value_or(0.1));
    w.EndObject();
  }
  w.EndArray();
    w.Key("controller");
    w.StartObject();
    put(w, "id", s.claim ? s.claim->controller.value() : known);
    put(w, "epoch", s.claim ? s.claim->claim_epoch.value() : 0);
    put(w, "this_broker", s.claim.has_value());
    put(w, "superseded", s.superseded);
    put(w, "superseded_reason", s.superseded_reason);
    w.EndObject();
    put(w, "passes", s.passes);
    w.Key("last_pass");
    w.StartObject();
    put(w, "result", s.last_result);
    put(w, "error", s.last_error);
    put(w, "ended_at", s.last_pass_unix_seconds);
    put(w, "duration_seconds", s.last_pass_duration_seconds);
    put(w, "detect_seconds", s.last_detect_seconds);
    w.EndObject();
    put(w, "satisfied", s.satisfied);
    w.Key("plan");
    w.StartArray();
    for (const auto& a : s.last_plan) {
      w.StartObject();
      put(w, "type", autobalancer::action_type_name(a.type));
      put(w, "topic", a.topic);
      put(w, "partition", a.partition);
      put(w, "src", a.src);
      put(w, "dest", a.dest);
      if (a.type == autobalancer::action_type::swap) {
        put(w, "swap_topic", a.swap_topic);
        put(w, "swap_partition", a.swap_partition);
      }
      put(w, "chosen_by", a.chosen_by);
      w.EndObject();
    }
    w.EndArray();
    w.Key("out_of_band");  // why brokers stay out of band once the plan is carried out
    w.StartArray();
    for (const auto& f : s.out_of_band) {
      w.StartObject();
      put(w, "broker", f.broker);
      put(w, "goal", f.goal);
      put(w, "value", f.value);
      put(w, "lower", f.lower);
      put(w, "upper", f.upper);
      put(w, "why", f.why);
      w.EndObject();
    }
    w.EndArray();
    w.Key("brokers");
    w.StartArray();
    for (const auto& b : s.brokers) {
      w.StartObject();
      put(w, "id", b.id);
      put(w, "active", b.active);
      put(w, "nw_in", b.load.v[0]);
      put(w, "nw_out", b.load.v[1]);
      put(w, "disk", b.load.v[2]);
      put(w, "partitions", b.partitions);
      w.EndObject();
    }
    w.EndArray();
    w.Key("moves");
    w.StartArray();
    for (const auto& m : s.moves) {
      w.StartObject();
      put(w, "type", m.action_type);
      put(w, "src", m.src);
      w.Key("move");
      cluster::wire::write_move(w, m.progress);
      w.EndObject();
    }
    w.EndArray();
  });
}


}  // namespace

result<std::unique_ptr<balancer_api>> balancer_api::open(cluster_view& view, cluster::balance_loop* loop,
                                                         const autobalancer::autobalance_config& config,
                                                         std::unique_ptr<storage::state_file> state,
                                                         std::function<std::string()> controller) {
  std::unique_ptr<balancer_api> api(
      new balancer_api(view, loop, config.dry_run, std::move(state), std::move(controller)));
  api->goals_ = config.goals;
  auto kept = api->state_->read();
  if (!kept) return kept.err();
  if (*kept) {
    rapidjson::Document d;
    if (!json::parse_object(**kept, d) || !d.HasMember("paused") || !d["paused"].IsBool())
      return error{errc::corrupt, api->state_->name() + ": expected {\"paused\": true|false}"};
    api->paused_ = d["paused"].GetBool();
    if (loop && api->paused_) loop->set_paused(true);
  }
  return api;
}

status balancer_api::set_paused(bool paused) {
  std::lock_guard lock(mu_);
  if (auto s = state_->replace(paused ? "{\"paused\":true}" : "{\"paused\":false}"); !s) return s;
  paused_ = paused;
  if (loop_) loop_->set_paused(paused);
  return {};
}

void balancer_api::routes(api_routes& api) {
  // ?scope=broker: this broker's own (its loop's view: standing by, superseded), not the controller's.
  auto own_only = [](const httplib::Request& req) {
    return req.has_param("scope") && req.get_param_value("scope") == "broker";
  };
  api.Get("/v1/autobalancer", [this, own_only](const httplib::Request& req, httplib::Response& res) {
    if (req.has_param("scope") && req.get_param_value("scope") != "broker" &&
        req.get_param_value("scope") != "cluster")
      return reply_error(res, 400, "invalid_argument", "scope: expected broker or cluster");
    if (own_only(req)) return reply(res, 200, own_status());
    status_route(res);
  });
  api.Get("/v1/autobalancer/snapshot",
          [this](const httplib::Request&, httplib::Response& res) { snapshot_route(res); });
  api.Post("/v1/autobalancer/pause", [this](const httplib::Request&, httplib::Response& res) { pause_route(true, res); });
  api.Post("/v1/autobalancer/resume",
           [this](const httplib::Request&, httplib::Response& res) { pause_route(false, res); });
}

std::string balancer_api::own_status() const {
  if (!loop_) {
    std::lock_guard lock(mu_);
    return json_object([&](json_writer& w) {
      put(w, "enabled", false);
      put(w, "dry_run", dry_run_);
      put(w, "paused", paused_);
    });
  }
  return autobalancer_document(loop_->status(), controller_(), goals_);
}

std::string balancer_api::remote_controller() const {
  // A broker whose claim stands answers itself, whatever it last heard of another.
  if (!loop_) return {};
  if (const auto s = loop_->status(); s.claim && !s.superseded) return {};
  const std::string c = controller_();
  return !c.empty() && c != view_.self().value() && view_.is_peer(c) ? c : std::string();
}

void balancer_api::status_route(httplib::Response& res) {
  if (const std::string c = remote_controller(); !c.empty()) {
    const auto r = view_.ask(c, transport::get_request("/cluster/admin/autobalancer"));
    if (r.status == 200) return reply(res, 200, r.body);
    // The controller did not answer: this broker's own view, which says so.
    rapidjson::Document d;
    d.Parse(own_status().c_str());
    if (d.IsObject()) {
      auto& a = d.GetAllocator();
      rapidjson::Value silent(rapidjson::kObjectType);
      silent.AddMember("id", rapidjson::Value(c.c_str(), a), a);
      silent.AddMember("message", rapidjson::Value(cluster::describe_answer(r).c_str(), a), a);
      d.AddMember("controller_silent", silent, a);
      rapidjson::StringBuffer out;
      rapidjson::Writer<rapidjson::StringBuffer> w(out);
      d.Accept(w);
      return reply(res, 200, std::string(out.GetString(), out.GetSize()));
    }
  }
  reply(res, 200, own_status());
}

void balancer_api::snapshot_route(httplib::Response& res) {
  if (const std::string c = remote_controller(); !c.empty()) {
    const auto r = view_.ask(c, transport::get_request("/cluster/admin/autobalancer/snapshot"));
    if (r.status == 0)
      return reply_peer_error(res, 503, "controller_unavailable", "the controller, " + c + ", did not answer", c, r);
    res.status = r.status;
    res.set_content(r.body, "application/json");
    return;
  }
  if (!loop_)
    return reply_error(res, 404, "not_found",
                       "the balancer is off on this broker (Server.Autobalance.Enabled): it keeps no model");
  auto doc = loop_->snapshot_document();
  if (!doc)
    return reply_error(res, 404, "not_found", "no pass has measured the cluster yet");
  reply(res, 200, *doc);
}

void balancer_api::pause_route(bool paused, httplib::Response& res) {
  transport::request tell;
  tell.path = "/cluster/admin/autobalancer";
  tell.body = paused ? "{\"paused\":true}" : "{\"paused\":false}";
  auto r = view_.apply_everywhere(set_paused(paused), tell);
  reply_fanout(res, r,
               std::string("not every broker was ") + (paused ? "paused" : "resumed") +
                   "; a broker that missed it may become controller and act on its own state: try again",
               [&](json_writer& w) { put(w, "paused", paused); });
}

transport::response balancer_api::handle_cluster(const transport::request& req) {
  if (req.method == "GET" && req.path == "/cluster/admin/autobalancer") return {200, own_status(), "application/json"};
  if (req.method == "GET" && req.path == "/cluster/admin/autobalancer/snapshot") {
    auto doc = loop_ ? loop_->snapshot_document() : std::nullopt;
    if (!doc) return transport::error_response(404, "not_found", "no pass has measured the cluster here");
    return {200, std::move(*doc), "application/json"};
  }
  if (req.method != "POST" || req.path != "/cluster/admin/autobalancer")
    return transport::error_response(404, "not_found", req.method + " " + req.path + " is not a cluster route");
  rapidjson::Document d;
  if (auto s = json::parse_document(req.body, d, "body"); !s)
    return transport::error_response(400, "invalid_argument", s.message());
  json::object_reader r(d, "");
  bool paused = false;
  r.get("paused", paused, true);
  if (auto s = r.finish(); !s) return transport::error_response(400, "invalid_argument", s.message());
  if (auto s = set_paused(paused); !s)
    return transport::error_response(transport::http_status_of(s.code()), errc_name(s.code()), s.message());
  return {200, paused ? "{\"paused\":true}" : "{\"paused\":false}", "application/json"};
}

}  // namespace moonmq::daemon
