#include "cluster_listener.hpp"

namespace moonmq::daemon {

std::optional<transport::tls_options> cluster_tls(const cluster::server_config& config) {
  if (!config.cluster || !config.cluster->tls) return std::nullopt;
  const auto& t = *config.cluster->tls;
  return transport::tls_options{t.cert_file, t.key_file, t.ca_file, t.verify_peer};
}

result<std::unique_ptr<transport::http_listener>> start_cluster_listener(
    const cluster::server_config& config, const std::optional<transport::tls_options>& tls,
    cluster::cluster_service& service, listener_refusals& refusals, logger& log) {
  transport::http_listener_options lo;
  lo.host = config.cluster->host;
  lo.port = *config.cluster->port;
  lo.tls = tls;
  lo.max_body_bytes = config.cluster->max_body_bytes;
  lo.on_refused = [&refusals](transport::refusal_reason why, const std::string& client, const std::string& detail) {
    refusals.refused(listener::cluster, why, client, detail);
  };
  lo.authenticate = [&service](const transport::request& head) { return service.authenticated(head); };
  auto l = transport::start_http_listener(lo, [&service](const transport::request& r) { return service.handle(r); });
  if (!l) return error{l.code(), "cluster listener: " + l.message()};
  log.info("moonmqd", "cluster endpoint on " + lo.host + ":" + std::to_string((*l)->port()) +
                          (tls ? " (TLS" + std::string(tls->verify_peer ? ", mutual)" : ")") : ""));
  return l;
}

}  // namespace moonmq::daemon
