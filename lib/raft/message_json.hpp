// Raft messages on the wire: JSON bodies of POST /cluster/raft/{vote,append,snapshot,propose}, read strictly (an
// error names the field). Internal to lib/.
#pragma once

#include <rapidjson/document.h>

#include <optional>
#include <string>

#include "json/object_reader.hpp"
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
    json::put(w, "term", m.term);
    json::put(w, "last_index", m.last_index);
    json::put(w, "last_term", m.last_term);
    json::put(w, "accepted", m.accepted);
    json::put(w, "prev_index", m.prev_index);
    json::put(w, "prev_term", m.prev_term);
    json::put(w, "commit", m.commit);
    json::put(w, "match", m.match);
    w.Key("entries");
    w.StartArray();
    for (const auto& e : m.entries) {
      w.StartObject();
      json::put(w, "term", e.term);
      json::put(w, "index", e.index);
      json::put(w, "kind", static_cast<unsigned>(e.kind));
      json::put(w, "data", e.data);
      w.EndObject();
    }
    w.EndArray();
    if (m.snap) {
      w.Key("snapshot");
      w.StartObject();
      json::put(w, "index", m.snap->index);
      json::put(w, "term", m.snap->term);
      json::put(w, "data", m.snap->data);
      w.EndObject();
    }
  });
}

namespace detail {

inline void read_entry_kind(json::object_reader& r, entry_kind& out) {
  std::uint32_t kind = 0;
  if (!r.get("kind", kind, true)) return;
  if (!known_entry_kind(kind)) r.fail("kind", "expected 1 (controller), 2 (owner) or 3 (topic)");
  out = static_cast<entry_kind>(kind);
}

}  // namespace detail

/// The message in `body`; an error names the field at fault (the route answers 400 with it).
inline result<message> decode(const std::string& body) {
  rapidjson::Document d;
  if (auto s = json::parse_document(body, d, "body"); !s) return s.err();
  json::object_reader r(d, "");
  message m;
  std::string type;
  if (r.get("type", type, true)) {
    bool known = false;
    for (auto t : {message_type::pre_vote, message_type::pre_vote_reply, message_type::vote, message_type::vote_reply,
                   message_type::append, message_type::append_reply, message_type::snapshot})
      if (type == message_type_name(t)) {
        m.type = t;
        known = true;
      }
    if (!known) r.fail("type", "'" + type + "' is not a Raft message type");
  }
  r.get("from", m.from, true);
  r.get("to", m.to, true);
  r.get("term", m.term, true);
  r.get("last_index", m.last_index, true);
  r.get("last_term", m.last_term, true);
  r.get("accepted", m.accepted, true);
  r.get("prev_index", m.prev_index, true);
  r.get("prev_term", m.prev_term, true);
  r.get("commit", m.commit, true);
  r.get("match", m.match, true);
  const auto* list = r.member("entries");
  if (r.ok() && (!list || !list->IsArray())) r.fail("entries", "expected an array");
  for (rapidjson::SizeType i = 0; r.ok() && i < list->Size(); ++i) {
    json::object_reader er((*list)[i], r.child_path("entries") + "[" + std::to_string(i) + "]");
    entry e;
    er.get("term", e.term, true);
    er.get("index", e.index, true);
    detail::read_entry_kind(er, e.kind);
    er.get("data", e.data, true);
    if (auto s = er.finish(); !s) return s.err();
    m.entries.push_back(std::move(e));
  }
  if (const auto* s = r.member("snapshot"); s && r.ok()) {
    json::object_reader sr(*s, r.child_path("snapshot"));
    snapshot snap;
    sr.get("index", snap.index, true);
    sr.get("term", snap.term, true);
    sr.get("data", snap.data, true);
    if (auto st = sr.finish(); !st) return st.err();
    m.snap = std::move(snap);
  }
  if (auto s = r.finish(); !s) return s.err();
  return m;
}

/// A follower's request to the leader to append an entry (POST /cluster/raft/propose): {"kind": 1|2, "data": "..."}.
struct proposal {
  entry_kind kind = entry_kind::owner;
  std::string data;
};

inline std::string encode(const proposal& p) {
  return json::object([&](json::writer& w) {
    json::put(w, "kind", static_cast<unsigned>(p.kind));
    json::put(w, "data", p.data);
  });
}

inline result<proposal> decode_proposal(const std::string& body) {
  rapidjson::Document d;
  if (auto s = json::parse_document(body, d, "body"); !s) return s.err();
  json::object_reader r(d, "");
  proposal p;
  detail::read_entry_kind(r, p.kind);
  r.get("data", p.data, true);
  if (auto s = r.finish(); !s) return s.err();
  return p;
}

/// The leader's answer to a proposal: {"index": N}, the entry's index once it is applied on the leader.
inline std::string encode_appended(index_t index) { return "{\"index\":" + std::to_string(index) + "}"; }

inline result<index_t> decode_appended(const std::string& body) {
  rapidjson::Document d;
  if (auto s = json::parse_document(body, d, "answer"); !s) return s.err();
  json::object_reader r(d, "");
  index_t index = 0;
  r.get("index", index, true);
  if (auto s = r.finish(); !s) return s.err();
  return index;
}

}  // namespace moonmq::raft::wire
