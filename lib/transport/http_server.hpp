// The cluster listener, with the project's own HTTP/1.1 framing (http1.hpp), plain or under TLS (tls_context.hpp): a
// thread per connection (after the TLS handshake, when configured) reads a request, hands it to the handler and writes
// the answer with one system call each way.
//
// What an untrusted client can make it spend is bounded:
// - A request's head is authenticated (`http_listener_options::authenticate`) before a byte of its body is read:
//   401 and closed otherwise. A body over `max_body_bytes` is refused with 413 before it is read. A body's buffer
//   grows with what arrives, never sized up front from the Content-Length a client declared.
// - A connection that has not yet sent an authenticated request is *unauthenticated*: it must do so within
//   `auth_timeout` of being accepted (TLS handshake included), and at most `max_unauthenticated` are open at once;
//   a new connection past that evicts the oldest unauthenticated one. So connections that never authenticate (or
//   dribble a head a byte at a time) cannot crowd out a peer: its new connection takes a slot and authenticates
//   with its first request, within a round trip.
// - Once a head has arrived, the rest of the request must arrive within `request_timeout`.
// - Connections live for keep-alive until idle for `idle_timeout`; at most `max_connections` are served at once,
//   further ones get 503 (or, under TLS, are closed) at once.
// Internal to lib/ (and its tests).
// Thread safety: stop() may be called from any thread, once or more; the destructor stops.
#pragma once

#include <chrono>
#include <memory>

#include "moonmq/transport/http_transport.hpp"

namespace moonmq::transport {

/// Binds `options.host:options.port` (0: any free port) and serves until stop(); HTTPS when `options.tls` is set (an
/// error names a TLS file that cannot be used).
result<std::unique_ptr<http_listener>> start_http_server(const http_listener_options& options,
                                                         http_listener::handler handler,
                                                         http_server_limits limits = {});

}  // namespace moonmq::transport
