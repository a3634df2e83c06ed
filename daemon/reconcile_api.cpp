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

/// How long one admin request appends before it answers "done": false (the caller resumes with "from").
constexpr auto append_for = std::chrono::seconds(20);

/// Where the logs of one partition are.
struct logs_of {
  std::vector<std::string> served;  ///< brokers that serve it (more than one is the fault a stray is not)
  std::vector<std::pair<std::string, std::uint64_t>> served_sizes;
  std::vector<std::pair<std::string, std::uint64_t>> strays;  ///< broker, size
};

std::string error_text(const transport::response& r) {
  rapidjson::Document d;
  if (json::parse_object(r.body, d) && d.HasMember("message") && d["message"].IsString())
    return d["message"].GetString();
  return describe_answer(r);
}

std::uint64_t uint_of(const rapidjson::Value& v, const char* key) {
  return v.HasMember(key) && v[key].IsUint64() ? v[key].GetUint64() : 0;
}

}  // namespace

void reconcile_api::routes(httplib::Server& api) {
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
                                        const topic_partition& tp, std::uint64_t from) {
  transport::request r;
  r.method = "POST";
  r.path = "/cluster/admin/strays";
  r.body = json_object([&](json::writer& w) {
    put(w, "action", action);
    put(w, "topic", tp.topic);
    put(w, "partition", tp.partition);
    put(w, "from", from);
  });
  if (broker == view_.self().value()) return handle_cluster(r);
  auto a = view_.ask(broker, r);
  if (a.status == 0) return transport::error_response(503, "unavailable", broker + " did not answer: " + a.body);
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
    return reply_error(res, 409, "conflict", "no broker serves " + name + ": a stray is reconciled only with the "
                                                 "partition's served log (move or restore it first)");
  if (!append.empty() && append == owner)
    return reply_error(res, 400, "invalid_argument", append + " serves " + name + ": append a stray's holder");

  // Keeping the served log: every stray goes. Keeping a stray: the served log is emptied first (once: a resumed
  // request starts past 0), then the stray appended in its place. Appending: the stray is appended.
  bool cleared = false;
  std::uint64_t copied = 0, already = 0, skipped = 0, next = from;
  bool done = chosen == owner;
  rapidjson::Document runs(rapidjson::kArrayType);
  if (chosen != owner) {
    if (!keep.empty() && from == 0) {
      auto c = step(owner, "clear", tp);
      if (!c.ok()) return relay(res, c);
      cleared = true;
    }
    const auto until = std::chrono::steady_clock::now() + append_for;
    while (!done && std::chrono::steady_clock::now() < until) {
      auto a = step(chosen, "append", tp, next);
      rapidjson::Document out;
      if (!a.ok() || !json::parse_object(a.body, out))
        return reply_error(res, a.status ? a.status : 503, a.ok() ? "internal" : "unavailable",
                           error_text(a) + (copied ? " (" + std::to_string(copied) +
                                                          " record(s) were appended first, at offsets logged on " +
                                                          chosen + ")"
                                                    : ""));
      copied += uint_of(out, "copied");
      already += uint_of(out, "already");
      skipped += uint_of(out, "skipped");
      next = uint_of(out, "next");
      done = out.HasMember("done") && out["done"].IsBool() && out["done"].GetBool();
      if (out.HasMember("runs") && out["runs"].IsArray())
        for (auto& run : out["runs"].GetArray()) runs.PushBack(rapidjson::Value(run, runs.GetAllocator()), runs.GetAllocator());
    }
  }
  std::vector<std::string> discarded;
  if (done)
    for (const auto& [b, size] : logs.strays) {
      auto g = step(b, "discard", tp);
      if (!g.ok())
        return reply_error(res, g.status ? g.status : 503, "unavailable",
                           "the decision for " + name + " is carried out, but the stray on " + b +
                               " could not be emptied: " + error_text(g) + "; run it again");
      discarded.push_back(b);
    }
  reply(res, 200, json_object([&](json::writer& w) {
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
        }));
}

transport::response reconcile_api::handle_cluster(const transport::request& req) {
  rapidjson::Document d;
  if (!json::parse_object(req.body, d)) return transport::error_response(400, "invalid_argument", "a JSON object");
  json::object_reader r(d, "");
  std::string action, topic;
  std::int64_t partition = -1;
  std::uint64_t from = 0;
  r.get("action", action, true);
  r.get("topic", topic, true);
  r.get("partition", partition, true);
  r.get("from", from);
  if (auto s = r.finish(); !s) return transport::error_response(400, "invalid_argument", s.message());
  if (partition < 0 || partition > INT32_MAX)
    return transport::error_response(400, "invalid_argument", "partition: out of range");
  const topic_partition tp{topic, static_cast<std::int32_t>(partition)};
  auto fail = [](const error& e) {
    return transport::error_response(transport::http_status_of(e.code), errc_name(e.code), e.message);
  };
  if (action == "discard" || action == "clear") {
    auto s = action == "discard" ? here_.discard(tp) : here_.clear(tp);
    if (!s) return fail(s.err());
    return {200, "{}", "application/json"};
  }
  if (action != "append") return transport::error_response(400, "invalid_argument", "unknown action '" + action + "'");
  auto a = here_.append(tp, from);
  if (!a) return fail(a.err());
  return {200, json_object([&](json::writer& w) {
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
          }),
          "application/json"};
}

}  // namespace moonmq::daemon
