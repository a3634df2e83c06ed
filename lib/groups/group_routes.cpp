#include "moonmq/groups/group_routes.hpp"

#include <algorithm>
#include <chrono>

#include "groups/group_wire.hpp"
#include "moonmq/cluster/coordinator_call.hpp"
#include "json/object_reader.hpp"
#include "json/parse.hpp"
#include "moonmq/core/clock.hpp"
#include "moonmq/core/fnv1a.hpp"
#include "moonmq/core/topic_name.hpp"
#include "moonmq/core/utf8.hpp"

namespace moonmq::groups {

namespace {

using transport::error_response;
using transport::request;
using transport::response;

constexpr std::string_view cluster_prefix = "/cluster/group/";

response json_ok(std::string body) { return {200, std::move(body), "application/json"}; }

response refused(const error& e, const char* conflict_code) {
  const int status = transport::http_status_of(e.code);
  const std::string code = e.code == errc::not_found ? "unknown_member"
                           : e.code == errc::conflict ? conflict_code
                                                      : errc_name(e.code);
  return error_response(status, code, e.message);
}

}  // namespace

group_routes::group_routes(group_service& service, cluster::peer_client& peers, std::vector<broker_id> brokers,
                           std::function<time_ms()> clock)
    : service_(service), peers_(peers), brokers_(std::move(brokers)), clock_(clock ? std::move(clock) : steady_now_ms) {}

response group_routes::on_coordinator(const std::string& group_id, const std::string& route, const std::string& body) {
  request r;
  r.path = std::string(cluster_prefix) + route;
  if (route == "describe") {
    r.method = "GET";
    r.params = {{"group", group_id}};
  } else {
    r.body = body;
  }
  return cluster::call_coordinator(peers_, coordinator_of(group_id), std::move(r), "group " + group_id,
                                   [this](const request& q) { return handle_cluster(q); });
}

response group_routes::handle_cluster(const request& req) {
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
        wire::write_partitions(w, "assignment", held);
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
    if (r.ok() && (topics.empty() || topics.size() > wire::max_topics))
      r.fail("topics", "a member subscribes to 1 to " + std::to_string(wire::max_topics) + " topics");
    for (const auto& t : topics)
      if (r.ok())
        if (auto v = validate_topic_name(t); !v) r.fail("topics", v.message());
    if (auto s = r.finish(); !s) return error_response(400, "invalid_argument", s.message());
    auto a = service_.join(group_id, member_id, broker_id(broker), {topics.begin(), topics.end()}, clock_());
    if (!a) return refused(a.err(), "fenced_member");
    return json_ok(wire::answer_json(*a));
  }
  if (route == "heartbeat") {
    std::uint64_t epoch = 0;
    r.get("member_epoch", epoch, true);
    auto owned = wire::read_partitions(r, "owned");
    if (!owned) return error_response(400, "invalid_argument", owned.message());
    if (auto s = r.finish(); !s) return error_response(400, "invalid_argument", s.message());
    auto a = service_.heartbeat(group_id, member_id, epoch, *owned, clock_());
    if (!a) return refused(a.err(), "fenced_member");
    return json_ok(wire::answer_json(*a));
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
    if (r.ok())
      if (auto v = validate_topic_name(topic); !v) r.fail("topic", v.message());
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
    if (r.ok())
      if (auto v = validate_topic_name(topic); !v) r.fail("topic", v.message());
    if (auto s = r.finish(); !s) return error_response(400, "invalid_argument", s.message());
    if (auto s = service_.check_commit(group_id, member_id, epoch, {topic, static_cast<std::int32_t>(partition)}); !s)
      return refused(s.err(), "stale_member_epoch");
    return json_ok("{}");
  }
  return error_response(404, "not_found", req.path + " is not a group route");
}

status group_routes::check_commit(const std::string& group_id, const std::string& member_id, std::uint64_t member_epoch,
                               const topic_partition& tp) {
  const std::string body = json::object([&](json::writer& w) {
    json::put(w, "group", group_id);
    json::put(w, "member_id", member_id);
    json::put(w, "member_epoch", member_epoch);
    json::put(w, "topic", tp.topic);
    json::put(w, "partition", tp.partition);
  });
  auto r = on_coordinator(group_id, "check", body);
  if (r.ok()) return {};
  return transport::error_of(r);
}

std::mutex& group_routes::commit_gate(const std::string& group_id, const topic_partition& tp) {
  // One of a fixed set, chosen by the key: group ids are the clients', so one mutex per key ever seen would grow
  // without bound. Two keys sharing a gate only wait for each other; the barrier a clearance needs still holds.
  const std::string key = group_id + '\0' + tp.topic + '\0' + std::to_string(tp.partition);
  return commit_gates_[fnv1a(key) % commit_gates_.size()];
}

status group_routes::fenced_commit(const std::string& group_id, const std::string& member_id, std::uint64_t member_epoch,
                                const topic_partition& tp, const std::function<status()>& write) {
  std::lock_guard gate(commit_gate(group_id, tp));
  if (auto s = check_commit(group_id, member_id, member_epoch, tp); !s) return s;
  return write();
}

void group_routes::clear_pending() {
  std::lock_guard one(clear_mu_);
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
      const time_ms now = clock_();
      if (auto wait = clear_retry_at_.find(p.owner); wait != clear_retry_at_.end() && now < wait->second) continue;
      auto a = peers_.call_now(p.owner.value(), std::move(r));
      if (!a || a->status == 0) {
        clear_retry_at_[p.owner] = now + clear_retry;
        continue;
      }
      clear_retry_at_.erase(p.owner);
      answer = std::move(*a);
    }
    if (answer.status == 200) service_.clearance_done(group_id, p.partition);
  }
}

}  // namespace moonmq::groups
