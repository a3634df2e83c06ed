#include "reconcile_api.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "api_reply.hpp"
#include "json/object_reader.hpp"

namespace moonmq::daemon {

namespace {
using json::put;

/// How long one admin request appends before it answers "done": false (the caller resumes with "from"): well within
/// moonmqctl's default 10 s timeout.
constexpr auto append_for = std::chrono::seconds(4);

/// Where the logs of one partition are.
struct logs_of {
  std::vector<std::string> served;  ///< brokers that serve it (more than one is the fault a stray is not)
  std::vector<std::pair<std::string, std::uint64_t>> served_sizes;
  std::vector<std::pair<std::string, std::uint64_t>> strays;  ///< broker, size
};

std::uint64_t uint_of(const rapidjson::Value& v, const char* key) {
  return v.HasMember(key) && v[key].IsUint64() ? v[key].GetUint64() : 0;
}

}  // namespace

void reconcile_api::routes(api_routes& api) {
  api.Get(R"(/v1/topics/([^/]+)/reconcile)",
          [this](const httplib::Request& req, httplib::Response& res) { show(req.matches[1], res); });
  api.Post(R"(/v1/topics/([^/]+)/partitions/([^/]+)/reconcile)",
           [this](const httplib::Request& req, httplib::Response& res) {
             auto p = whole_number(req.matches[2], static_cast<std::uint64_t>(INT32_MAX));
             if (!p) return reply_error(res, 400, "invalid_argument", "the partition must be a whole number");
             decide(req.matches[1], static_cast<std::int32_t>(*p), req, res);
           });
}

void reconcile_api::show(const std::string& topic, httplib::Response& res) {
  std::map<std::int32_t, logs_of> parts;
  std::vector<std::pair<std::string, std::string>> unreachable;
  for (const auto& b : view_.brokers()) {
    if (!b.reachable) {
      unreachable.emplace_back(b.id, b.error);
      continue;
    }
    for (const auto& p : b.partitions)
      if (p.partition.topic == topic) {
        parts[p.partition.partition].served.push_back(b.id);
        parts[p.partition.partition].served_sizes.emplace_back(b.id, p.size_bytes);
      }
    for (const auto& s : b.strays)
      if (s.partition.topic == topic) parts[s.partition.partition].strays.emplace_back(b.id, s.size_bytes);
  }
  if (parts.empty() && unreachable.empty())
    return reply_error(res, 404, "not_found", "no broker holds a log of topic '" + topic + "'");
  reply(res, 200, json_object([&](json::writer& w) {
          put(w, "topic", topic);
          w.Key("partitions");
          w.StartArray();
          for (const auto& [p, l] : parts) {
            if (l.strays.empty() && l.served.size() < 2) continue;  // one log: nothing to reconcile
            w.StartObject();
            put(w, "partition", p);
            w.Key("served");
            w.StartArray();
            for (const auto& [b, size] : l.served_sizes) {
              w.StartObject();
              put(w, "broker", b);
              put(w, "size_bytes", size);
              w.EndObject();
            }
            w.EndArray();
            w.Key("strays");
            w.StartArray();
            for (const auto& [b, size] : l.strays) {
              w.StartObject();
              put(w, "broker", b);
              put(w, "size_bytes", size);
              w.EndObject();
            }
            w.EndArray();
            w.EndObject();
          }
          w.EndArray();
          w.Key("unreachable");
          w.StartArray();
          for (const auto& [b, why] : unreachable) {
            w.StartObject();
            put(w, "broker", b);
            put(w, "error", why);
            w.EndObject();
          }
          w.EndArray();
        }));
}

transport::response reconcile_api::step(const std::string& broker, const std::string& action,
                                        const topic_partition& tp, const std::function<void(json::writer&)>& more) {
  transport::request r;
  r.method = "POST";
  r.path = "/cluster/admin/strays";
  r.body = json_object([&](json::writer& w) {
    put(w, "action", action);
    put(w, "topic", tp.topic);
    put(w, "partition", tp.partition);
    if (more) more(w);
  });
  if (broker == view_.self().value()) return handle_cluster(r);
  auto a = view_.ask(broker, r);
  if (a.status == 0)
    return transport::error_response(503, "unavailable",
                                     broker + " did not answer: " + cluster::read_peer_error(a).message);
  return a;
}

void reconcile_api::decide(const std::string& topic, std::int32_t partition, const httplib::Request& req,
                           httplib::Response& res) {
  const topic_partition tp{topic, partition};
  const std::string name = name_of(tp);
  rapidjson::Document d;
  if (!parse_body(req, res, d)) return;
  json::object_reader r(d, "");
  std::string keep, append;
  std::uint64_t from = 0;
  r.get("keep", keep);
  r.get("append", append);
  r.get("from", from);
  if (auto s = r.finish(); !s) return reply_error(res, s.err());
  if (keep.empty() == append.empty())
    return reply_error(res, 400, "invalid_argument", "name one decision: {\"keep\": broker} or {\"append\": broker}");

  // Where the partition's logs are; a broker that does not answer might hold one, and nothing is decided without it.
  logs_of logs;
  for (const auto& b : view_.brokers()) {
    if (!b.reachable)
      return reply_error(res, 503, "unavailable",
                         b.id + " did not answer (" + b.error + "): it may hold a log of " + name + "; nothing changed");
    for (const auto& p : b.partitions)
      if (p.partition == tp) logs.served.push_back(b.id);
    for (const auto& s : b.strays)
      if (s.partition == tp) logs.strays.emplace_back(b.id, s.size_bytes);
  }
  auto holds_stray = [&](const std::string& b) {
    return std::any_of(logs.strays.begin(), logs.strays.end(), [&](const auto& s) { return s.first == b; });
  };
  if (logs.strays.empty())
    return reply_error(res, 404, "not_found", "no broker holds a stray of " + name + ": nothing to reconcile");
  if (logs.served.size() > 1)
    return reply_error(res, 409, "conflict", name + " is served by more than one broker; no stray is reconciled with it");
  const std::string owner = logs.served.empty() ? "" : logs.served.front();
  const std::string chosen = keep.empty() ? append : keep;
  if (chosen != owner && !holds_stray(chosen))
    return reply_error(res, 400, "invalid_argument", chosen + " holds no log of " + name);
  if (owner.empty())
    return reply_error(res, 409, "conflict",
                       "no broker serves " + name + ": a stray is reconciled only with the partition's served log "
                                                    "(docs/cluster.md, \"Reconciling a stray\")");
  if (!append.empty() && append == owner)
    return reply_error(res, 400, "invalid_argument", append + " serves " + name + ": append a stray's holder");
  if (chosen == owner && from > 0)
    return reply_error(res, 400, "invalid_argument", "\"from\" resumes an append; keeping the served log has none");

  // What was done so far rides every answer, errors included, so that the operator knows where things stand.
  bool cleared = false;
  std::uint64_t copied = 0, already = 0, skipped = 0, next = from;
  bool done = chosen == owner;
  rapidjson::Document runs(rapidjson::kArrayType);
  std::vector<std::string> discarded;
  auto progress = [&](json::writer& w) {
    put(w, "topic", topic);
    put(w, "partition", partition);
    put(w, "owner", owner);
    put(w, keep.empty() ? "append" : "keep", chosen);
    put(w, "cleared", cleared);
    put(w, "copied", copied);
    put(w, "already", already);
    put(w, "skipped", skipped);
    w.Key("runs");
    runs.Accept(w);
    put(w, "done", done);
    put(w, "next", next);
    w.Key("discarded");
    w.StartArray();
    for (const auto& b : discarded) w.String(b.c_str());
    w.EndArray();
  };
  auto fail = [&](const transport::response& a, const std::string& doing) {
    rapidjson::Document e;
    std::string code = a.status == 0 ? "unavailable" : "internal", message = describe_answer(a);
    if (json::parse_object(a.body, e)) {
      if (e.HasMember("error") && e["error"].IsString()) code = e["error"].GetString();
      if (e.HasMember("message") && e["message"].IsString()) message = e["message"].GetString();
    }
    reply(res, a.status >= 400 ? a.status : 500, json_object([&](json::writer& w) {
            put(w, "error", code);
            put(w, "message", doing + ": " + message);
            progress(w);
          }));
  };

  if (chosen != owner) {
    auto checked = step(chosen, "check", tp);
    rapidjson::Document info;
    if (!checked.ok() || !json::parse_object(checked.body, info)) return fail(checked, "checking the stray on " + chosen);
    const std::uint64_t producer = uint_of(info, "producer_id");
    if (!keep.empty()) {
      // Emptied once: a request run again finds the log starting with the stray's copies and leaves it.
      auto c = step(owner, "clear", tp, [&](json::writer& w) {
        put(w, "producer_id", producer);
        put(w, "resumed", from > 0);
      });
      rapidjson::Document out;
      if (!c.ok() || !json::parse_object(c.body, out)) return fail(c, "emptying the served log on " + owner);
      cleared = out.HasMember("cleared") && out["cleared"].IsBool() && out["cleared"].GetBool();
    }
    const auto until = std::chrono::steady_clock::now() + append_for;
    while (!done && std::chrono::steady_clock::now() < until) {
      auto a = step(chosen, "append", tp, [&](json::writer& w) { put(w, "from", next); });
      rapidjson::Document out;
      if (!a.ok() || !json::parse_object(a.body, out)) return fail(a, "appending the stray on " + chosen);
      copied += uint_of(out, "copied");
      already += uint_of(out, "already");
      skipped += uint_of(out, "skipped");
      const std::uint64_t was = next;
      next = uint_of(out, "next");
      done = out.HasMember("done") && out["done"].IsBool() && out["done"].GetBool();
      if (out.HasMember("runs") && out["runs"].IsArray())
        for (auto& run : out["runs"].GetArray())
          runs.PushBack(rapidjson::Value(run, runs.GetAllocator()), runs.GetAllocator());
      if (!done && next <= was)
        return fail(transport::error_response(500, "internal", "no progress past offset " + std::to_string(next)),
                    "appending the stray on " + chosen);
    }
  }
  // Keeping a log: every stray goes (the one kept was appended first). Appending: only the stray appended.
  if (done)
    for (const auto& [b, size] : logs.strays) {
      if (!keep.empty() || b == chosen) {
        const bool appended = b == chosen;
        auto g = step(b, "discard", tp, [&](json::writer& w) { put(w, "appended", appended); });
        if (!g.ok()) return fail(g, "emptying the stray on " + b + " (the rest is done; run it again)");
        discarded.push_back(b);
      }
    }
  reply(res, 200, json_object(progress));
}

transport::response reconcile_api::handle_cluster(const transport::request& req) {
  rapidjson::Document d;
  if (!json::parse_object(req.body, d)) return transport::error_response(400, "invalid_argument", "a JSON object");
  json::object_reader r(d, "");
  std::string action, topic;
  std::int64_t partition = -1;
  std::uint64_t from = 0, producer = 0;
  bool resumed = false, appended = false;
  r.get("action", action, true);
  r.get("topic", topic, true);
  r.get("partition", partition, true);
  r.get("from", from);
  r.get("producer_id", producer);
  r.get("resumed", resumed);
  r.get("appended", appended);
  if (auto s = r.finish(); !s) return transport::error_response(400, "invalid_argument", s.message());
  if (partition < 0 || partition > INT32_MAX)
    return transport::error_response(400, "invalid_argument", "partition: out of range");
  const topic_partition tp{topic, static_cast<std::int32_t>(partition)};
  auto fail = [](const error& e) {
    return transport::error_response(transport::http_status_of(e.code), errc_name(e.code), e.message);
  };
  auto ok = [](const std::string& body) { return transport::response{200, body, "application/json"}; };
  if (action == "discard") {
    if (auto s = here_.discard(tp, appended); !s) return fail(s.err());
    return ok("{}");
  }
  if (action == "clear") {
    auto c = here_.clear(tp, producer, resumed);
    if (!c) return fail(c.err());
    return ok(json_object([&](json::writer& w) { put(w, "cleared", *c); }));
  }
  if (action == "check") {
    auto c = here_.check(tp);
    if (!c) return fail(c.err());
    return ok(json_object([&](json::writer& w) {
      put(w, "owner", c->owner.value());
      put(w, "producer_id", c->producer_id);
      put(w, "size_bytes", c->size_bytes);
    }));
  }
  if (action != "append") return transport::error_response(400, "invalid_argument", "unknown action '" + action + "'");
  auto a = here_.append(tp, from);
  if (!a) return fail(a.err());
  return ok(json_object([&](json::writer& w) {
    put(w, "owner", a->owner.value());
    put(w, "next", a->next);
    put(w, "done", a->done);
    put(w, "copied", a->copied);
    put(w, "already", a->already);
    put(w, "skipped", a->skipped);
    w.Key("runs");
    w.StartArray();
    for (const auto& run : a->runs) {
      w.StartObject();
      put(w, "stray_first", run.stray_first);
      put(w, "stray_last", run.stray_last);
      put(w, "first", run.first);
      put(w, "last", run.last);
      w.EndObject();
    }
    w.EndArray();
  }));
}

}  // namespace moonmq::daemon
