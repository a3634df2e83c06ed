// The cluster endpoint's listener: lib's HTTP/1.1 server on Server.Cluster.Host:Port for the peers' requests, with
// the cluster's TLS (mutual when configured) and the cluster service's own authentication of each request head
// (docs/security.md, "The cluster listener").
#pragma once

#include <memory>
#include <optional>

#include "listener_refusals.hpp"
#include "moonmq/cluster/cluster_service.hpp"
#include "moonmq/cluster/config.hpp"
#include "moonmq/transport/http_transport.hpp"

namespace moonmq::daemon {

/// Binds and serves `service`. REQUIRES: `config.cluster` with a port.
result<std::unique_ptr<transport::http_listener>> start_cluster_listener(
    const cluster::server_config& config, const std::optional<transport::tls_options>& tls,
    cluster::cluster_service& service, listener_refusals& refusals, logger& log);

/// The TLS the cluster's links use (Cluster.Tls), if any.
std::optional<transport::tls_options> cluster_tls(const cluster::server_config& config);

}  // namespace moonmq::daemon
