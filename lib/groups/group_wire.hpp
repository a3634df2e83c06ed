// The bodies of the group routes, each written and read side by side: partition lists, the coordinator calls
// (join, heartbeat, leave, check, clear) as /cluster/group/* carries them, a member's answer and a group's
// description (what the client API answers too). Internal to lib/ and daemon/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "json/object_reader.hpp"
#include "json/writer.hpp"
#include "moonmq/core/topic_name.hpp"
#include "json/parse.hpp"
#include "moonmq/groups/group.hpp"
#include "moonmq/groups/group_routes.hpp"
#include "moonmq/groups/group_service.hpp"

namespace moonmq::groups::wire {

constexpr std::size_t max_topics = 100;         ///< topics one member subscribes to
constexpr std::size_t max_partitions = 10000;  ///< partitions one heartbeat reports

inline void write_partitions(json::writer& w, const char* key, const std::vector<topic_partition>& list) {
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

/// An array of {"topic","partition"} at `key` of `r` (absent: empty).
inline result<std::vector<topic_partition>> read_partitions(json::object_reader& r, const char* key) {
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

inline std::string answer_json(const member_answer& a) {
  return json::object([&](json::writer& w) {
    json::put(w, "member_id", a.member_id);
    json::put(w, "member_epoch", a.member_epoch);
    write_partitions(w, "assignment", a.assignment);
    json::put(w, "heartbeat_interval_ms", a.heartbeat_interval_ms);
  });
}

inline result<member_answer> read_answer(std::string_view body) {
  rapidjson::Document d;
  if (auto s = json::parse_document(body, d, "a member's answer"); !s) return s.err();
  json::object_reader r(d, "");
  member_answer a;
  r.get("member_id", a.member_id, true);
  r.get("member_epoch", a.member_epoch, true);
  std::int64_t interval = 0;
  r.get("heartbeat_interval_ms", interval, true);
  auto assignment = read_partitions(r, "assignment");
  if (!assignment) return assignment.err();
  if (auto s = r.finish(); !s) return s.err();
  a.assignment = std::move(*assignment);
  a.heartbeat_interval_ms = interval;
  return a;
}

/// POST /cluster/group/join: `{"group","member_id","broker","topics"}`.
inline std::string join_body(const join_call& c) {
  return json::object([&](json::writer& w) {
    json::put(w, "group", c.group);
    json::put(w, "member_id", c.member_id);
    json::put(w, "broker", c.broker.value());
    json::put(w, "topics", c.topics);
  });
}

/// POST /cluster/group/heartbeat: `{"group","member_id","member_epoch","owned"}`.
inline std::string heartbeat_body(const heartbeat_call& c) {
  return json::object([&](json::writer& w) {
    json::put(w, "group", c.group);
    json::put(w, "member_id", c.member_id);
    json::put(w, "member_epoch", c.member_epoch);
    write_partitions(w, "owned", c.owned);
  });
}

/// POST /cluster/group/classic: `{"group","step","member_id","generation","broker","topics","session_timeout_ms",
/// "cooperative","owned"}` (step: join, sync or heartbeat; the join's fields only for a join).
inline std::string classic_body(const classic_call& c) {
  using step = classic_call::step;
  return json::object([&](json::writer& w) {
    json::put(w, "group", c.group);
    json::put(w, "step", c.what == step::join ? "join" : c.what == step::sync ? "sync" : "heartbeat");
    json::put(w, "member_id", c.join.member_id);
    json::put(w, "generation", c.generation);
    if (c.what == step::join) {
      json::put(w, "broker", c.join.broker.value());
      json::put(w, "topics", std::vector<std::string>(c.join.topics.begin(), c.join.topics.end()));
      json::put(w, "session_timeout_ms", c.join.session_timeout_ms);
      json::put(w, "cooperative", c.join.cooperative);
      write_partitions(w, "owned", c.join.owned);
    }
  });
}

inline std::string classic_answer_json(const classic_answer& a) {
  return json::object([&](json::writer& w) {
    json::put(w, "member_id", a.member_id);
    json::put(w, "generation", a.generation);
    write_partitions(w, "assignment", a.assignment);
    json::put(w, "rejoin", a.rejoin);
  });
}

inline result<classic_answer> read_classic_answer(std::string_view body) {
  rapidjson::Document d;
  if (auto s = json::parse_document(body, d, "a classic member's answer"); !s) return s.err();
  json::object_reader r(d, "");
  classic_answer a;
  r.get("member_id", a.member_id, true);
  r.get("generation", a.generation, true);
  r.get("rejoin", a.rejoin, true);
  auto assignment = read_partitions(r, "assignment");
  if (!assignment) return assignment.err();
  if (auto s = r.finish(); !s) return s.err();
  a.assignment = std::move(*assignment);
  return a;
}

/// POST /cluster/group/leave: `{"group","member_id"}`.
inline std::string leave_body(const std::string& group, const std::string& member_id) {
  return json::object([&](json::writer& w) {
    json::put(w, "group", group);
    json::put(w, "member_id", member_id);
  });
}

/// POST /cluster/group/check: `{"group","member_id","member_epoch","topic","partition"}`; clear has no member.
inline std::string partition_call_body(const std::string& group, const std::string& member_id,
                                       std::uint64_t member_epoch, const topic_partition& tp) {
  return json::object([&](json::writer& w) {
    json::put(w, "group", group);
    if (!member_id.empty() || member_epoch) {
      json::put(w, "member_id", member_id);
      json::put(w, "member_epoch", member_epoch);
    }
    json::put(w, "topic", tp.topic);
    json::put(w, "partition", tp.partition);
  });
}

/// GET /cluster/group/describe?group= (and GET /v1/groups/{g}):
/// `{"group","coordinator","epoch","members":[{"member_id","member_epoch","broker","assignment"}],
///   "unassigned":[{"topic","partition","owner","reason"}]}`.
inline std::string description_json(const group_description& d) {
  return json::object([&](json::writer& w) {
    json::put(w, "group", d.id);
    json::put(w, "coordinator", d.coordinator.value());
    json::put(w, "epoch", d.epoch);
    w.Key("members");
    w.StartArray();
    for (const auto& m : d.members) {
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
    for (const auto& u : d.unassigned_partitions) {
      w.StartObject();
      json::put(w, "topic", u.partition.topic);
      json::put(w, "partition", u.partition.partition);
      json::put(w, "owner", u.owner.value());
      json::put(w, "reason", u.reason);
      w.EndObject();
    }
    w.EndArray();
  });
}

/// A description read back (a member's `handed` epochs are not carried: each reads as its member's epoch).
inline result<group_description> read_description(std::string_view body) {
  rapidjson::Document doc;
  if (auto s = json::parse_document(body, doc, "a group's description"); !s) return s.err();
  json::object_reader r(doc, "");
  group_description d;
  std::string coordinator;
  r.get("group", d.id, true);
  r.get("coordinator", coordinator, true);
  r.get("epoch", d.epoch, true);
  d.coordinator = broker_id(coordinator);
  const auto* members = r.member("members");
  const auto* unassigned_list = r.member("unassigned");
  if (r.ok() && (!members || !members->IsArray() || !unassigned_list || !unassigned_list->IsArray()))
    r.fail("members", "expected the members and unassigned arrays");
  if (auto s = r.finish(); !s) return s.err();
  for (rapidjson::SizeType i = 0; i < members->Size(); ++i) {
    json::object_reader m((*members)[i], "members[" + std::to_string(i) + "]");
    member got;
    std::string broker;
    m.get("member_id", got.id, true);
    m.get("member_epoch", got.epoch, true);
    m.get("broker", broker, true);
    auto held = read_partitions(m, "assignment");
    if (!held) return held.err();
    if (auto s = m.finish(); !s) return s.err();
    got.broker = broker_id(broker);
    for (const auto& tp : *held) got.handed[tp] = got.epoch;
    d.members.push_back(std::move(got));
  }
  for (rapidjson::SizeType i = 0; i < unassigned_list->Size(); ++i) {
    json::object_reader u((*unassigned_list)[i], "unassigned[" + std::to_string(i) + "]");
    unassigned got;
    std::string owner;
    std::int64_t partition = -1;
    u.get("topic", got.partition.topic, true);
    u.get("partition", partition, true);
    u.get("owner", owner, true);
    u.get("reason", got.reason, true);
    if (u.ok() && (partition < 0 || partition > INT32_MAX)) u.fail("partition", "out of range");
    if (auto s = u.finish(); !s) return s.err();
    got.partition.partition = static_cast<std::int32_t>(partition);
    got.owner = broker_id(owner);
    d.unassigned_partitions.push_back(std::move(got));
  }
  return d;
}

/// A group route's refusal: 404 `unknown_member`, 409 `conflict_code` (fenced_member, stale_member_epoch), 503
/// `coordinator_unavailable` (the only unavailability a group call has), else the code's own.
inline transport::response refusal_response(const error& e, const char* conflict_code) {
  const int status = transport::http_status_of(e.code);
  const char* code = e.code == errc::not_found     ? "unknown_member"
                     : e.code == errc::conflict    ? conflict_code
                     : e.code == errc::unavailable ? "coordinator_unavailable"
                                                   : errc_name(e.code);
  return transport::error_response(status, code, e.message);
}

}  // namespace moonmq::groups::wire
