// The JSON shapes the group routes share between the client API and /cluster/group/*: partition lists and a
// member's answer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "json/object_reader.hpp"
#include "json/writer.hpp"
#include "moonmq/core/topic_name.hpp"
#include "moonmq/groups/group.hpp"

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

}  // namespace moonmq::groups::wire
