// The client API's listener: lib's HTTP/1.1 server on Server.Host:Server.Port with the client API's admission. The
// caller's token and role are judged from the request head (client_auth), before a byte of its body is read; a
// connection must present valid credentials within Server.Limits.AuthTimeoutMs, and at most
// MaxUnauthenticatedConnections wait to (a new one evicts the oldest), so that connections that never authenticate
// cannot take the threads or memory of one that does. Open routes are answered without trusting the connection.
// Every admitted request goes to the routes, and its latency is observed by route (docs/security.md, "Admission").
#pragma once

#include <memory>

#include "api_routes.hpp"
#include "client_auth.hpp"
#include "listener_refusals.hpp"
#include "moonmq/cluster/config.hpp"
#include "moonmq/core/metrics_sink.hpp"
#include "moonmq/transport/http_transport.hpp"

namespace moonmq::daemon {

struct client_listener_parts {
  const cluster::server_config* config;
  const client_auth* auth;
  const api_routes* routes;  ///< every route registered before the listener starts
  metrics_sink* metrics;
  listener_refusals* refusals;
};

/// Binds and serves; an error names the address and why it cannot be bound.
result<std::unique_ptr<transport::http_listener>> start_client_listener(const client_listener_parts& p);

/// Why binding host:port fails, found by trying it again.
std::string bind_failure(const std::string& host, std::uint16_t port);

}  // namespace moonmq::daemon
