// An inter-broker request and its response, independent of how they travel (HTTP in lib/, in-memory loopback in
// tests). Paths and headers are those of the wire contract (docs/cluster.md, "The inter-broker endpoint"); bodies are JSON, except migration and
// forwarded-produce batches, which carry record frames as they are.
// Thread safety: plain values.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "moonmq/core/result.hpp"

namespace moonmq::transport {

/// Header names, compared case-insensitively on the wire; stored here in this canonical spelling.
inline constexpr const char* header_token = "X-Cluster-Token";
inline constexpr const char* header_epoch = "X-Controller-Epoch";
inline constexpr const char* header_controller = "X-Controller-Id";
inline constexpr const char* header_from = "X-Cluster-From";

struct request {
  std::string method = "POST";
  std::string path;                           ///< e.g. "/cluster/append"
  std::map<std::string, std::string> params;  ///< query parameters
  std::map<std::string, std::string> headers;
  std::string body;
  std::string content_type = "application/json";
  /// Under mutual TLS, on the receiving side: the names the sender's verified certificate carries (its DNS names
  /// and common name); empty otherwise.
  std::vector<std::string> peer_names;
};

/// A GET of `path` (a request is otherwise a POST with a JSON body).
inline request get_request(std::string path) {
  request r;
  r.method = "GET";
  r.path = std::move(path);
  return r;
}

struct response {
  int status = 0;  ///< HTTP status; 0 = no answer (unreachable, timed out, dropped)
  std::string body;
  std::string content_type = "application/json";
  /// Further fields a listener sends with it (the client API's WWW-Authenticate, Location, Retry-After); the
  /// transport between brokers does not read them.
  std::vector<std::pair<std::string, std::string>> headers = {};

  bool ok() const noexcept { return status >= 200 && status < 300; }
};

/// A peer's refusal as the error it stands for, read the same way by every caller (the router, the reassigner, the
/// group and transaction routes): the code its body names (`{"error": NAME, "message"}`) when this side knows the
/// name and the HTTP status agrees with it, otherwise the code the status stands for (400 invalid_argument, 401
/// unauthorized, 404 not_found, 409 conflict, 416 offset_out_of_range, 421 not_owner, 429 resource_exhausted, 503
/// unavailable, anything else internal); no answer (status 0) is unavailable. The message is the body's own, or the
/// body as it came. REQUIRES: !r.ok().
error error_of(const response& r);

/// The HTTP status of the wire contract for a domain error.
inline int http_status_of(errc e) {
  switch (e) {
    case errc::invalid_argument:
      return 400;
    case errc::unauthorized:
      return 401;
    case errc::not_found:
      return 404;
    case errc::already_exists:
    case errc::conflict:
    case errc::producer_fenced:
    case errc::out_of_order_sequence:
    case errc::duplicate_sequence:
      return 409;
    case errc::not_owner:
      return 421;
    case errc::offset_out_of_range:
      return 416;
    case errc::resource_exhausted:
      return 429;
    case errc::unavailable:
      return 503;
    default:
      return 500;
  }
}

/// A JSON error body: {"error": code, "message": text}.
inline response error_response(int status, const std::string& code, const std::string& message) {
  std::string escaped;
  for (char c : message) {
    if (c == '"' || c == '\\') escaped += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      escaped += ' ';
      continue;
    }
    escaped += c;
  }
  return {status, "{\"error\":\"" + code + "\",\"message\":\"" + escaped + "\"}", "application/json"};
}

}  // namespace moonmq::transport
