// How this broker reaches its peers: the HTTP transport over Cluster.Peers (with Cluster.Tls when set) and the peer
// client every cluster request goes through, with the cluster's and each peer's token and PeerTimeout. A broker
// without Cluster has no peers and the same objects, idle.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moonmq/cluster/config.hpp"
#include "moonmq/transport/peer_client.hpp"
#include "moonmq/core/metrics_sink.hpp"
#include "moonmq/transport/http_transport.hpp"

namespace moonmq::daemon {

struct cluster_link {
  std::vector<std::string> peer_ids;
  std::map<std::string, std::string> peer_tokens;  ///< a peer's own token, where it has one
  std::string token;                               ///< the cluster's
  std::optional<transport::tls_options> tls;
  std::unique_ptr<transport::transport> transport;
  std::unique_ptr<transport::peer_client> peers;

  /// An error names the TLS file at fault.
  status open(const cluster::server_config& config, const broker_id& self, metrics_sink& metrics);
};

}  // namespace moonmq::daemon
