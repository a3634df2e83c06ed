#include "moonmq/groups/group_routes.hpp"

#include <algorithm>
#include <chrono>

#include "groups/group_wire.hpp"
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

response not_coordinator(const broker_id& coordinator) {
  return {421, json::object([&](json::writer& w) {
            json::put(w, "error", "not_coordinator");
            json::put(w, "coordinator", coordinator.value());
          }),
          "application/json"};
}

/// A coordinator's error as the caller's refusal (every refusal of a group call is the coordinator's).
refusal by_coordinator(error e) { return refusal{std::move(e), std::nullopt, std::nullopt, true}; }

template <typename T>
outcome<T> answered(result<T> r) {
  if (!r) return by_coordinator(r.err());
  return std::move(*r);
}

}  // namespace

group_routes::group_routes(group_service& service, transport::peer_client& peers, std::vector<broker_id> brokers,
                           std::function<time_ms()> clock)
    : service_(service), peers_(peers), brokers_(std::move(brokers)), clock_(clock ? std::move(clock) : steady_now_ms) {}

outcome<transport::response> group_routes::forward(const std::string& group_id, const std::string& route,
                                                  std::string body) {
  const broker_id coordinator = coordinator_of(group_id);
  request r;
  r.path = std::string(cluster_prefix) + route;
  if (route == "describe") {
    r.method = "GET";
    r.params = {{"group", group_id}};
  } else {
    r.body = std::move(body);
  }
  auto answer = peers_.call_now(coordinator.value(), std::move(r));
  if (!answer || answer->status == 0)
    return refusal::coordinator_silent("the coordinator of group " + group_id + ", " + coordinator.value() +
                                       ", did not answer" + (answer ? ": " + answer->body : std::string()));
  if (answer->status == 421)
    return by_coordinator({errc::not_owner, coordinator.value() + " says it does not coordinate group " + group_id +
                                      ": the brokers disagree on the cluster's members"});
  if (!answer->ok()) return by_coordinator(transport::error_of(*answer));
  return std::move(*answer);
}


outcome<member_answer> group_routes::join(const join_call& c) {
  if (coordinator_of(c.group) == self()) return answered(join_here(c, self().value()));
  auto r = forward(c.group, "join", wire::join_body(c));
  if (!r) return r.refused();
  return answered(wire::read_answer(r->body));
}

outcome<member_answer> group_routes::heartbeat(const heartbeat_call& c) {
  if (coordinator_of(c.group) == self()) return answered(heartbeat_here(c));
  auto r = forward(c.group, "heartbeat", wire::heartbeat_body(c));
  if (!r) return r.refused();
  return answered(wire::read_answer(r->body));
}

outcome<classic_answer> group_routes::classic(const classic_call& c) {
  if (coordinator_of(c.group) == self()) return answered(classic_here(c));
  auto r = forward(c.group, "classic", wire::classic_body(c));
  if (!r) return r.refused();
  return answered(wire::read_classic_answer(r->body));
}

result<classic_answer> group_routes::classic_here(const classic_call& c) {
  using step = classic_call::step;
  if (c.what == step::sync) return service_.sync_classic(c.group, c.join.member_id, c.generation, clock_());
  if (c.what == step::heartbeat) return service_.heartbeat_classic(c.group, c.join.member_id, c.generation, clock_());
  if (c.join.topics.empty() || c.join.topics.size() > wire::max_topics)
    return error{errc::invalid_argument,
                 "topics: a member subscribes to 1 to " + std::to_string(wire::max_topics) + " topics"};
  for (const auto& t : c.join.topics)
    if (auto v = validate_topic_name(t); !v) return error{errc::invalid_argument, "topics: " + v.message()};
  if (c.join.owned.size() > wire::max_partitions)
    return error{errc::invalid_argument, "owned: at most " + std::to_string(wire::max_partitions) + " partitions"};
  return service_.join_classic(c.group, c.join, clock_());
}

outcome<done> group_routes::leave(const std::string& group_id, const std::string& member_id) {
  if (coordinator_of(group_id) == self()) {
    if (auto s = service_.leave(group_id, member_id); !s) return by_coordinator(s.err());
    return done{};
  }
  auto r = forward(group_id, "leave", wire::leave_body(group_id, member_id));
  if (!r) return r.refused();
  return done{};
}

outcome<group_description> group_routes::describe(const std::string& group_id) {
  if (coordinator_of(group_id) == self()) {
    auto d = service_.describe(group_id);
    if (!d) return by_coordinator({errc::not_found, "no group " + group_id + " on its coordinator " + self().value()});
    return std::move(*d);
  }
  auto r = forward(group_id, "describe", "");
  if (!r) return r.refused();
  return answered(wire::read_description(r->body));
}

result<member_answer> group_routes::join_here(const join_call& c, const std::string& forwarded_by) {
  if (std::find(brokers_.begin(), brokers_.end(), c.broker) == brokers_.end())
    return error{errc::invalid_argument, "broker: '" + c.broker.value() + "' is not a broker of this cluster"};
  if (forwarded_by != c.broker.value())
    return error{errc::invalid_argument,
                 "broker: a join forwarded by " + forwarded_by + " names " + c.broker.value() + " as the member's broker"};
  if (c.topics.empty() || c.topics.size() > wire::max_topics)
    return error{errc::invalid_argument,
                 "topics: a member subscribes to 1 to " + std::to_string(wire::max_topics) + " topics"};
  for (const auto& t : c.topics)
    if (auto v = validate_topic_name(t); !v) return error{errc::invalid_argument, "topics: " + v.message()};
  return service_.join(c.group, c.member_id, c.broker, {c.topics.begin(), c.topics.end()}, clock_());
}

result<member_answer> group_routes::heartbeat_here(const heartbeat_call& c) {
  return service_.heartbeat(c.group, c.member_id, c.member_epoch, c.owned, clock_());
}

std::string group_routes::list_document(const transport::list_page& page) const {
  auto names = service_.groups(page.after, page.limit + 1);
  const bool more = names.size() > page.limit;
  if (more) names.resize(page.limit);
  return json::object([&](json::writer& w) {
    json::put(w, "coordinator", self().value());
    json::put(w, "groups", names);
    json::put(w, "more", more);
  });
}

response group_routes::handle_cluster(const request& req) {
  const std::string route = req.path.substr(std::min(req.path.size(), cluster_prefix.size()));
  if (route == "describe" && req.method == "GET") {
    auto g = req.params.find("group");
    if (g == req.params.end()) return error_response(400, "invalid_argument", "query parameter 'group' is required");
    if (const broker_id c = coordinator_of(g->second); c != self()) return not_coordinator(c);
    auto d = service_.describe(g->second);
    if (!d) return error_response(404, "not_found", "no group " + g->second + " on its coordinator " + self().value());
    return json_ok(wire::description_json(*d));
  }
  if (route == "list" && req.method == "GET") {
    auto page = transport::list_page::from(req.params);
    if (!page) return error_response(400, "invalid_argument", page.message());
    return json_ok(list_document(*page));
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
  if (coordinator != self() && route != "clear") return not_coordinator(coordinator);
  if (route == "join") {
    join_call c{group_id, member_id, {}, {}};
    std::string broker;
    r.get("broker", broker, true);
    r.get("topics", c.topics, true);
    if (auto s = r.finish(); !s) return error_response(400, "invalid_argument", s.message());
    c.broker = broker_id(broker);
    auto from = req.headers.find(transport::header_from);
    auto a = join_here(c, from != req.headers.end() ? from->second : broker);
    if (!a) return wire::refusal_response(a.err(), "fenced_member");
    return json_ok(wire::answer_json(*a));
  }
  if (route == "classic") {
    classic_call c;
    c.group = group_id;
    c.join.member_id = member_id;
    std::string what, broker;
    std::vector<std::string> topics;
    r.get("step", what, true);
    r.get("generation", c.generation);
    r.get("broker", broker);
    r.get("topics", topics);
    r.get("session_timeout_ms", c.join.session_timeout_ms);
    r.get("cooperative", c.join.cooperative);
    auto owned = wire::read_partitions(r, "owned");
    if (!owned) return error_response(400, "invalid_argument", owned.message());
    if (r.ok() && what != "join" && what != "sync" && what != "heartbeat")
      r.fail("step", "expected join, sync or heartbeat");
    if (r.ok() && what != "join" && member_id.empty()) r.fail("member_id", "is required for " + what);
    if (auto s = r.finish(); !s) return error_response(400, "invalid_argument", s.message());
    c.what = what == "join" ? classic_call::step::join
             : what == "sync" ? classic_call::step::sync
                              : classic_call::step::heartbeat;
    auto from = req.headers.find(transport::header_from);
    c.join.broker = broker_id(from != req.headers.end() ? from->second : broker);
    c.join.topics = {topics.begin(), topics.end()};
    c.join.owned = std::move(*owned);
    auto a = classic_here(c);
    if (!a) return wire::refusal_response(a.err(), "illegal_generation");
    return json_ok(wire::classic_answer_json(*a));
  }
  if (route == "heartbeat") {
    std::uint64_t epoch = 0;
    r.get("member_epoch", epoch, true);
    auto owned = wire::read_partitions(r, "owned");
    if (!owned) return error_response(400, "invalid_argument", owned.message());
    if (auto s = r.finish(); !s) return error_response(400, "invalid_argument", s.message());
    auto a = heartbeat_here({group_id, member_id, epoch, std::move(*owned)});
    if (!a) return wire::refusal_response(a.err(), "fenced_member");
    return json_ok(wire::answer_json(*a));
  }
  if (route == "leave") {
    if (auto s = r.finish(); !s) return error_response(400, "invalid_argument", s.message());
    if (auto s = service_.leave(group_id, member_id); !s) return wire::refusal_response(s.err(), "fenced_member");
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
      return wire::refusal_response(s.err(), "stale_member_epoch");
    return json_ok("{}");
  }
  return error_response(404, "not_found", req.path + " is not a group route");
}

status group_routes::check_commit(const std::string& group_id, const std::string& member_id, std::uint64_t member_epoch,
                               const topic_partition& tp) {
  if (coordinator_of(group_id) == self()) return service_.check_commit(group_id, member_id, member_epoch, tp);
  auto r = forward(group_id, "check", wire::partition_call_body(group_id, member_id, member_epoch, tp));
  if (!r) return r.err();
  return {};
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
    request r;
    r.path = std::string(cluster_prefix) + "clear";
    r.body = wire::partition_call_body(group_id, "", 0, p.partition);
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
