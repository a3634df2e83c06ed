// Talking to one peer broker, for every layer that does (cluster/, raft/, groups/, txn/, the front ends): every
// request gets this broker's identity, the token the peer expects (its own, or the cluster's) and, on the control
// plane, the controller claim it is made under; then it goes through the transport with the configured PeerTimeout.
// Every answer (or its absence) is counted per peer, route and status in `moonmq_cluster_peer_requests_total` and
// sets `moonmq_cluster_peer_up`.
// Thread safety: call() may be used concurrently.
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "moonmq/core/metrics_sink.hpp"
#include "moonmq/transport/controller_claim.hpp"
#include "moonmq/transport/transport.hpp"

namespace moonmq::transport {

namespace metrics {

inline constexpr std::array<double, 10> round_trip_seconds{0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                           0.025,  0.05,  0.1,    0.25,  1};
inline constexpr metric_family peer_requests{"moonmq_cluster_peer_requests_total",
                                             "Requests to peers {peer; route; code: HTTP status, or 0 for no answer}",
                                             metric_kind::counter};
inline constexpr metric_family peer_request_duration{"moonmq_cluster_peer_request_duration_seconds",
                                                     "Round trip of requests to peers {peer}", metric_kind::histogram,
                                                     round_trip_seconds};
inline constexpr metric_family peer_up{"moonmq_cluster_peer_up",
                                       "1 when the last request to the peer got an answer {peer}", metric_kind::gauge};

}  // namespace metrics

struct peer_directory {
  broker_id self;
  std::string token;                               ///< Cluster.Token
  std::map<std::string, std::string> peer_tokens;  ///< peer id -> its own token (overrides Cluster.Token)
  std::chrono::milliseconds timeout{5000};         ///< PeerTimeout
};

class peer_client {
 public:
  peer_client(transport& t, peer_directory dir, metrics_sink& metrics = no_metrics())
      : transport_(t), dir_(std::move(dir)), metrics_(metrics) {}

  const peer_directory& directory() const noexcept { return dir_; }

  /// Sends `req` to `peer`; with `claim`, as a fenced control-plane request.
  asio::awaitable<response> call(const std::string& peer, request req,
                                            std::optional<controller_claim> claim = std::nullopt) {
    stamp(peer, req, claim);
    std::string route = req.path;
    const auto start = std::chrono::steady_clock::now();
    response r = co_await transport_.send(peer, std::move(req), dir_.timeout);
    count(peer, route, r.status, start);
    co_return r;
  }

  /// call() on the calling thread, when the transport can (see send_now).
  std::optional<response> call_now(const std::string& peer, request req,
                                              std::optional<controller_claim> claim = std::nullopt) {
    stamp(peer, req, claim);
    const auto start = std::chrono::steady_clock::now();
    auto r = transport_.send_now(peer, req, dir_.timeout);
    if (r) count(peer, req.path, r->status, start);
    return r;
  }

 private:
  void count(const std::string& peer, const std::string& route, int code,
             std::chrono::steady_clock::time_point start) const {
    metrics_.add(metrics::peer_requests, {{"peer", peer}, {"route", route}, {"code", std::to_string(code)}}, 1);
    metrics_.set(metrics::peer_up, {{"peer", peer}}, code != 0 ? 1 : 0);
    metrics_.observe(metrics::peer_request_duration, {{"peer", peer}},
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }

  /// This broker's identity, the token `peer` expects and, on the control plane, the claim.
  void stamp(const std::string& peer, request& req, const std::optional<controller_claim>& claim) const {
    auto own = dir_.peer_tokens.find(peer);
    const std::string& token = own != dir_.peer_tokens.end() && !own->second.empty() ? own->second : dir_.token;
    if (!token.empty()) req.headers[header_token] = token;
    req.headers[header_from] = dir_.self.value();
    if (claim) {
      req.headers[header_epoch] = std::to_string(claim->claim_epoch.value());
      req.headers[header_controller] = claim->controller.value();
    }
  }

  transport& transport_;
  peer_directory dir_;
  metrics_sink& metrics_;
};

}  // namespace moonmq::transport
