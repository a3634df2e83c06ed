// The Kafka listener: Server.Kafka.Host:Port, two coroutines per connection on the listener's own reactor thread (one
// reads requests, read ahead within bounds once the client is authenticated; one handles them one at a time on a
// small pool, kafka_api, as a handler may block on the disk or a peer) and answered in the order they came (clients
// pipeline). Admission as on the client API (docs/security.md): at most MaxClientConnections
// connections (further ones are closed at once), at most MaxUnauthenticatedConnections of them not yet authenticated
// (a new one closes the oldest), an authentication deadline of AuthTimeoutMs, and every size prefix checked before a
// buffer is sized from it: 64 KiB before authentication, MaxRequestBytes after. Under Server.Kafka.Tls every
// connection starts with the TLS handshake, inside the authentication deadline.
// Thread safety: start() and stop() from one thread.
#pragma once

#include <memory>

#include "kafka_api.hpp"
#include "moonmq/core/result.hpp"

namespace moonmq::daemon {

class kafka_listener {
 public:
  ~kafka_listener();
  static result<std::unique_ptr<kafka_listener>> start(const cluster::server_config& cfg, kafka_api& api);
  std::uint16_t port() const;
  /// Closes the acceptor and every connection, and joins the threads.
  void stop();

 private:
  kafka_listener() = default;
  struct impl;
  std::shared_ptr<impl> m_;
};

}  // namespace moonmq::daemon
