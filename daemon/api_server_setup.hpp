// Settings for moonmqd's client API server (cpp-httplib; the cluster listener has its own HTTP/1.1 server in
// lib/transport/http_server).
#pragma once

#include <httplib.h>
#include <sys/socket.h>

namespace moonmq::transport {

/// TCP_NODELAY, long-lived keep-alive connections, and a port that is this process's alone: cpp-httplib's default
/// SO_REUSEPORT would let a second broker bind the same port and silently take half of its traffic. Only SO_REUSEADDR
/// (fast restarts) is kept.
inline void setup_http_server(httplib::Server& server) {
  server.set_tcp_nodelay(true);
  // Keep connections open: cpp-httplib closes one after 5 requests by default, and a new TCP handshake per five
  // requests costs more than the request itself.
  server.set_keep_alive_max_count(1u << 20);
  server.set_keep_alive_timeout(30);
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
}

}  // namespace moonmq::transport
