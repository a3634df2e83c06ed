// The seam the cluster layer talks to peers through: send one request to a peer and await its response.
//
// `send` never throws for expected failures: a peer that cannot be reached, refuses the connection or does not answer
// before the deadline yields a response with status 0 and a message in its body. Implementations: HTTP over
// HTTP (lib/, http_transport.hpp) and the in-memory loopback with fault injection (loopback_transport.hpp).
// The awaiting coroutine resumes on its own executor.
// Thread safety: send may be called concurrently.
#pragma once

#include <asio/awaitable.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "moonmq/transport/message.hpp"

namespace moonmq::transport {

class transport {
 public:
  virtual ~transport() = default;
  /// Sends `req` to peer `peer` (a configured peer id) and returns its response, or status 0 after `timeout`.
  virtual asio::awaitable<response> send(const std::string& peer, request req, std::chrono::milliseconds timeout) = 0;

  /// The same request performed on the calling thread, for callers that may block (a listener's worker thread),
  /// saving two thread hops. nullopt when the implementation cannot (the default): use send().
  virtual std::optional<response> send_now(const std::string& /*peer*/, const request& /*req*/,
                                           std::chrono::milliseconds /*timeout*/) {
    return std::nullopt;
  }
};

/// A response that says the peer did not answer.
inline response no_answer(const std::string& peer, const std::string& why) {
  return error_response(0, "unavailable", "peer " + peer + ": " + why);
}

}  // namespace moonmq::transport
