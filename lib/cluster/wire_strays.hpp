// The steps of reconciling a stray (docs/cluster.md, "Reconciling a stray"), written by the broker that runs the
// operator's request (daemon/reconcile_api) and read by the broker that holds a log (its /cluster/admin/strays
// route), in one place each way:
//   POST /cluster/admin/strays  stray_step: {"action","topic","partition"[,"from","producer_id","resumed","appended"]}
//     check   -> stray_info as {"owner","producer_id","size_bytes"}
//     clear   -> {"cleared": bool}  (the served log emptied for the stray kept)
//     append  -> append_step as {"owner","next","done","copied","already","skipped","runs":[...]}
//     discard -> {}
// Internal to lib/ and the daemon.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <string>

#include "json/object_reader.hpp"
#include "json/parse.hpp"
#include "json/writer.hpp"
#include "moonmq/cluster/stray_reconciler.hpp"
#include "moonmq/core/topic_name.hpp"
#include "moonmq/transport/message.hpp"

namespace moonmq::cluster::wire {

struct stray_step {
  enum class kind { check, clear, append, discard };
  kind action = kind::check;
  topic_partition partition;
  std::uint64_t from = 0;         ///< append: the stray offset to resume from
  std::uint64_t producer_id = 0;  ///< clear: the producer the copies will be stamped with
  bool resumed = false;           ///< clear: a request run again (the log may start with the copies already)
  bool appended = false;          ///< discard: this stray was the one appended
};

inline const char* name_of(stray_step::kind k) {
  switch (k) {
    case stray_step::kind::check: return "check";
    case stray_step::kind::clear: return "clear";
    case stray_step::kind::append: return "append";
    case stray_step::kind::discard: return "discard";
  }
  return "check";
}

inline std::string write(const stray_step& s) {
  return json::object([&](json::writer& w) {
    json::put(w, "action", name_of(s.action));
    json::put(w, "topic", s.partition.topic);
    json::put(w, "partition", s.partition.partition);
    switch (s.action) {
      case stray_step::kind::append: json::put(w, "from", s.from); break;
      case stray_step::kind::clear:
        json::put(w, "producer_id", s.producer_id);
        json::put(w, "resumed", s.resumed);
        break;
      case stray_step::kind::discard: json::put(w, "appended", s.appended); break;
      case stray_step::kind::check: break;
    }
  });
}

/// Reads a step; errors name the field.
inline result<stray_step> read_stray_step(const std::string& body) {
  return json::read_object<stray_step>(body, "body", [](json::object_reader& r, stray_step& out) -> status {
    std::string action;
    std::int64_t partition = -1;
    r.get("action", action, true);
    r.get("topic", out.partition.topic, true);
    r.get("partition", partition, true);
    r.get("from", out.from);
    r.get("producer_id", out.producer_id);
    r.get("resumed", out.resumed);
    r.get("appended", out.appended);
    if (!r.ok()) return r.first_error();
    if (partition < 0 || partition > INT32_MAX) return error{errc::invalid_argument, "partition: out of range"};
    out.partition.partition = static_cast<std::int32_t>(partition);
    if (action == "check") out.action = stray_step::kind::check;
    else if (action == "clear") out.action = stray_step::kind::clear;
    else if (action == "append") out.action = stray_step::kind::append;
    else if (action == "discard") out.action = stray_step::kind::discard;
    else return error{errc::invalid_argument, "unknown action '" + action + "'"};
    return {};
  });
}

inline std::string write(const stray_info& i) {
  return json::object([&](json::writer& w) {
    json::put(w, "owner", i.owner.value());
    json::put(w, "producer_id", i.producer_id);
    json::put(w, "size_bytes", i.size_bytes);
  });
}

inline std::string write_cleared(bool cleared) {
  return json::object([&](json::writer& w) { json::put(w, "cleared", cleared); });
}

/// `"runs":[{"stray_first","stray_last","first","last"}, ...]`: an append step's, and the operator's answer's.
inline void write_runs(json::writer& w, const std::vector<appended_run>& runs) {
  w.Key("runs");
  w.StartArray();
  for (const auto& run : runs) {
    w.StartObject();
    json::put(w, "stray_first", run.stray_first);
    json::put(w, "stray_last", run.stray_last);
    json::put(w, "first", run.first);
    json::put(w, "last", run.last);
    w.EndObject();
  }
  w.EndArray();
}

inline std::string write(const append_step& a) {
  return json::object([&](json::writer& w) {
    json::put(w, "owner", a.owner.value());
    json::put(w, "next", a.next);
    json::put(w, "done", a.done);
    json::put(w, "copied", a.copied);
    json::put(w, "already", a.already);
    json::put(w, "skipped", a.skipped);
    write_runs(w, a.runs);
  });
}

/// A peer's answer to a check; an error when it is none or not this document. Answers are read leniently: a field
/// this version does not know is left alone.
inline result<stray_info> read_stray_info(const transport::response& a) {
  if (!a.ok()) return transport::error_of(a);
  rapidjson::Document d;
  if (auto s = json::parse_document(a.body, d, "the answer to check"); !s) return s.err();
  json::object_reader r(d, "");
  std::string owner;
  stray_info out;
  r.get("owner", owner, true);
  r.get("producer_id", out.producer_id, true);
  r.get("size_bytes", out.size_bytes);
  if (!r.ok()) return r.first_error().err();
  out.owner = broker_id(owner);
  return out;
}

/// A peer's answer to a clear: whether it emptied the served log.
inline result<bool> read_cleared(const transport::response& a) {
  if (!a.ok()) return transport::error_of(a);
  rapidjson::Document d;
  if (auto s = json::parse_document(a.body, d, "the answer to clear"); !s) return s.err();
  json::object_reader r(d, "");
  bool cleared = false;
  r.get("cleared", cleared, true);
  if (!r.ok()) return r.first_error().err();
  return cleared;
}

/// A peer's answer to an append step.
inline result<append_step> read_append_step(const transport::response& a) {
  if (!a.ok()) return transport::error_of(a);
  rapidjson::Document d;
  if (auto s = json::parse_document(a.body, d, "the answer to append"); !s) return s.err();
  json::object_reader r(d, "");
  std::string owner;
  append_step out;
  r.get("owner", owner);
  r.get("next", out.next, true);
  r.get("done", out.done, true);
  r.get("copied", out.copied);
  r.get("already", out.already);
  r.get("skipped", out.skipped);
  if (!r.ok()) return r.first_error().err();
  out.owner = broker_id(owner);
  if (const auto* runs = r.member("runs"); runs && runs->IsArray())
    for (const auto& v : runs->GetArray()) {
      if (!v.IsObject()) return error{errc::invalid_argument, "the answer to append: runs: objects"};
      json::object_reader rr(v, "runs");
      appended_run run;
      rr.get("stray_first", run.stray_first, true);
      rr.get("stray_last", run.stray_last, true);
      rr.get("first", run.first, true);
      rr.get("last", run.last, true);
      if (!rr.ok()) return rr.first_error().err();
      out.runs.push_back(run);
    }
  return out;
}

}  // namespace moonmq::cluster::wire
