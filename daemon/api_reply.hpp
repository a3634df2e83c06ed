// How moonmqd's client API answers: JSON bodies, errors as {"error": CODE, "message": ...}, and the parsing of path
// numbers and bodies every route file shares.
#pragma once

#include <httplib.h>
#include <rapidjson/document.h>

#include <charconv>
#include <optional>
#include <string>

#include "json/parse.hpp"
#include "json/writer.hpp"
#include "moonmq/cluster/peer_fanout.hpp"
#include "moonmq/core/result.hpp"
#include "moonmq/core/utf8.hpp"
#include "moonmq/transport/message.hpp"

namespace moonmq::daemon {

inline void reply(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, "application/json");
}

inline void reply_error(httplib::Response& res, int status, const std::string& code, const std::string& message) {
  reply(res, status, transport::error_response(status, code, message).body);
}

inline void reply_error(httplib::Response& res, const error& e) {
  reply_error(res, transport::http_status_of(e.code), errc_name(e.code), e.message);
}

/// Relays an answer of the cluster routes (a coordinator's, here or forwarded) to a client.
inline void relay(httplib::Response& res, const transport::response& r) {
  res.status = r.status;
  res.set_content(r.body, r.content_type.empty() ? "application/json" : r.content_type);
}

/// A client-chosen id (group, transactional id) from a path: 1 to 255 bytes of UTF-8 without control characters;
/// otherwise answers 400 naming `what` and returns false.
inline bool valid_client_id(const std::string& id, const char* what, httplib::Response& res) {
  if (valid_client_name(id)) return true;
  reply_error(res, 400, "invalid_argument",
              std::string("the ") + what + " must be 1 to 255 bytes of UTF-8 without control characters");
  return false;
}

template <typename F>
std::string json_object(F&& fill) {
  return json::object(std::forward<F>(fill));
}

/// A refusal because of a peer: {"error","message","peer":{"id","error","message"}}, the peer's own code and
/// message as fields (never its body inside the message).
inline void reply_peer_error(httplib::Response& res, int status, const std::string& code, const std::string& message,
                             const std::string& peer, const transport::response& answer) {
  const auto e = cluster::read_peer_error(answer);
  reply(res, status, json_object([&](json::writer& w) {
          json::put(w, "error", code);
          json::put(w, "message", message);
          w.Key("peer");
          w.StartObject();
          json::put(w, "id", peer);
          json::put(w, "error", e.error);
          json::put(w, "message", e.message);
          w.EndObject();
        }));
}

/// A whole number in [0, max]; nullopt for anything else (no exceptions, no silent wrap).
inline std::optional<std::uint64_t> whole_number(const std::string& s, std::uint64_t max) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v > max) return std::nullopt;
  return v;
}

/// Parses a JSON body; on failure answers 400 and returns false.
inline bool parse_body(const httplib::Request& req, httplib::Response& res, rapidjson::Document& doc) {
  if (auto s = json::parse_document(req.body, doc, "body"); !s) {
    reply_error(res, 400, "invalid_argument", s.message());
    return false;
  }
  return true;
}

/// Answers a change applied on every broker: 200, or 503 with `missed` as the message when a broker did not take it
/// (the operator must see it: that broker acts on its old state). `fields` writes what was changed; then the
/// "applied" and "failed" lists.
template <typename Result, typename F>
void reply_fanout(httplib::Response& res, const Result& r, const std::string& missed, F&& fields) {
  reply(res, r.failed.empty() ? 200 : 503, json_object([&](json::writer& w) {
          if (!r.failed.empty()) {
            json::put(w, "error", "unavailable");
            json::put(w, "message", missed);
          }
          fields(w);
          w.Key("applied");
          w.StartArray();
          for (const auto& b : r.applied) w.String(b.c_str(), static_cast<rapidjson::SizeType>(b.size()));
          w.EndArray();
          w.Key("failed");
          w.StartArray();
          for (const auto& [b, why] : r.failed) {
            w.StartObject();
            json::put(w, "broker", b);
            json::put(w, "error", why);
            w.EndObject();
          }
          w.EndArray();
        }));
}

}  // namespace moonmq::daemon
