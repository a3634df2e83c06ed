// The transport and the listener over HTTP(S), with the project's own HTTP/1.1 framing and OpenSSL (compiled in lib/
// only; docs/cluster.md, "HTTP details that matter").
//
// Client side: per peer, a few keep-alive connections with TCP_NODELAY (without it, Nagle's algorithm meets delayed
// ACKs and every request pays ~40 ms) and a small thread pool of its own that runs the blocking calls, so a peer
// that does not answer ties up only its own threads: it never delays requests to the others. Each request has the
// deadline it is sent with. With TLS, every connection is HTTPS; `verify` checks the peer's certificate against the
// CA and the address dialled (and presents this broker's certificate, for mutual TLS).
//
// Server side: the cluster listener serves every /cluster/* route through a cluster_service, HTTPS when TLS is
// configured (with a client CA, a client without a trusted certificate is refused during the handshake), with a
// body size limit (413) and TCP_NODELAY.
// Thread safety: send() may be called concurrently; the listener runs its own threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moonmq/core/result.hpp"
#include "moonmq/transport/transport.hpp"

namespace moonmq::transport {

struct tls_options {
  std::string cert_file;  ///< this broker's certificate (presented as server, and as client for mutual TLS)
  std::string key_file;
  std::string ca_file;  ///< trusted CA for peers' certificates
  bool verify_peer = false;
};

struct http_peer {
  std::string id;
  std::string host;
  std::uint16_t port = 0;
};

struct http_transport_options {
  std::vector<http_peer> peers;
  std::optional<tls_options> tls;
  std::size_t connections_per_peer = 4;
};

/// The transport to `options.peers`; an error names a TLS file that cannot be read or used.
result<std::unique_ptr<transport>> make_http_transport(const http_transport_options& options);

/// Serves requests through `handler` until stop() or destruction.
class http_listener {
 public:
  using handler = std::function<response(const request&)>;

  virtual ~http_listener() = default;
  /// The port actually bound (useful with port 0).
  virtual std::uint16_t port() const = 0;
  virtual void stop() = 0;
};

/// Why the listener turned a connection or a request away before any handler saw it.
enum class refusal_reason {
  tls,        ///< the TLS handshake failed (e.g. no trusted client certificate under mutual TLS)
  malformed,  ///< a head it cannot take: 400, 411, 431, 501
  too_large,  ///< a body over max_body_bytes: 413
  busy,       ///< more connections than it serves at once: 503
  unauthenticated,  ///< a request head without valid credentials (401), or a connection that presented none in time
  slow,             ///< a request (or TLS handshake) that did not arrive whole within its deadline
  forbidden,        ///< valid credentials whose role may not make this request (403)
};

const char* to_string(refusal_reason r);

/// What a listener's `admit` says of a request head, before a byte of its body is read.
struct admission {
  enum class verdict {
    trusted,  ///< valid credentials: the connection is authenticated from now on
    open,     ///< a route that needs none (health, metrics): answered, but the connection stays unauthenticated
    refused,  ///< `refusal` is answered and the connection closed
  };
  verdict kind = verdict::trusted;
  response refusal;

  static admission trust() { return {}; }
  static admission open_route() { return {verdict::open, {}}; }
  static admission refuse(response r) { return {verdict::refused, std::move(r)}; }
};

struct http_listener_options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::optional<tls_options> tls;
  std::size_t max_body_bytes = 64u << 20;
  std::string path_prefix = "/cluster/";  ///< routes outside it answer 404
  /// Told of every refusal, with the client's address and what was wrong; called on listener threads, so it must be
  /// quick and thread-safe (moonmqd counts and logs them).
  std::function<void(refusal_reason, const std::string& client, const std::string& detail)> on_refused;
  /// Checks a request's credentials from its head alone (no body yet: `body` is empty), before a byte of the body is
  /// read or buffered; false answers 401 and closes the connection. Unset: every request is let in. Called on
  /// listener threads.
  std::function<bool(const request& head)> authenticate;
  /// Instead of `authenticate`, for a listener whose routes differ in what they need (the client API): judges a
  /// head with its own answer to a refusal.
  std::function<admission(const request& head)> admit;
  /// Request fields handed to the handler beside the cluster's own (X-Cluster-*, X-Controller-*), by their
  /// canonical spelling (matched case-insensitively); every other field is read and dropped.
  std::vector<std::string> kept_headers;
};

/// What an untrusted client can make a listener spend (see lib/transport/http_server.hpp for the rules).
struct http_server_limits {
  std::chrono::milliseconds idle_timeout{30'000};     ///< a keep-alive connection with no request
  std::chrono::milliseconds auth_timeout{10'000};     ///< accept to first authenticated head (TLS handshake included)
  std::chrono::milliseconds request_timeout{30'000};  ///< head received to the last byte of its body
  std::size_t max_connections = 256;       ///< served at once; further ones get 503
  std::size_t max_unauthenticated = 64;    ///< more evict the oldest of them
  std::size_t max_head_bytes = 64u << 10;  ///< request line and fields; larger gets 431
  std::size_t max_path_bytes = 8u << 10;   ///< the request target's path; longer gets 414 before any route sees it
};

/// Binds and starts serving in background threads; an error names the address or the TLS file at fault.
result<std::unique_ptr<http_listener>> start_http_listener(const http_listener_options& options,
                                                           http_listener::handler handler,
                                                           http_server_limits limits = {});

}  // namespace moonmq::transport
