#include "client_listener.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "broker_metrics.hpp"

namespace moonmq::daemon {

result<std::unique_ptr<transport::http_listener>> start_client_listener(const client_listener_parts& p) {
  const auto& cfg = *p.config;
  transport::http_listener_options lo;
  lo.host = cfg.host;
  lo.port = cfg.port;
  lo.max_body_bytes = 64u << 20;
  lo.path_prefix = "/";
  lo.kept_headers = {"Authorization"};
  lo.on_refused = [refusals = p.refusals](transport::refusal_reason why, const std::string& client,
                                          const std::string& detail) {
    refusals->refused(listener::client, why, client, detail);
  };
  lo.admit = [auth = p.auth, metrics = p.metrics](const transport::request& head) {
    auto it = head.headers.find("Authorization");
    auto v = auth->judge(head.method, head.path, it == head.headers.end() ? std::string() : it->second);
    if (v.status == 200)
      return auth->enabled() && !role_needed(head.method, head.path) ? transport::admission::open_route()
                                                                      : transport::admission::trust();
    // Nothing of a refused request's path is kept as a label: a client cannot make series at will.
    metrics->observe(metrics::request_duration,
                     {{"method", "-"}, {"route", "refused"}, {"code", std::to_string(v.status)}}, 0.0);
    auto no = transport::error_response(v.status, v.status == 401 ? "unauthorized" : "forbidden", v.message);
    if (v.status == 401) no.headers.emplace_back("WWW-Authenticate", "Bearer");
    return transport::admission::refuse(std::move(no));
  };
  transport::http_server_limits limits;
  limits.max_connections = cfg.limits.max_client_connections;
  limits.max_unauthenticated = cfg.limits.max_unauthenticated_connections;
  limits.auth_timeout = std::chrono::milliseconds(cfg.limits.auth_timeout_ms);
  auto l = transport::start_http_listener(
      lo,
      [routes = p.routes, metrics = p.metrics](const transport::request& r) {
        const auto started = std::chrono::steady_clock::now();
        transport::response res;
        try {
          res = routes->dispatch(r);
        } catch (const std::exception& e) {  // answered 500 here so that the latency is observed like any answer
          res = transport::error_response(500, "internal", e.what());
        }
        // Paths that are no route are one label, so that a client cannot make series at will.
        const bool routed = res.status != 404 || routes->matches(r.method, r.path);
        metrics->observe(metrics::request_duration,
                         {{"method", routed ? r.method : std::string("-")},
                          {"route", routed ? metrics::route_of(r.path) : std::string("unmatched")},
                          {"code", std::to_string(res.status)}},
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
        return res;
      },
      limits);
  if (!l)
    return error{errc::unavailable, "client API (Server.Host/Server.Port): cannot listen on " + cfg.host + ":" +
                                        std::to_string(cfg.port) + ": " + bind_failure(cfg.host, cfg.port)};
  return l;
}

std::string bind_failure(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    return std::string("cannot resolve the host: ") + gai_strerror(rc);
  std::string why = "unknown reason";
  for (addrinfo* a = found; a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0) {
      why = errno == EADDRINUSE ? "the address is already in use (another process listens on it)"
                                : errno == EACCES ? "permission denied (a port below 1024 needs privileges)"
                                                  : errno == EADDRNOTAVAIL ? "no interface has this address"
                                                                           : std::strerror(errno);
    } else {
      why = "the address was free when tried again";
    }
    close(fd);
  }
  freeaddrinfo(found);
  return why;
}

}  // namespace moonmq::daemon
