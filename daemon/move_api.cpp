#include "move_api.hpp"

#include <rapidjson/document.h>

#include <algorithm>

#include "api_reply.hpp"
#include "cluster/wire_json.hpp"
#include "json/object_reader.hpp"

namespace moonmq::daemon {

namespace {

using json::put;
using json_writer = json::writer;


/// One broker's moves and throttle, from its GET /cluster/moves answer.
struct broker_moves {
  std::string broker;
  bool reachable = false;
  std::string error;
  std::uint64_t throttle = 0;
  std::vector<cluster::move_progress> moves;
};

std::optional<std::uint64_t> throttle_in(const std::string& body) {
  rapidjson::Document d;
  if (!json::parse_object(body, d) || !d.HasMember("throttle_bytes_per_sec") ||
      !d["throttle_bytes_per_sec"].IsUint64())
    return std::nullopt;
  return d["throttle_bytes_per_sec"].GetUint64();
}

}  // namespace

void move_api::routes(api_routes& api) {
  api.Post("/v1/reassignments", [this](const httplib::Request& req, httplib::Response& res) { start(req, res); });
  api.Get("/v1/reassignments", [this](const httplib::Request& req, httplib::Response& res) { list(req, res); });
  api.Put("/v1/reassignments/throttle",
          [this](const httplib::Request& req, httplib::Response& res) { put_throttle(req, res); });
  api.Get("/v1/reassignments/throttle", [this](const httplib::Request&, httplib::Response& res) { get_throttle(res); });
  api.Delete(R"(/v1/reassignments/(\d+))",
             [this](const httplib::Request& req, httplib::Response& res) { cancel(req, res); });
}

void move_api::start(const httplib::Request& req, httplib::Response& res) {
  auto m = cluster::wire::read_move_request(req.body);
  if (!m) return reply_error(res, m.err());
  auto started = requests_.start(m->partition, broker_id(m->dest));
  if (!started) return reply_error(res, started.refused().err);
  reply(res, 202, json_object([&](json_writer& w) {
          put(w, "id", started->id);
          put(w, "source", started->source.value());
          put(w, "topic", m->partition.topic);
          put(w, "partition", m->partition.partition);
          put(w, "dest", m->dest);
          put(w, "status", "started");
        }));
}

void move_api::list(const httplib::Request& req, httplib::Response& res) {
  const bool active_only = req.get_param_value("active") == "true";
  std::vector<broker_moves> all;
  all.push_back({view_.self().value(), true, "", reassigner_.throttle(), reassigner_.progress()});
  for (auto& a : view_.ask_peers(transport::get_request("/cluster/moves"))) {
    broker_moves b;
    b.broker = a.broker;
    auto moves = a.response.ok() ? cluster::wire::read_moves(a.response.body) : std::nullopt;
    if (moves) {
      b.reachable = true;
      b.moves = std::move(*moves);
      b.throttle = throttle_in(a.response.body).value_or(0);
      for (auto& m : b.moves)
        if (m.source.empty()) m.source = b.broker;
    } else {
      b.error = describe_answer(a.response);
    }
    all.push_back(std::move(b));
  }
  std::vector<cluster::move_progress> merged;
  for (auto& b : all)
    for (auto& m : b.moves)
      if (!active_only || !m.finished) merged.push_back(std::move(m));
  std::stable_sort(merged.begin(), merged.end(),
                   [](const auto& a, const auto& b) { return a.started_at < b.started_at; });
  reply(res, 200, json_object([&](json_writer& w) {
          w.Key("reassignments");
          w.StartArray();
          for (const auto& m : merged) cluster::wire::write_move(w, m);
          w.EndArray();
          w.Key("throttle");
          w.StartObject();
          for (const auto& b : all)
            if (b.reachable) put(w, b.broker.c_str(), b.throttle);
          w.EndObject();
          w.Key("unreachable");
          w.StartArray();
          for (const auto& b : all)
            if (!b.reachable) {
              w.StartObject();
              put(w, "broker", b.broker);
              put(w, "error", b.error);
              w.EndObject();
            }
          w.EndArray();
        }));
}

void move_api::cancel(const httplib::Request& req, httplib::Response& res) {
  auto id = whole_number(req.matches[1], UINT64_MAX);
  if (!id) return reply_error(res, 400, "invalid_argument", "a move id is a whole number");
  std::string source = req.get_param_value("source");
  const std::string self = view_.self().value();
  if (!source.empty() && source != self && !view_.is_peer(source))
    return reply_error(res, 404, "not_found", "unknown broker '" + source + "'");
  if (source.empty()) {
    // Ids are unique per broker only: find the one broker that has this move, and refuse to guess between two.
    std::vector<std::string> holders, silent;
    for (const auto& m : reassigner_.progress())
      if (m.id == *id) holders.push_back(self);
    for (const auto& a : view_.ask_peers(transport::get_request("/cluster/moves"))) {
      auto moves = a.response.ok() ? cluster::wire::read_moves(a.response.body) : std::nullopt;
      if (!moves) {
        silent.push_back(a.broker);
        continue;
      }
      for (const auto& m : *moves)
        if (m.id == *id) {
          holders.push_back(a.broker);
          break;
        }
    }
    if (holders.size() > 1)
      return reply_error(res, 409, "conflict",
                         "move id " + std::to_string(*id) + " exists on " + holders[0] + " and " + holders[1] +
                             ": say which with ?source=BROKER");
    if (holders.empty()) {
      std::string message = "no move " + std::to_string(*id) + " on any broker";
      if (silent.empty()) return reply_error(res, 404, "not_found", message);
      message += " that answered (no answer from";
      for (const auto& b : silent) message += " " + b;
      return reply_error(res, 503, "unavailable", message + ")");
    }
    source = holders[0];
  }
  auto accepted = [&](const std::string& where) {
    reply(res, 202, json_object([&](json_writer& w) {
            put(w, "id", *id);
            put(w, "source", where);
            put(w, "status", "cancelling");
          }));
  };
  if (source == self) {
    if (auto s = reassigner_.cancel(*id); !s) return reply_error(res, s.err());
    return accepted(self);
  }
  transport::request ask;
  ask.path = "/cluster/moves/cancel";
  ask.params["id"] = std::to_string(*id);
  auto r = view_.ask(source, ask);
  if (r.ok()) return accepted(source);
  if (r.status == 0) return reply_peer_error(res, 503, "unavailable", source + " did not answer", source, r);
  relay(res, r);
}

void move_api::put_throttle(const httplib::Request& req, httplib::Response& res) {
  rapidjson::Document d;
  if (!parse_body(req, res, d)) return;
  json::object_reader r(d, "");
  std::uint64_t rate = 0;
  r.get("bytes_per_sec", rate, true);
  if (auto s = r.finish(); !s) return reply_error(res, s.err());
  transport::request tell;
  tell.path = "/cluster/throttle";
  tell.body = json_object([&](json_writer& w) { put(w, "bytes_per_sec", rate); });
  // Partly applied is an error the operator must see: the brokers that missed it copy at their old rate.
  auto done = view_.apply_everywhere(set_throttle_(rate), tell);
  reply_fanout(res, done, "the throttle was not applied on every broker; PUT it again",
               [&](json_writer& w) { put(w, "bytes_per_sec", rate); });
}

void move_api::get_throttle(httplib::Response& res) {
  auto answers = view_.ask_peers(transport::get_request("/cluster/moves"));
  reply(res, 200, json_object([&](json_writer& w) {
          w.Key("brokers");
          w.StartArray();
          w.StartObject();
          put(w, "broker", view_.self().value());
          put(w, "bytes_per_sec", reassigner_.throttle());
          w.EndObject();
          for (const auto& a : answers) {
            w.StartObject();
            put(w, "broker", a.broker);
            auto t = a.response.ok() ? throttle_in(a.response.body) : std::nullopt;
            if (t)
              put(w, "bytes_per_sec", *t);
            else
              put(w, "error", describe_answer(a.response));
            w.EndObject();
          }
          w.EndArray();
        }));
}

}  // namespace moonmq::daemon
