// The messages of a move's ownership steps, written by the source's reassigner and read by the destination's
// cluster service, in one place each way:
//   POST /cluster/owner    owner_change: record an entry, as a compare-and-set when `expect` is given; refused
//                          409 with an owner_conflict naming the entry that stood in the way
//   POST /cluster/offsets  offsets_push: every group's committed offset of a partition (higher wins there)
//   GET  /cluster/owner    owner_report: a broker's own entry of a partition, whether it serves it, whether a move
//                          of it runs there
// Internal to lib/.
#pragma once

#include <rapidjson/document.h>

#include <optional>
#include <string>
#include <vector>

#include "json/object_reader.hpp"
#include "json/parse.hpp"
#include "json/writer.hpp"
#include "moonmq/cluster/ownership_table.hpp"
#include "moonmq/core/topic_name.hpp"
#include "moonmq/storage/offset_store.hpp"
#include "moonmq/transport/message.hpp"

namespace moonmq::cluster::wire {

/// GET /cluster/owner?topic=&partition=: `{"owner":id|null,"version","handover","serves","moving"}`.
struct owner_report {
  std::optional<ownership_entry> entry;  ///< the broker's own entry (none: version 0)
  bool serves = false;                   ///< it serves the partition and has its log
  bool moving = false;                   ///< a move of it runs or is journaled there
};

inline std::string write(const owner_report& r) {
  return json::object([&](json::writer& w) {
    w.Key("owner");
    if (r.entry)
      w.String(r.entry->owner.value().c_str(), static_cast<rapidjson::SizeType>(r.entry->owner.value().size()));
    else
      w.Null();
    json::put(w, "version", r.entry ? r.entry->version : 0);
    json::put(w, "handover", r.entry ? r.entry->handover : false);
    json::put(w, "serves", r.serves);
    json::put(w, "moving", r.moving);
  });
}

/// A peer's answer about `tp`; an error when it is none or not this document.
inline result<owner_report> read_owner_report(const transport::response& r, const topic_partition& tp) {
  if (!r.ok()) return transport::error_of(r);
  rapidjson::Document d;
  if (auto s = json::parse_document(r.body, d, "GET /cluster/owner"); !s) return s.err();
  if (!d.HasMember("version") || !d["version"].IsUint64() || !d.HasMember("serves") || !d["serves"].IsBool())
    return error{errc::invalid_argument, "GET /cluster/owner: expected version and serves"};
  owner_report out;
  out.serves = d["serves"].GetBool();
  // An answer without "moving" comes from a version that did not say: taken as a move under way (the careful side).
  out.moving = !d.HasMember("moving") || !d["moving"].IsBool() || d["moving"].GetBool();
  if (d.HasMember("owner") && d["owner"].IsString() && d["owner"].GetStringLength() > 0)
    out.entry = ownership_entry{tp, broker_id(d["owner"].GetString()), d["version"].GetUint64(),
                                d.HasMember("handover") && d["handover"].IsBool() && d["handover"].GetBool()};
  return out;
}

/// `{"topic","partition","broker","version"[,"expect","expect_handover"]}`.
struct owner_change {
  ownership_entry entry;  ///< its `handover` is not sent: an entry recorded on a peer is a confirmed one
  std::optional<ownership_point> expect;
};

inline std::string write(const owner_change& c) {
  return json::object([&](json::writer& w) {
    json::put(w, "topic", c.entry.partition.topic);
    json::put(w, "partition", c.entry.partition.partition);
    json::put(w, "broker", c.entry.owner.value());
    json::put(w, "version", c.entry.version);
    if (c.expect) {
      json::put(w, "expect", c.expect->version);
      json::put(w, "expect_handover", c.expect->handover);
    }
  });
}

/// Reads an owner change; errors name the field.
inline result<owner_change> read_owner_change(const std::string& body) {
  rapidjson::Document d;
  if (auto s = json::parse_document(body, d, "body"); !s) return s.err();
  json::object_reader r(d, "");
  std::string topic, broker;
  std::int64_t partition = -1;
  owner_change c;
  r.get("topic", topic, true);
  r.get("partition", partition, true);
  r.get("broker", broker, true);
  r.get("version", c.entry.version, true);
  if (d.IsObject() && d.HasMember("expect")) {
    ownership_point x;
    r.get("expect", x.version, true);
    r.get("expect_handover", x.handover, false);
    c.expect = x;
  }
  if (r.ok() && (partition < 0 || partition > INT32_MAX)) r.fail("partition", "out of range");
  if (r.ok() && broker.empty()) r.fail("broker", "must not be empty");
  if (r.ok())
    if (auto valid = validate_topic_name(topic); !valid) r.fail("topic", valid.message());
  if (auto s = r.finish(); !s) return s.err();
  c.entry.partition = {topic, static_cast<std::int32_t>(partition)};
  c.entry.owner = broker_id(broker);
  return c;
}

/// The 409 of a refused owner change: `{"error":"ownership_conflict","message","current":{broker,version,handover}|null}`.
inline std::string write_owner_conflict(const std::string& message, const std::optional<ownership_entry>& current) {
  return json::object([&](json::writer& w) {
    json::put(w, "error", "ownership_conflict");
    json::put(w, "message", message);
    w.Key("current");
    if (!current) {
      w.Null();
      return;
    }
    w.StartObject();
    json::put(w, "broker", current->owner.value());
    json::put(w, "version", current->version);
    json::put(w, "handover", current->handover);
    w.EndObject();
  });
}

/// The entry a 409 answer to an owner change of `tp` reports as standing in the way, if any.
inline std::optional<ownership_entry> read_owner_conflict(const transport::response& r, const topic_partition& tp) {
  if (r.status != 409) return std::nullopt;
  rapidjson::Document d;
  if (!json::parse_object(r.body, d) || !d.HasMember("current") || !d["current"].IsObject()) return std::nullopt;
  const auto& c = d["current"];
  if (!c.HasMember("broker") || !c["broker"].IsString() || !c.HasMember("version") || !c["version"].IsUint64())
    return std::nullopt;
  ownership_entry e{tp, broker_id(c["broker"].GetString()), c["version"].GetUint64(), false};
  if (c.HasMember("handover") && c["handover"].IsBool()) e.handover = c["handover"].GetBool();
  return e;
}

/// `{"topic","partition","offsets":[{"group","offset","metadata"?}]}`.
struct offsets_push {
  topic_partition partition;
  std::vector<storage::group_offset> offsets;
};

inline std::string write(const offsets_push& p) {
  return json::object([&](json::writer& w) {
    json::put(w, "topic", p.partition.topic);
    json::put(w, "partition", p.partition.partition);
    w.Key("offsets");
    w.StartArray();
    for (const auto& g : p.offsets) {
      w.StartObject();
      json::put(w, "group", g.group);
      json::put(w, "offset", g.offset);
      if (!g.metadata.empty()) json::put(w, "metadata", g.metadata);
      w.EndObject();
    }
    w.EndArray();
  });
}

/// Reads an offsets push, every entry validated before any is used; errors name the field.
inline result<offsets_push> read_offsets_push(const std::string& body) {
  rapidjson::Document d;
  if (auto s = json::parse_document(body, d, "body"); !s) return s.err();
  json::object_reader r(d, "");
  std::string topic;
  std::int64_t partition = -1;
  r.get("topic", topic, true);
  r.get("partition", partition, true);
  const auto* list = r.member("offsets");
  if (r.ok() && (partition < 0 || partition > INT32_MAX)) r.fail("partition", "out of range");
  if (r.ok() && (!list || !list->IsArray())) r.fail("offsets", "expected an array");
  if (auto s = r.finish(); !s) return s.err();
  offsets_push p{{topic, static_cast<std::int32_t>(partition)}, {}};
  for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
    json::object_reader e((*list)[i], "offsets[" + std::to_string(i) + "]");
    storage::group_offset g;
    std::int64_t off = -1;
    e.get("group", g.group, true);
    e.get("offset", off, true);
    e.get("metadata", g.metadata);
    if (e.ok() && (g.group.empty() || off < 0)) e.fail_here("needs a group and an offset >= 0");
    if (e.ok() && g.metadata.size() > storage::max_commit_metadata) e.fail("metadata", "too long");
    if (auto s = e.finish(); !s) return s.err();
    g.offset = static_cast<std::uint64_t>(off);
    p.offsets.push_back(std::move(g));
  }
  return p;
}

}  // namespace moonmq::cluster::wire
