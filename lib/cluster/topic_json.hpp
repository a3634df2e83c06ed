// JSON of topic metadata: a change (a Raft topic entry's data, the body of POST /cluster/topics/change), a record
// (what a coordinator tells the brokers, GET /cluster/topic), and a whole catalog (the Raft snapshot's "topics",
// DataDir/topics.json). Internal to lib/ and daemon/.
#pragma once

#include <rapidjson/document.h>

#include <optional>
#include <string>
#include <string_view>

#include "json/object_reader.hpp"
#include "json/parse.hpp"
#include "json/writer.hpp"
#include "moonmq/cluster/topic_catalog.hpp"
#include "moonmq/core/topic_name.hpp"
#include "moonmq/storage/partition_store.hpp"

namespace moonmq::cluster::wire {

inline void write_owners(json::writer& w, const char* key, const std::vector<broker_id>& owners) {
  w.Key(key);
  w.StartArray();
  for (const auto& b : owners) w.String(b.value().c_str(), static_cast<rapidjson::SizeType>(b.value().size()));
  w.EndArray();
}

inline bool read_owners(json::object_reader& r, const char* key, std::vector<broker_id>& out) {
  std::vector<std::string> ids;
  if (!r.get(key, ids, true)) return false;
  for (auto& id : ids) {
    if (id.empty()) return r.fail(key, "a broker id is never empty");
    out.emplace_back(std::move(id));
  }
  return true;
}

/// `{"op":"create"|"grow"|"delete","name","expect","added":[broker ids]}`
inline std::string topic_change_body(const topic_change& c) {
  return json::object([&](json::writer& w) {
    json::put(w, "op", topic_op_name(c.op));
    json::put(w, "name", c.name);
    json::put(w, "expect", c.expect);
    write_owners(w, "added", c.added);
  });
}

inline result<topic_change> read_topic_change(std::string_view text) {
  rapidjson::Document d;
  if (auto s = json::parse_document(text, d, "body"); !s) return s.err();
  json::object_reader r(d, "");
  topic_change c;
  std::string op;
  r.get("op", op, true);
  r.get("name", c.name, true);
  r.get("expect", c.expect, true);
  read_owners(r, "added", c.added);
  if (r.ok()) {
    if (op == "create")
      c.op = topic_op::create;
    else if (op == "grow")
      c.op = topic_op::grow;
    else if (op == "delete")
      c.op = topic_op::remove;
    else
      r.fail("op", "expected create, grow or delete");
  }
  if (r.ok())
    if (auto v = validate_topic_name(c.name); !v) r.fail("name", v.message());
  if (r.ok() && c.added.size() > static_cast<std::size_t>(storage::max_partitions_per_topic_hard))
    r.fail("added", "more partitions than a topic may have");
  if (auto s = r.finish(); !s) return s.err();
  return c;
}

/// `{"name","version","owners":[broker ids],"deleted"}`
inline void write_topic_record(json::writer& w, const topic_record& t) {
  w.StartObject();
  json::put(w, "name", t.name);
  json::put(w, "version", t.version);
  json::put(w, "created", t.created);
  write_owners(w, "owners", t.owners);
  json::put(w, "deleted", t.deleted);
  w.EndObject();
}

inline std::string topic_record_body(const topic_record& t) {
  rapidjson::StringBuffer text;
  json::writer w(text);
  write_topic_record(w, t);
  return std::string(text.GetString(), text.GetSize());
}

inline result<topic_record> read_topic_record(const rapidjson::Value& v, const std::string& path) {
  json::object_reader r(v, path);
  topic_record t;
  r.get("name", t.name, true);
  r.get("version", t.version, true);
  r.get("created", t.created, true);
  read_owners(r, "owners", t.owners);
  r.get("deleted", t.deleted, false);
  if (r.ok())
    if (auto v = validate_topic_name(t.name); !v) r.fail("name", v.message());
  if (r.ok() && t.version == 0) r.fail("version", "a topic's record starts at version 1");
  if (r.ok() && (t.created == 0 || t.created > t.version)) r.fail("created", "must be from 1 to the record's version");
  if (r.ok() && t.owners.size() > static_cast<std::size_t>(storage::max_partitions_per_topic_hard))
    r.fail("owners", "more partitions than a topic may have");
  if (r.ok() && t.deleted != t.owners.empty()) r.fail("owners", "a live topic has partitions, a deleted one none");
  if (auto s = r.finish(); !s) return s.err();
  return t;
}

inline result<topic_record> read_topic_record(std::string_view text) {
  rapidjson::Document d;
  if (auto s = json::parse_document(text, d, "body"); !s) return s.err();
  return read_topic_record(d, "");
}

/// `"topics":[records]` inside an object being written.
inline void write_catalog(json::writer& w, const topic_catalog& c) {
  w.Key("topics");
  w.StartArray();
  for (const auto& t : c.records()) write_topic_record(w, t);
  w.EndArray();
}

/// The catalog of `v["topics"]` (absent: empty, as in what was written before topics were metadata).
inline result<topic_catalog> read_catalog(const rapidjson::Value& v, const std::string& path) {
  topic_catalog c;
  if (!v.IsObject() || !v.HasMember("topics")) return c;
  const auto& list = v["topics"];
  if (!list.IsArray()) return error{errc::corrupt, path + ".topics: expected an array"};
  for (rapidjson::SizeType i = 0; i < list.Size(); ++i) {
    auto t = read_topic_record(list[i], path + ".topics[" + std::to_string(i) + "]");
    if (!t) return error{errc::corrupt, t.message()};
    c.learn(*t);
  }
  return c;
}

}  // namespace moonmq::cluster::wire
