// The move request front end: an operator's "move partition P to broker D", asked of any broker, whichever protocol
// carried it (moonmqd's POST /v1/reassignments; the Kafka listener's AlterPartitionReassignments later).
//
// The request is checked against what every broker says it holds now, so that a bad one is refused at once instead
// of failing later in the background:
// - an internal topic never moves (invalid_argument); the destination must be a broker of the cluster (not_found);
// - the source is the broker that serves the partition; none that answered does: not_found (unknown topic or
//   partition, or its owner does not answer);
// - a partition with more than one log in the cluster (a second serving broker, or a stray) is never moved: the move
//   would keep one log and drop the other's records (conflict; docs/cluster.md, "Strays");
// - a move onto the broker that has it, or onto a draining broker, is refused (conflict).
// Then it starts on the source: here through cluster::hand_moves (kept, so that it resumes after a restart), or on
// the source over POST /cluster/reassign, hand-driven and so not fenced.
// Thread safety: start() may be called concurrently, from threads that may block.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "moonmq/cluster/local_loads.hpp"
#include "moonmq/transport/peer_client.hpp"
#include "moonmq/frontend/outcome.hpp"

namespace moonmq::frontend {

struct move_request_parts {
  broker_id self;
  std::vector<std::string> peers;
  transport::peer_client* client = nullptr;
  /// This broker's partitions it serves, and its strays.
  std::function<std::vector<cluster::partition_load>()> served;
  std::function<std::vector<cluster::partition_load>()> strays;
  /// A hand-driven move of a partition this broker serves (cluster::hand_moves::start); its id.
  std::function<result<std::uint64_t>(const topic_partition&, const broker_id&)> start_here;
  /// Whether a broker is being drained (nothing moves onto it).
  std::function<bool(const std::string&)> draining;
};

struct started_move {
  std::uint64_t id = 0;  ///< on the source
  broker_id source;
};

class move_requests {
 public:
  explicit move_requests(move_request_parts parts) : p_(std::move(parts)) {}

  outcome<started_move> start(const topic_partition& tp, const broker_id& dest);

 private:
  move_request_parts p_;
};

}  // namespace moonmq::frontend
