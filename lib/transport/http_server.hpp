// The cluster listener, with the project's own HTTP/1.1 framing (http1.hpp), plain or under TLS (tls_context.hpp): a
// thread per connection (after the TLS handshake, when configured) reads a request, hands it to the handler and writes
// the answer with one system call each way. A body is received straight into the request (no chunk-by-chunk copy)
// and refused with 413 before a byte of it is read when its Content-Length is over the limit. Connections live for
// keep-alive until idle for `idle_timeout`; at most `max_connections` are served at once, further ones get 503 (or,
// under TLS, are closed) at once.
// Internal to lib/ (and its tests).
// Thread safety: stop() may be called from any thread, once or more; the destructor stops.
#pragma once

#include <chrono>
#include <memory>

#include "moonmq/transport/http_transport.hpp"

namespace moonmq::transport {

struct http_server_limits {
  std::chrono::milliseconds idle_timeout{30'000};  ///< also the longest wait for the rest of a started request
  std::size_t max_connections = 256;
  std::size_t max_head_bytes = 64u << 10;  ///< request line and fields; larger gets 431
};

/// Binds `options.host:options.port` (0: any free port) and serves until stop(); HTTPS when `options.tls` is set (an
/// error names a TLS file that cannot be used).
result<std::unique_ptr<http_listener>> start_http_server(const http_listener_options& options,
                                                         http_listener::handler handler,
                                                         http_server_limits limits = {});

}  // namespace moonmq::transport
