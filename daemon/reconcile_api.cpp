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

transport::response reconcile_api::step(const std::string& broker, const cluster::wire::stray_step& s) {
  transport::request r;
  r.method = "POST";
  r.path = "/cluster/admin/strays";
  r.body = cluster::wire::write(s);
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
  std::vector<cluster::appended_run> runs;
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
    cluster::wire::write_runs(w, runs);
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

  // A refusal as it came; an answer that is not the document the step answers, as what is wrong with it.
  auto fault = [](const transport::response& a, const error& e) {
    return a.ok() ? transport::error_response(500, "internal", e.message) : a;
  };
  if (chosen != owner) {
    using step_kind = cluster::wire::stray_step::kind;
    auto checked = step(chosen, {step_kind::check, tp});
    auto info = cluster::wire::read_stray_info(checked);
    if (!info) return fail(fault(checked, info.err()), "checking the stray on " + chosen);
    const std::uint64_t producer = info->producer_id;
    if (!keep.empty()) {
      // Emptied once: a request run again finds the log starting with the stray's copies and leaves it.
      cluster::wire::stray_step clear{step_kind::clear, tp};
      clear.producer_id = producer;
      clear.resumed = from > 0;
      auto c = step(owner, clear);
      auto was_cleared = cluster::wire::read_cleared(c);
      if (!was_cleared) return fail(fault(c, was_cleared.err()), "emptying the served log on " + owner);
      cleared = *was_cleared;
    }
    const auto until = std::chrono::steady_clock::now() + append_for;
    while (!done && std::chrono::steady_clock::now() < until) {
      cluster::wire::stray_step append{step_kind::append, tp};
      append.from = next;
      auto a = step(chosen, append);
      auto stepped = cluster::wire::read_append_step(a);
      if (!stepped) return fail(fault(a, stepped.err()), "appending the stray on " + chosen);
      copied += stepped->copied;
      already += stepped->already;
      skipped += stepped->skipped;
      const std::uint64_t was = next;
      next = stepped->next;
      done = stepped->done;
      runs.insert(runs.end(), stepped->runs.begin(), stepped->runs.end());
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
        cluster::wire::stray_step discard{cluster::wire::stray_step::kind::discard, tp};
        discard.appended = appended;
        auto g = step(b, discard);
        if (!g.ok()) return fail(g, "emptying the stray on " + b + " (the rest is done; run it again)");
        discarded.push_back(b);
      }
    }
  reply(res, 200, json_object(progress));
}

transport::response reconcile_api::handle_cluster(const transport::request& req) {
  auto s = cluster::wire::read_stray_step(req.body);
  if (!s) return transport::error_response(400, "invalid_argument", s.message());
  const topic_partition& tp = s->partition;
  auto fail = [](const error& e) {
    return transport::error_response(transport::http_status_of(e.code), errc_name(e.code), e.message);
  };
  auto ok = [](std::string body) { return transport::response{200, std::move(body), "application/json"}; };
  using kind = cluster::wire::stray_step::kind;
  switch (s->action) {
    case kind::discard:
      if (auto d = here_.discard(tp, s->appended); !d) return fail(d.err());
      return ok("{}");
    case kind::clear: {
      auto c = here_.clear(tp, s->producer_id, s->resumed);
      if (!c) return fail(c.err());
      return ok(cluster::wire::write_cleared(*c));
    }
    case kind::check: {
      auto c = here_.check(tp);
      if (!c) return fail(c.err());
      return ok(cluster::wire::write(*c));
    }
    case kind::append: {
      auto a = here_.append(tp, s->from);
      if (!a) return fail(a.err());
      return ok(cluster::wire::write(*a));
    }
  }
  return transport::error_response(400, "invalid_argument", "unknown action");
}

}  // namespace moonmq::daemon
