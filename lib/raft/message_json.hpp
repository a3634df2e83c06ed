// Raft messages on the wire: JSON bodies of POST /cluster/raft/{vote,append,snapshot}. Internal to lib/.
#pragma once

#include <rapidjson/document.h>

#include <optional>
#include <string>

#include "json/writer.hpp"
#include "moonmq/raft/message.hpp"

namespace moonmq::raft::wire {

/// The route a message travels on: vote (PreVote and Vote and their replies), snapshot, or append (the rest).
inline const char* route_of(message_type t) {
  switch (t) {
    case message_type::pre_vote:
    case message_type::pre_vote_reply:
    case message_type::vote:
    case message_type::vote_reply:
      return "/cluster/raft/vote";
    case message_type::snapshot:
      return "/cluster/raft/snapshot";
    default:
      return "/cluster/raft/append";
  }
}

inline std::string encode(const message& m) {
  return json::object([&](json::writer& w) {
    json::put(w, "type", message_type_name(m.type));
    json::put(w, "from", m.from);
    json::put(w, "to", m.to);
    w.Key("term");
    w.Uint64(m.term);
    w.Key("last_index");
    w.Uint64(m.last_index);
    w.Key("last_term");
    w.Uint64(m.last_term);
    w.Key("accepted");
    w.Bool(m.accepted);
    w.Key("prev_index");
    w.Uint64(m.prev_index);
    w.Key("prev_term");
    w.Uint64(m.prev_term);
    w.Key("commit");
    w.Uint64(m.commit);
    w.Key("match");
    w.Uint64(m.match);
    w.Key("entries");
    w.StartArray();
    for (const auto& e : m.entries) {
      w.StartObject();
      w.Key("term");
      w.Uint64(e.term);
      w.Key("index");
      w.Uint64(e.index);
      w.Key("kind");
      w.Uint(static_cast<unsigned>(e.kind));
      json::put(w, "data", e.data);
      w.EndObject();
    }
    w.EndArray();
    if (m.snap) {
      w.Key("snapshot");
      w.StartObject();
      w.Key("index");
      w.Uint64(m.snap->index);
      w.Key("term");
      w.Uint64(m.snap->term);
      json::put(w, "data", m.snap->data);
      w.EndObject();
    }
  });
}

/// The message in `body`; nullopt when it is not one (the route answers 400).
inline std::optional<message> decode(const std::string& body) {
  rapidjson::Document d;
  d.Parse(body.c_str(), body.size());
  if (d.HasParseError() || !d.IsObject()) return std::nullopt;
  auto u64 = [](const rapidjson::Value& o, const char* k) -> std::optional<std::uint64_t> {
    if (!o.HasMember(k) || !o[k].IsUint64()) return std::nullopt;
    return o[k].GetUint64();
  };
  auto str = [](const rapidjson::Value& o, const char* k) -> std::optional<std::string> {
    if (!o.HasMember(k) || !o[k].IsString()) return std::nullopt;
    return std::string(o[k].GetString(), o[k].GetStringLength());
  };
  message m;
  auto type = str(d, "type");
  bool known = false;
  for (auto t : {message_type::pre_vote, message_type::pre_vote_reply, message_type::vote, message_type::vote_reply,
                 message_type::append, message_type::append_reply, message_type::snapshot})
    if (type && *type == message_type_name(t)) {
      m.type = t;
      known = true;
    }
  auto from = str(d, "from"), to = str(d, "to");
  auto term = u64(d, "term"), li = u64(d, "last_index"), lt = u64(d, "last_term"), pi = u64(d, "prev_index"),
       pt = u64(d, "prev_term"), commit = u64(d, "commit"), match = u64(d, "match");
  if (!known || !from || !to || !term || !li || !lt || !pi || !pt || !commit || !match || !d.HasMember("accepted") ||
      !d["accepted"].IsBool() || !d.HasMember("entries") || !d["entries"].IsArray())
    return std::nullopt;
  m.from = *from;
  m.to = *to;
  m.term = *term;
  m.last_index = *li;
  m.last_term = *lt;
  m.prev_index = *pi;
  m.prev_term = *pt;
  m.commit = *commit;
  m.match = *match;
  m.accepted = d["accepted"].GetBool();
  for (const auto& e : d["entries"].GetArray()) {
    if (!e.IsObject()) return std::nullopt;
    auto et = u64(e, "term"), ei = u64(e, "index"), ek = u64(e, "kind");
    auto data = str(e, "data");
    if (!et || !ei || !ek || !data || (*ek != 1 && *ek != 2)) return std::nullopt;
    m.entries.push_back({*et, *ei, static_cast<entry_kind>(*ek), *data});
  }
  if (d.HasMember("snapshot")) {
    const auto& s = d["snapshot"];
    if (!s.IsObject()) return std::nullopt;
    auto si = u64(s, "index"), st = u64(s, "term");
    auto data = str(s, "data");
    if (!si || !st || !data) return std::nullopt;
    m.snap = snapshot{*si, *st, *data};
  }
  return m;
}

}  // namespace moonmq::raft::wire
