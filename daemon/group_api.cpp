#include "group_api.hpp"

#include <chrono>

#include "api_reply.hpp"
#include "json/object_reader.hpp"
#include "moonmq/core/topic_name.hpp"
#include "moonmq/core/utf8.hpp"

namespace moonmq::daemon {

namespace {

using transport::error_response;
using transport::request;
using transport::response;

constexpr std::string_view cluster_prefix = "/cluster/group/";
constexpr std::size_t max_topics = 100;         ///< topics one member subscribes to
constexpr std::size_t max_partitions = 10000;  ///< partitions one heartbeat reports

groups::time_ms now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void write_partitions(json::writer& w, const char* key, const std::vector<topic_partition>& list) {
  w.Key(key);
  w.StartArray();
  for (const auto& tp : list) {
    w.StartObject();
    json::put(w, "topic", tp.topic);
    json::put(w, "partition", tp.partition);
    w.EndObject();
  }
  w.EndArray();
}

response json_ok(std::string body) { return {200, std::move(body), "application/json"}; }

std::string answer_json(const groups::member_answer& a) {
  return json::object([&](json::writer& w) {
    json::put(w, "member_id", a.member_id);
    json::put(w, "member_epoch", a.member_epoch);
    write_partitions(w, "assignment", a.assignment);
    json::put(w, "heartbeat_interval_ms", a.heartbeat_interval_ms);
  });
}

/// An array of {"topic","partition"} at `key` of `r` (absent: empty).
result<std::vector<topic_partition>> read_partitions(json::object_reader& r, const char* key) {
  std::vector<topic_partition> out;
  const auto* list = r.member(key);
  if (!list) return out;
  if (!list->IsArray()) return error{errc::invalid_argument, std::string(key) + ": expected an array"};
  if (list->Size() > max_partitions)
    return error{errc::invalid_argument, std::string(key) + ": at most " + std::to_string(max_partitions) + " partitions"};
  for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
    json::object_reader p((*list)[i], std::string(key) + "[" + std::to_string(i) + "]");
    std::string topic;
    std::int64_t partition = -1;
    p.get("topic", topic, true);
    p.get("partition", partition, true);
    if (p.ok() && (partition < 0 || partition > INT32_MAX)) p.fail("partition", "out of range");
    if (p.ok())
      if (auto v = validate_topic_name(topic); !v) p.fail("topic", v.message());
    if (auto s = p.finish(); !s) return s.err();
    out.push_back({topic, static_cast<std::int32_t>(partition)});
  }
  return out;
}

response refused(const error& e, const char* conflict_code) {
  const int status = e.code == errc::not_found ? 404 : e.code == errc::conflict ? 409 : transport::http_status_of(e.code);
  const std::string code = e.code == errc::not_found ? "unknown_member"
                           : e.code == errc::conflict ? conflict_code
                                                      : errc_name(e.code);
  return error_response(status, code, e.message);
}

/// Relays a response from the coordinator's routes to a client.
void relay(httplib::Response& res, const response& r) {
  res.status = r.status;
  res.set_content(r.body, r.content_type.empty() ? "application/json" : r.content_type);
}

bool valid_group(const std::string& g, httplib::Response& res) {
  if (valid_client_name(g)) return true;
  reply_error(res, 400, "invalid_argument", "the group id must be 1 to 255 bytes of UTF-8 without control characters");
  return false;
}

}  // namespace

response group_api::on_coordinator(const std::string& group_id, const std::string& route, const std::string& body) {
  request r;
  r.path = std::string(cluster_prefix) + route;
  if (route == "describe") {
    r.method = "GET";
    r.params = {{"group", group_id}};
  } else {
    r.body = body;
  }
  const broker_id coordinator = coordinator_of(group_id);
  if (coordinator == peers_.directory().self) return handle_cluster(r);
  auto answer = peers_.call_now(coordinator.value(), std::move(r));
  if (!answer || answer->status == 0)
    return error_response(503, "coordinator_unavailable",
                          "the coordinator of group " + group_id + ", " + coordinator.value() + ", did not answer" +
                              (answer ? ": " + answer->body : std::string()));
  return *answer;
}

response group_api::handle_cluster(const request& req) {
  const std::string route = req.path.substr(std::min(req.path.size(), cluster_prefix.size()));
  if (route == "describe" && req.method == "GET") {
    auto g = req.params.find("group");
    if (g == req.params.end()) return error_response(400, "invalid_argument", "query parameter 'group' is required");
    if (const broker_id c = coordinator_of(g->second); c != peers_.directory().self)
      return {421, json::object([&](json::writer& w) {
                json::put(w, "error", "not_coordinator");
                json::put(w, "coordinator", c.value());
              }),
              "application/json"};
    auto d = service_.describe(g->second);
    if (!d) return error_response(404, "not_found", "no group " + g->second + " on its coordinator " +
                                                       peers_.directory().self.value());
    return json_ok(json::object([&](json::writer& w) {
      json::put(w, "group", d->id);
      json::put(w, "coordinator", d->coordinator.value());
      json::put(w, "epoch", d->epoch);
      w.Key("members");
      w.StartArray();
      for (const auto& m : d->members) {
        w.StartObject();
        json::put(w, "member_id", m.id);
        json::put(w, "member_epoch", m.epoch);
        json::put(w, "broker", m.broker.value());
        std::vector<topic_partition> held;
        for (const auto& [tp, since] : m.handed) held.push_back(tp);
        write_partitions(w, "assignment", held);
        w.EndObject();
      }
      w.EndArray();
      w.Key("unassigned");
      w.StartArray();
      for (const auto& u : d->unassigned_partitions) {
        w.StartObject();
        json::put(w, "topic", u.partition.topic);
        json::put(w, "partition", u.partition.partition);
        json::put(w, "owner", u.owner.value());
        json::put(w, "reason", u.reason);
        w.EndObject();
      }
      w.EndArray();
    }));
  }
  if (req.method != "POST") return error_response(405, "method_not_allowed", req.path + " takes POST");
  rapidjson::Document d;
  if (auto s = json::parse_document(req.body, d, "body"); !s) return error_response(400, "invalid_argument", s.message());
  json::object_reader r(d, "");
  std::string group_id, member_id;
  r.get("group", group_id, true);
  r.get("member_id", member_id, route == "heartbeat" || route == "leave");
  if (r.ok() && !valid_client_name(group_id)) r.fail("group", "must be 1 to 255 bytes of UTF-8, no control characters");
  if (r.ok() && !member_id.empty() && !valid_client_name(member_id, 64)) r.fail("member_id", "is not a member id");
  if (!r.ok()) return error_response(400, "invalid_argument", r.first_error().message());
  const broker_id coordinator = coordinator_of(group_id);
  if (coordinator != peers_.directory().self && route != "clear")
    return {421, json::object([&](json::writer& w) {
              json::put(w, "error", "not_coordinator");
              json::put(w, "coordinator", coordinator.value());
            }),
            "application/json"};
  if (route == "join") {
    std::string broker;
    std::vector<std::string> topics;
    r.get("broker", broker, true);
    r.get("topics", topics, true);
    if (r.ok() && std::find(brokers_.begin(), brokers_.end(), broker_id(broker)) == brokers_.end())
      r.fail("broker", "'" + broker + "' is not a broker of this cluster");
    if (auto from = req.headers.find(transport::header_from);
        r.ok() && from != req.headers.end() && from->second != broker)
      r.fail("broker", "a join forwarded by " + from->second + " names " + broker + " as the member's broker");
    if (r.ok() && (topics.empty() || topics.size() > max_topics))
      r.fail("topics", "a member subscribes to 1 to " + std::to_string(max_topics) + " topics");
    for (const auto& t : topics)
      if (r.ok())
        if (auto v = validate_topic_name(t); !v) r.fail("topics", v.message());
    if (auto s = r.finish(); !s) return error_response(400, "invalid_argument", s.message());
    auto a = service_.join(group_id, member_id, broker_id(broker), {topics.begin(), topics.end()}, now_ms());
    if (!a) return refused(a.err(), "fenced_member");
    return json_ok(answer_json(*a));
  }
  if (route == "heartbeat") {
    std::uint64_t epoch = 0;
    r.get("member_epoch", epoch, true);
    auto owned = read_partitions(r, "owned");
    if (!owned) return error_response(400, "invalid_argument", owned.message());
    if (auto s = r.finish(); !s) return error_response(400, "invalid_argument", s.message());
    auto a = service_.heartbeat(group_id, member_id, epoch, *owned, now_ms());
    if (!a) return refused(a.err(), "fenced_member");
    return json_ok(answer_json(*a));
  }
  if (route == "leave") {
    if (auto s = r.finish(); !s) return error_response(400, "invalid_argument", s.message());
    if (auto s = service_.leave(group_id, member_id); !s) return refused(s.err(), "fenced_member");
    return json_ok("{}");
  }
  if (route == "clear") {
    // On the partition's owner: every commit of it that passed its check before now has been written.
    std::string topic;
    std::int64_t partition = -1;
    r.get("topic", topic, true);
    r.get("partition", partition, true);
    if (r.ok() && (partition < 0 || partition > INT32_MAX)) r.fail("partition", "out of range");
    if (auto s = r.finish(); !s) return error_response(400, "invalid_argument", s.message());
    std::lock_guard passed(commit_gate(group_id, {topic, static_cast<std::int32_t>(partition)}));
    return json_ok("{}");
  }
  if (route == "check") {
    std::uint64_t epoch = 0;
    std::string topic;
    std::int64_t partition = -1;
    r.get("member_epoch", epoch);
    r.get("topic", topic, true);
    r.get("partition", partition, true);
    if (r.ok() && (partition < 0 || partition > INT32_MAX)) r.fail("partition", "out of range");
    if (auto s = r.finish(); !s) return error_response(400, "invalid_argument", s.message());
    if (auto s = service_.check_commit(group_id, member_id, epoch, {topic, static_cast<std::int32_t>(partition)}); !s)
      return refused(s.err(), "stale_member_epoch");
    return json_ok("{}");
  }
  return error_response(404, "not_found", req.path + " is not a group route");
}

status group_api::check_commit(const std::string& group_id, const std::string& member_id, std::uint64_t member_epoch,
                               const topic_partition& tp) {
  const std::string body = json::object([&](json::writer& w) {
    json::put(w, "group", group_id);
    json::put(w, "member_id", member_id);
    json::put(w, "member_epoch", member_epoch);
    json::put(w, "topic", tp.topic);
    json::put(w, "partition", tp.partition);
  });
  auto r = on_coordinator(group_id, "check", body);
  if (r.status == 200) return {};
  rapidjson::Document d;
  std::string why = r.body;
  if (json::parse_object(r.body, d) && d.HasMember("message") && d["message"].IsString()) why = d["message"].GetString();
  const errc code = r.status == 409   ? errc::conflict
                    : r.status == 400 ? errc::invalid_argument
                    : r.status == 0 || r.status == 503 ? errc::unavailable
                                                       : errc::internal;
  return {code, why};
}

std::mutex& group_api::commit_gate(const std::string& group_id, const topic_partition& tp) {
  std::lock_guard lock(gates_mu_);
  auto& g = commit_gates_[{group_id, tp}];
  if (!g) g = std::make_unique<std::mutex>();
  return *g;
}

status group_api::fenced_commit(const std::string& group_id, const std::string& member_id, std::uint64_t member_epoch,
                                const topic_partition& tp, const std::function<status()>& write) {
  std::lock_guard gate(commit_gate(group_id, tp));
  if (auto s = check_commit(group_id, member_id, member_epoch, tp); !s) return s;
  return write();
}

void group_api::clear_pending() {
  for (const auto& [group_id, p] : service_.pending_clearances()) {
    const std::string body = json::object([&](json::writer& w) {
      json::put(w, "group", group_id);
      json::put(w, "topic", p.partition.topic);
      json::put(w, "partition", p.partition.partition);
    });
    request r;
    r.path = std::string(cluster_prefix) + "clear";
    r.body = body;
    response answer;
    if (p.owner == peers_.directory().self) {
      answer = handle_cluster(r);
    } else {
      // An owner that did not answer is asked again only after a while: one dead owner must not hold up the rounds
      // (and so the expiry of silent members) by a peer timeout each.
      const auto now = std::chrono::steady_clock::now();
      if (auto wait = clear_retry_at_.find(p.owner); wait != clear_retry_at_.end() && now < wait->second) continue;
      auto a = peers_.call_now(p.owner.value(), std::move(r));
      if (!a || a->status == 0) {
        clear_retry_at_[p.owner] = now + std::chrono::seconds(5);
        continue;
      }
      clear_retry_at_.erase(p.owner);
      answer = std::move(*a);
    }
    if (answer.status == 200) service_.clearance_done(group_id, p.partition);
  }
}

void group_api::routes(httplib::Server& api) {
  // Every client call: a valid group id from the path and a JSON body, from which `body_of` makes the coordinator's
  // request body (or an error for the client); the coordinator's answer is relayed.
  auto client_call = [this](const httplib::Request& req, httplib::Response& res, const char* route, auto&& body_of) {
    const std::string group_id = req.matches[1];
    if (!valid_group(group_id, res)) return;
    rapidjson::Document d;
    if (!parse_body(req, res, d)) return;
    json::object_reader r(d, "");
    result<std::string> body = body_of(group_id, r);
    if (!body) return reply_error(res, body.err());
    relay(res, on_coordinator(group_id, route, *body));
  };
  api.Post(R"(/v1/groups/([^/]+)/join)", [this, client_call](const httplib::Request& req, httplib::Response& res) {
    client_call(req, res, "join", [this](const std::string& group_id, json::object_reader& r) -> result<std::string> {
      std::vector<std::string> topics;
      std::string member_id;
      r.get("topics", topics, true);
      r.get("member_id", member_id);
      if (auto s = r.finish(); !s) return s.err();
      return json::object([&](json::writer& w) {
        json::put(w, "group", group_id);
        json::put(w, "member_id", member_id);
        json::put(w, "broker", peers_.directory().self.value());
        w.Key("topics");
        w.StartArray();
        for (const auto& t : topics) w.String(t.c_str(), static_cast<rapidjson::SizeType>(t.size()));
        w.EndArray();
      });
    });
  });
  api.Post(R"(/v1/groups/([^/]+)/heartbeat)", [client_call](const httplib::Request& req, httplib::Response& res) {
    client_call(req, res, "heartbeat", [](const std::string& group_id, json::object_reader& r) -> result<std::string> {
      std::string member_id;
      std::uint64_t epoch = 0;
      r.get("member_id", member_id, true);
      r.get("member_epoch", epoch, true);
      auto owned = read_partitions(r, "owned");
      if (!owned) return owned.err();
      if (auto s = r.finish(); !s) return s.err();
      return json::object([&](json::writer& w) {
        json::put(w, "group", group_id);
        json::put(w, "member_id", member_id);
        json::put(w, "member_epoch", epoch);
        write_partitions(w, "owned", *owned);
      });
    });
  });
  api.Post(R"(/v1/groups/([^/]+)/leave)", [client_call](const httplib::Request& req, httplib::Response& res) {
    client_call(req, res, "leave", [](const std::string& group_id, json::object_reader& r) -> result<std::string> {
      std::string member_id;
      r.get("member_id", member_id, true);
      if (auto s = r.finish(); !s) return s.err();
      return json::object([&](json::writer& w) {
        json::put(w, "group", group_id);
        json::put(w, "member_id", member_id);
      });
    });
  });
  api.Get(R"(/v1/groups/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string group_id = req.matches[1];
    if (!valid_group(group_id, res)) return;
    relay(res, on_coordinator(group_id, "describe", ""));
  });
  api.Get("/v1/groups", [this](const httplib::Request&, httplib::Response& res) {
    reply(res, 200, json_object([&](json::writer& w) {
            json::put(w, "coordinator", peers_.directory().self.value());
            w.Key("groups");
            w.StartArray();
            for (const auto& g : service_.groups()) w.String(g.c_str(), static_cast<rapidjson::SizeType>(g.size()));
            w.EndArray();
          }));
  });
}

}  // namespace moonmq::daemon
