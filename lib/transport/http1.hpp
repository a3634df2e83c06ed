// HTTP/1.1 framing for the connections between brokers (plain or TLS), client and server side: message heads,
// Content-Length bodies, percent-encoded query strings. It covers what brokers send each other and what an operator's
// curl sends a cluster listener; it refuses the rest (chunked request bodies, folded header lines) with a status.
// cpp-httplib, which serves moonmqd's client API, costs ~13 system calls per request on the server side and ~6 on
// the client side; this framing 1 or 2 on each (docs/cluster.md, "HTTP details that matter").
// Internal to lib/ (and its tests).
// Thread safety: plain functions and values.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "moonmq/core/result.hpp"
#include "moonmq/transport/message.hpp"

namespace moonmq::transport::http1 {

/// Header fields as received, in order.
struct fields {
  std::vector<std::pair<std::string, std::string>> list;

  /// The value of field `name` (compared case-insensitively), or nullptr.
  const std::string* find(std::string_view name) const;
};

struct request_head {
  std::string method;
  std::string path;  ///< percent-decoded
  std::map<std::string, std::string> params;
  fields headers;
  std::size_t content_length = 0;
  bool keep_alive = true;        ///< HTTP/1.1 without "Connection: close" (HTTP/1.0 only with "keep-alive")
  bool expect_continue = false;  ///< "Expect: 100-continue" (curl sends it before bodies over 1 KiB)
};

struct response_head {
  int status = 0;
  std::string content_type;
  std::optional<std::size_t> content_length;  ///< nullopt: the body runs until the connection closes
  bool keep_alive = true;
};

/// A request the server cannot take, with the status to answer (400, 411, 431, 501).
struct refusal {
  int status;
  std::string message;
};

/// Index just past the blank line ending the head at the start of `buffer`, or npos while it is incomplete.
std::size_t head_end(std::string_view buffer);

/// Parses a request head (request line and fields, up to and including the blank line).
std::variant<request_head, refusal> parse_request_head(std::string_view head);

/// Parses a response head; an error says what was malformed.
result<response_head> parse_response_head(std::string_view head);

/// The request head for `req` with a body of `body_size` bytes, ready to send before the body.
std::string request_head_text(const request& req, std::string_view host, std::size_t body_size);

/// The response head for a body of `body_size` bytes; `close` adds "Connection: close", and `extra` its fields
/// (names and values are the server's own, never a client's).
std::string response_head_text(int status, std::string_view content_type, std::size_t body_size, bool close,
                               const std::vector<std::pair<std::string, std::string>>& extra = {});

/// The most header fields a request may carry (more is refused with 431, as a head over its byte limit is).
inline constexpr std::size_t max_fields = 100;

/// RFC 3986 percent-encoding of everything but the unreserved characters.
std::string percent_encode(std::string_view text);

/// Decodes %XX escapes (and '+' as a space when `plus_is_space`, as in query strings); nullopt on a bad escape.
std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space);

}  // namespace moonmq::transport::http1
