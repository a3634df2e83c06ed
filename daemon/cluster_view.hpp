// What every broker of the cluster says, asked on demand: each peer in parallel (one slow or dead peer costs one peer
// timeout, not one per peer), this broker itself directly. The client API's cluster-wide routes are built on it, so
// that any broker answers for the whole cluster with or without Raft, never from stale local notes.
// Thread safety: const members may be called from any thread (each call makes its own requests).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "moonmq/cluster/config.hpp"
#include "moonmq/cluster/local_loads.hpp"
#include "moonmq/transport/peer_client.hpp"
#include "moonmq/cluster/peer_fanout.hpp"
#include "moonmq/transport/message.hpp"

namespace moonmq::daemon {

using cluster::peer_answer;
using cluster::describe_answer;

/// One broker as it reported itself.
struct broker_report {
  std::string id;
  std::string address;  ///< host:port of its cluster endpoint ("" for this broker without one)
  bool self = false;
  bool reachable = false;
  std::string error;  ///< why it is not reachable
  std::vector<cluster::partition_load> partitions;  ///< the partitions it serves
  std::uint64_t held_bytes = 0;  ///< bytes of copies it holds without serving them (until reclaimed)
  std::vector<cluster::partition_load> strays;  ///< logs the topic catalog did not make there (never served)
};

/// A change applied on every broker: who took it and who did not (with why).
struct fanout_result {
  std::vector<std::string> applied;
  std::vector<std::pair<std::string, std::string>> failed;  ///< broker, why
};

class cluster_view {
 public:
  /// `local`: this broker's own report (its partitions, held bytes and strays; the rest is filled in here).
  cluster_view(broker_id self, std::vector<cluster::peer_config> peers, transport::peer_client& client,
               std::function<broker_report()> local)
      : self_(std::move(self)), peers_(std::move(peers)), client_(client), local_(std::move(local)) {}

  const broker_id& self() const { return self_; }
  const std::vector<cluster::peer_config>& peers() const { return peers_; }
  bool is_peer(const std::string& id) const;

  /// Sends `req` to every peer at once and waits for all answers (each within the peer timeout).
  std::vector<peer_answer> ask_peers(const transport::request& req) const;

  /// Sends `req` to one peer; status 0 when it does not answer.
  transport::response ask(const std::string& peer, const transport::request& req) const;

  /// A change everywhere: `here` is its outcome on this broker (applied first), then `req` goes to every peer.
  fanout_result apply_everywhere(const status& here, const transport::request& req) const;

  /// Every broker, this one first, with the partitions it serves.
  std::vector<broker_report> brokers() const;

 private:
  broker_id self_;
  std::vector<cluster::peer_config> peers_;
  transport::peer_client& client_;
  std::function<broker_report()> local_;
};

}  // namespace moonmq::daemon
