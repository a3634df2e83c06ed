#include "cluster_link.hpp"

#include "cluster_listener.hpp"

namespace moonmq::daemon {

status cluster_link::open(const cluster::server_config& config, const broker_id& self, metrics_sink& metrics) {
  transport::http_transport_options options;
  if (config.cluster) {
    for (const auto& p : config.cluster->peers) {
      peer_tokens[p.id] = p.token;
      peer_ids.push_back(p.id);
      options.peers.push_back({p.id, p.host, p.port});
    }
    tls = cluster_tls(config);
    options.tls = tls;
    token = config.cluster->token;
  }
  auto made = transport::make_http_transport(options);
  if (!made) return error{made.code(), "cluster TLS: " + made.message()};
  transport = std::move(*made);
  const auto timeout = std::chrono::milliseconds(
      static_cast<long>((config.cluster ? config.cluster->peer_timeout_seconds : 5.0) * 1000));
  peers = std::make_unique<transport::peer_client>(
      *transport, transport::peer_directory{self, token, peer_tokens, timeout}, metrics);
  return {};
}

}  // namespace moonmq::daemon
