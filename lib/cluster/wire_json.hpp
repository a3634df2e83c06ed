// JSON of the cluster routes that more than one party writes or reads: move progress (GET /cluster/moves,
// GET /v1/reassignments, read back by the balance loop) and load reports (GET /cluster/loads, read back by the balance
// loop), and a broker's drain mark (POST /cluster/admin/drain, told to every broker). Internal to lib/ and daemon/.
#pragma once

#include <rapidjson/document.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "json/object_reader.hpp"
#include "json/parse.hpp"
#include "json/writer.hpp"
#include "moonmq/transport/message.hpp"
#include "moonmq/cluster/local_loads.hpp"
#include "moonmq/cluster/move_progress.hpp"

namespace moonmq::cluster::wire {

/// A broker marked draining or not, told to every broker: `{"broker","draining"}` (POST /cluster/admin/drain).
struct drain_mark {
  std::string broker;
  bool draining = false;
};

inline std::string write(const drain_mark& m) {
  return json::object([&](json::writer& w) {
    json::put(w, "broker", m.broker);
    json::put(w, "draining", m.draining);
  });
}

/// Reads a drain mark; errors name the field.
inline result<drain_mark> read_drain_mark(const std::string& body) {
  return json::read_object<drain_mark>(body, "body", [](json::object_reader& r, drain_mark& m) -> status {
    r.get("broker", m.broker, true);
    r.get("draining", m.draining, true);
    return r.first_error();
  });
}

/// A request to move a partition: `{"topic","partition","dest"}` (POST /cluster/reassign, POST /v1/reassignments).
struct move_request {
  topic_partition partition;
  std::string dest;
};

inline std::string move_request_body(const move_request& m) {
  return json::object([&](json::writer& w) {
    json::put(w, "topic", m.partition.topic);
    json::put(w, "partition", m.partition.partition);
    json::put(w, "dest", m.dest);
  });
}

/// Reads a move request from `body`; errors name the field. `known_dest`, when given, refuses destinations it does not
/// know.
inline result<move_request> read_move_request(const std::string& body,
                                              const std::function<bool(const std::string&)>& known_dest = {}) {
  rapidjson::Document d;
  if (auto s = json::parse_document(body, d, "body"); !s) return s.err();
  json::object_reader r(d, "");
  std::string topic, dest;
  std::int64_t partition = -1;
  r.get("topic", topic, true);
  r.get("partition", partition, true);
  r.get("dest", dest, true);
  if (r.ok() && (partition < 0 || partition > INT32_MAX)) r.fail("partition", "out of range");
  if (r.ok() && dest.empty()) r.fail("dest", "must not be empty");
  if (r.ok() && known_dest && !known_dest(dest)) r.fail("dest", "'" + dest + "' is not a configured peer");
  if (auto s = r.finish(); !s) return s.err();
  return move_request{{topic, static_cast<std::int32_t>(partition)}, dest};
}

/// POST /cluster/reassign's answer (202): `{"id"}`, the move's id on the broker that started it.
inline std::string move_started_body(std::uint64_t id) {
  return json::object([&](json::writer& w) { json::put(w, "id", id); });
}

/// The id a 202 answer to POST /cluster/reassign carries; an error naming what was wrong otherwise.
inline result<std::uint64_t> read_move_started(const transport::response& r) {
  if (r.status != 202) return transport::error_of(r);
  rapidjson::Document d;
  if (!json::parse_object(r.body, d) || !d.HasMember("id") || !d["id"].IsUint64())
    return error{errc::internal, "the move was started but the answer has no id: " + r.body};
  return d["id"].GetUint64();
}

inline void write_move(json::writer& w, const move_progress& p) {
  w.StartObject();
  json::put(w, "id", p.id);
  json::put(w, "topic", p.partition.topic);
  json::put(w, "partition", p.partition.partition);
  json::put(w, "dest", p.dest);
  json::put(w, "step", p.step);
  json::put(w, "bytes_copied", p.bytes_copied);
  json::put(w, "bytes_total", p.bytes_total);
  json::put(w, "finished", p.finished);
  json::put(w, "succeeded", p.succeeded);
  json::put(w, "error", p.error);
  json::put(w, "started_at", p.started_at);
  json::put(w, "finished_at", p.finished_at);
  json::put(w, "source", p.source);
  json::put(w, "resumed_from", p.resumed_from);
  json::put(w, "copy_started_at", p.copy_started_at);
  json::put(w, "last_activity_at", p.last_activity_at);
  json::put(w, "waiting_for", p.waiting_for);
  json::put(w, "cancel_requested", p.cancel_requested);
  json::put(w, "rate_bytes_per_sec", p.rate_bytes_per_sec);
  json::put(w, "eta_seconds", p.eta_seconds);
  json::put(w, "stalled", p.stalled);
  json::put(w, "stalled_reason", p.stalled_reason);
  w.EndObject();
}

/// `{"<key>": [moves]}`.
inline std::string moves_document(const char* key, const std::vector<move_progress>& list) {
  return json::object([&](json::writer& w) {
    w.Key(key);
    w.StartArray();
    for (const auto& p : list) write_move(w, p);
    w.EndArray();
  });
}

/// The moves of a `{"moves": [...]}` answer; nullopt when it is not one.
inline std::optional<std::vector<move_progress>> read_moves(const std::string& body) {
  rapidjson::Document d;
  if (!json::parse_object(body, d) || !d.HasMember("moves") || !d["moves"].IsArray()) return std::nullopt;
  std::vector<move_progress> out;
  for (const auto& m : d["moves"].GetArray()) {
    if (!m.IsObject() || !m.HasMember("id") || !m["id"].IsUint64() || !m.HasMember("topic") || !m["topic"].IsString() ||
        !m.HasMember("partition") || !m["partition"].IsInt())
      return std::nullopt;
    move_progress p;
    p.id = m["id"].GetUint64();
    p.partition = {m["topic"].GetString(), m["partition"].GetInt()};
    auto str = [&](const char* k) { return m.HasMember(k) && m[k].IsString() ? std::string(m[k].GetString()) : ""; };
    auto u64 = [&](const char* k) { return m.HasMember(k) && m[k].IsUint64() ? m[k].GetUint64() : 0; };
    auto flag = [&](const char* k) { return m.HasMember(k) && m[k].IsBool() && m[k].GetBool(); };
    p.dest = str("dest");
    p.step = str("step");
    p.error = str("error");
    p.bytes_copied = u64("bytes_copied");
    p.bytes_total = u64("bytes_total");
    p.finished = flag("finished");
    p.succeeded = flag("succeeded");
    p.source = str("source");
    p.resumed_from = u64("resumed_from");
    p.waiting_for = str("waiting_for");
    p.cancel_requested = flag("cancel_requested");
    auto num = [&](const char* k, double fallback) { return m.HasMember(k) && m[k].IsNumber() ? m[k].GetDouble() : fallback; };
    p.started_at = num("started_at", 0);
    p.finished_at = num("finished_at", 0);
    p.copy_started_at = num("copy_started_at", 0);
    p.last_activity_at = num("last_activity_at", 0);
    p.rate_bytes_per_sec = num("rate_bytes_per_sec", 0);
    p.eta_seconds = num("eta_seconds", -1);
    p.stalled = flag("stalled");
    p.stalled_reason = str("stalled_reason");
    out.push_back(std::move(p));
  }
  return out;
}

/// GET /cluster/loads, as one message: written by the broker that answers, read by every caller (the balance loop,
/// the placement directory, the operator's cluster view) with the same rules.
struct load_report {
  std::string broker;
  std::vector<partition_load> partitions;  ///< the partitions it serves
  std::uint64_t held_bytes = 0;            ///< what its store holds of partitions it does not serve
  std::vector<partition_load> strays;      ///< logs the topic catalog did not make there (never served; size only)
};

/// `{"broker": ID, "held_bytes": N, "partitions": [{topic, partition, size_bytes, produced_bytes, consumed_bytes,
/// open_transactions?}], "strays": [{topic, partition, size_bytes}]}`.
inline std::string write(const load_report& r) {
  return json::object([&](json::writer& w) {
    json::put(w, "broker", r.broker);
    json::put(w, "held_bytes", r.held_bytes);
    w.Key("strays");
    w.StartArray();
    for (const auto& l : r.strays) {
      w.StartObject();
      json::put(w, "topic", l.partition.topic);
      json::put(w, "partition", l.partition.partition);
      json::put(w, "size_bytes", l.size_bytes);
      w.EndObject();
    }
    w.EndArray();
    w.Key("partitions");
    w.StartArray();
    for (const auto& l : r.partitions) {
      w.StartObject();
      json::put(w, "topic", l.partition.topic);
      json::put(w, "partition", l.partition.partition);
      json::put(w, "size_bytes", l.size_bytes);
      json::put(w, "produced_bytes", l.produced_bytes);
      json::put(w, "consumed_bytes", l.consumed_bytes);
      if (l.open_transactions) json::put(w, "open_transactions", true);
      w.EndObject();
    }
    w.EndArray();
  });
}

/// A load report; nullopt when the body is not one (a malformed report counts as no answer). `held_bytes` and
/// `strays` may be absent (a broker of an older version): 0 and none. A stray entry that is not one is skipped; a
/// partition entry that is not one makes the whole report unreadable.
inline std::optional<load_report> read_load_report(const std::string& body) {
  rapidjson::Document d;
  if (!json::parse_object(body, d) || !d.HasMember("partitions") || !d["partitions"].IsArray()) return std::nullopt;
  load_report out;
  if (d.HasMember("broker") && d["broker"].IsString()) out.broker = d["broker"].GetString();
  for (const auto& e : d["partitions"].GetArray()) {
    if (!e.IsObject()) return std::nullopt;
    for (const char* k : {"size_bytes", "produced_bytes", "consumed_bytes"})
      if (!e.HasMember(k) || !e[k].IsUint64()) return std::nullopt;
    if (!e.HasMember("topic") || !e["topic"].IsString() || !e.HasMember("partition") || !e["partition"].IsInt())
      return std::nullopt;
    const bool open = e.HasMember("open_transactions") && e["open_transactions"].IsBool() &&
                      e["open_transactions"].GetBool();
    out.partitions.push_back({{e["topic"].GetString(), e["partition"].GetInt()},
                              e["size_bytes"].GetUint64(),
                              e["produced_bytes"].GetUint64(),
                              e["consumed_bytes"].GetUint64(),
                              open});
  }
  if (d.HasMember("held_bytes") && d["held_bytes"].IsUint64()) out.held_bytes = d["held_bytes"].GetUint64();
  if (d.HasMember("strays") && d["strays"].IsArray())
    for (const auto& e : d["strays"].GetArray())
      if (e.IsObject() && e.HasMember("topic") && e["topic"].IsString() && e.HasMember("partition") &&
          e["partition"].IsInt() && e.HasMember("size_bytes") && e["size_bytes"].IsUint64())
        out.strays.push_back(
            {{e["topic"].GetString(), e["partition"].GetInt()}, e["size_bytes"].GetUint64(), 0, 0, false});
  return out;
}

}  // namespace moonmq::cluster::wire
