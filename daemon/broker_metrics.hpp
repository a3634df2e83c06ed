// What moonmqd counts about its own storage and API (beside the cluster layer's and the front ends' families):
// bytes held (served and not), partitions, and the client API's latency by route.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "moonmq/cluster/cluster_metrics.hpp"
#include "moonmq/core/metrics_sink.hpp"
#include "moonmq/transport/http_transport.hpp"

namespace moonmq::daemon::metrics {

inline constexpr metric_family stored_bytes{
    "moonmq_broker_stored_bytes",
    "Bytes of partition logs on this broker's disk {state: served, unserved (copies left by moves, see reclaim), "
    "stray (logs the topic catalog did not make here, never served)}",
    metric_kind::gauge};
inline constexpr metric_family partitions{"moonmq_broker_partitions",
                                          "Partitions in this broker's store {state: served, unserved, stray}",
                                          metric_kind::gauge};
inline constexpr metric_family client_refusals{
    "moonmq_http_refusals_total",
    "Client API connections and requests turned away before any route saw them {reason: unauthenticated (evicted, "
    "past Server.Limits.AuthTimeoutMs, or wrong credentials), forbidden (a role that may not), busy (past "
    "MaxClientConnections), malformed, too_large, slow}",
    metric_kind::counter};
inline constexpr std::array<double, 12> request_seconds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                           0.05,   0.1,   0.25,   0.5,   1,    5};
inline constexpr metric_family request_duration{
    "moonmq_http_request_duration_seconds", "Client API requests, received to answered {method, route, code}",
    metric_kind::histogram, request_seconds};

/// A request path as a route pattern, so that topic names and ids do not become labels:
/// /v1/topics/orders/partitions/3/records -> /v1/topics/{}/partitions/{}/records. A path of no route is "unmatched":
/// the labels stay a fixed set whatever clients send.
inline std::string route_of(std::string_view path) {
  static constexpr std::string_view routes[] = {
      "/v1/health", "/livez", "/readyz", "/metrics", "/ui", "/ui/console.js", "/ui/console.css", "/ui/index.html",
      "/v1/topics", "/v1/topics/{}/partitions", "/v1/topics/{}/records", "/v1/topics/{}/partitions/{}/records",
      "/v1/groups", "/v1/groups/{}", "/v1/groups/{}/join", "/v1/groups/{}/heartbeat", "/v1/groups/{}/leave",
      "/v1/groups/{}/offsets", "/v1/producers", "/v1/transactions", "/v1/transactions/{}",
      "/v1/transactions/{}/commit", "/v1/transactions/{}/abort", "/v1/transactions/{}/offsets", "/v1/cluster",
      "/v1/reassignments", "/v1/reassignments/{}", "/v1/reassignments/throttle", "/v1/brokers", "/v1/partitions",
      "/v1/brokers/{}/drain", "/v1/brokers/{}/reclaim", "/v1/autobalancer", "/v1/autobalancer/snapshot",
      "/v1/autobalancer/pause", "/v1/autobalancer/resume"};
  static constexpr std::string_view words[] = {
      "v1",          "topics",   "partitions", "records",    "groups",        "offsets", "join",     "heartbeat",
      "leave",       "producers", "transactions", "commit",  "abort",         "reassignments", "throttle", "brokers",
      "drain",       "reclaim",  "autobalancer", "pause",    "resume",        "cluster", "health",   "livez",
      "readyz",      "metrics",  "ui",         "console.js", "console.css", "index.html", "snapshot"};
  std::string out;
  std::size_t at = 0;
  while (at < path.size()) {
    if (path[at] == '/') {
      ++at;
      continue;
    }
    std::size_t end = path.find('/', at);
    if (end == std::string_view::npos) end = path.size();
    std::string_view seg = path.substr(at, end - at);
    bool known = false;
    for (auto w : words) known = known || seg == w;
    out += "/";
    out += known ? std::string(seg) : std::string("{}");
    at = end;
    if (out.size() > 64) return "unmatched";
  }
  for (auto r : routes)
    if (out == r) return out;
  return "unmatched";
}

}  // namespace moonmq::daemon::metrics

namespace moonmq::daemon {

/// The build's version, and every counter at zero from the start, so that rate() sees its first increase.
inline void seed_counters(metrics_sink& m) {
  m.set(cluster::metrics::build_info, {{"version", MOONMQ_VERSION}}, 1);
  m.set(cluster::metrics::ab_enabled, 0);
  m.set(cluster::metrics::moves_in_progress, 0);
  for (const char* r : {"succeeded", "failed", "cancelled"}) m.add(cluster::metrics::moves, {{"result", r}}, 0);
  m.add(cluster::metrics::move_bytes, 0);
  for (auto r : {transport::refusal_reason::tls, transport::refusal_reason::malformed,
                 transport::refusal_reason::too_large, transport::refusal_reason::busy})
    m.add(cluster::metrics::listener_refusals, {{"reason", transport::to_string(r)}}, 0);
  m.add(cluster::metrics::forwarded_records, 0);
  m.add(cluster::metrics::fence_rejections, 0);
}

}  // namespace moonmq::daemon
