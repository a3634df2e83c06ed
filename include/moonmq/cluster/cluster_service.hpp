// The inter-broker endpoint's route handlers, independent of transport: a request in, a response out. The HTTP
// listener (lib/) and the loopback network (tests) both call `handle`.
//
// Routes (docs/cluster.md, "The inter-broker endpoint"): ensure, append (a migration batch at an expected offset, or a forwarded produce at the
// end), owner (set and get), offsets, partition (end offset and prefix checksum, for resuming a move), loads and
// controller/claim, and reassign (fenced: the controller asks this broker to run a move) and moves (their progress).
// Every request must carry the sender's X-Cluster-Token (compared in constant time; a peer's own
// token overrides the cluster's); a wrong or missing token is 401 and nothing is done. Control-plane routes carrying
// X-Controller-Epoch / X-Controller-Id are checked against the fence: 409 for a superseded controller. Malformed
// bodies are 400 with a JSON error naming the field, oversized ones 413; nothing is half-applied. Raft routes go to
// the Raft service when there is one (never fenced: they establish the fence). Group and transaction routes answer
// 501 until they exist.
// Thread safety: handle() may be called concurrently.
#pragma once

#include <functional>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "moonmq/cluster/controller_fence.hpp"
#include "moonmq/cluster/move_progress.hpp"
#include "moonmq/cluster/ownership_table.hpp"
#include "moonmq/cluster/topic_catalog.hpp"
#include "moonmq/cluster/partition_gates.hpp"
#include "moonmq/cluster/producer_states.hpp"
#include "moonmq/cluster/traffic.hpp"
#include "moonmq/core/logger.hpp"
#include "moonmq/core/metrics_sink.hpp"
#include "moonmq/storage/offset_store.hpp"
#include "moonmq/storage/partition_store.hpp"
#include "moonmq/transport/message.hpp"

namespace moonmq::cluster {

/// How the reassign and moves routes reach this broker's Reassigner (empty: those routes answer 501).
struct move_control {
  std::function<result<std::uint64_t>(topic_partition, broker_id, std::optional<controller_claim>)> start;
  std::function<std::vector<move_progress>()> progress;
  std::function<status(std::uint64_t)> cancel;
  std::function<status(std::uint64_t)> set_throttle;
  std::function<bool(const topic_partition&)> busy;  ///< a move of it runs, is journaled or recovering here
  std::function<std::uint64_t()> throttle;
};

struct cluster_service_options {
  broker_id self;
  std::string token;                               ///< Cluster.Token ("" = no authentication: loopback only)
  std::map<std::string, std::string> peer_tokens;  ///< peer id -> its own token
  std::size_t max_body_bytes = 64u << 20;
  move_control moves;
  /// The /cluster/raft/* routes (with Raft on): exempt from the epoch fence, behind the same token. Empty: 501.
  std::function<transport::response(const transport::request&)> raft;
  /// The brokers allowed to call (Cluster.Peers). Non-empty: X-Cluster-From must be one of them.
  std::vector<std::string> peers;
  /// Under mutual TLS: the sender's certificate must name the broker its X-Cluster-From claims.
  bool require_certificate_identity = false;
  /// The /cluster/group/* routes (the broker's group coordinator), behind the same token; never fenced. Empty: 501.
  std::function<transport::response(const transport::request&)> groups;
  /// The /cluster/txn/* routes (transaction coordinator and partition owner), behind the same token; never fenced.
  std::function<transport::response(const transport::request&)> transactions;
  /// The /cluster/admin/* routes (an embedding broker's own operator actions, such as pausing its balance loop),
  /// behind the same token; never fenced. Empty: 404.
  std::function<transport::response(const transport::request&)> admin;
  /// /cluster/ensure of a topic the cluster's catalog lists (topic_directory::ensure_listed): no partition the
  /// catalog does not list, nothing of a deleted topic, each partition its first owner's. The third argument is the
  /// requester's record of the topic (its `"record"`), when its catalog lists it. nullopt (or empty): neither catalog
  /// lists it (made before topics were cluster metadata), and the requester owns what it asks for.
  std::function<std::optional<result<std::int32_t>>(const std::string&, std::int32_t, const std::optional<topic_record>&)>
      ensure_listed;
};

struct cluster_state {
  storage::partition_store& store;
  storage::offset_store& offsets;
  ownership_table& ownership;
  controller_fence& fence;
  traffic& counters;
  partition_gates& gates;
  producer_states& producers;  ///< every append to a served partition goes through it
  logger& log;
  metrics_sink& metrics = no_metrics();
};

/// Empties this broker's copy of `tp` if it neither serves it nor is being handed it, and no move of it runs, is
/// journaled or being recovered here (`busy`); conflict otherwise: that copy may be the only one. All of it under the
/// partition's gate, which migration appends also take, so no copy lands meanwhile; `also` (when given) is asked
/// last, under the gate, and may refuse too. What /cluster/discard and reclaiming do.
status discard_unserved_copy(const cluster_state& st, const broker_id& self, const topic_partition& tp,
                             const std::function<bool(const topic_partition&)>& busy,
                             const std::function<status()>& also = {});

class cluster_service {
 public:
  cluster_service(cluster_service_options options, cluster_state state);
  ~cluster_service();

  transport::response handle(const transport::request& req);

  /// Whether `req`'s head carries valid credentials: the right token for its sender, a sender that is a peer, and
  /// under mutual TLS a certificate naming that sender. The HTTP listener asks it before reading a body.
  bool authenticated(const transport::request& req) const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace moonmq::cluster
