// Giving back the disk that moves leave behind, carried out: this broker's copies of partitions it does not serve,
// watched (reclaim_tracker) and deleted `after_seconds` after they were last seen to change, when nothing may still
// need them; or all the eligible ones at once when an operator asks. A copy goes only when, under the partition's
// gate (migration appends take it too, so nothing lands meanwhile), nothing here needs it (not served or handed over
// here, no move of it running, journaled or recovering here), no peer is sending it here (a peer that does not answer
// might be), and the broker this one believes serves it confirms that it does, with no move of it under way there.
// The caller runs the rounds (the daemon's ticker, or a test); time is passed in.
// Thread safety: every method may be called concurrently; observations and reclaims run one at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "moonmq/cluster/cluster_service.hpp"
#include "moonmq/cluster/move_journal.hpp"
#include "moonmq/cluster/reclaim_plan.hpp"
#include "moonmq/core/clock.hpp"
#include "moonmq/transport/peer_client.hpp"

namespace moonmq::cluster {

class reassigner;

struct reclaim_options {
  broker_id self;
  double after_seconds = 0;        ///< Cluster.ReclaimAfterSeconds; 0: only when an operator asks
  std::vector<std::string> peers;  ///< the configured peers' ids
  std::function<time_ms()> steady_ms = steady_now_ms;
};

class reclaim_executor {
 public:
  reclaim_executor(reclaim_options options, cluster_state state, move_journal& journal, reassigner& moves,
                   transport::peer_client& client);

  /// Deletes the copies that are due (`due_only`, a round) or eligible now (an operator's request). The answer:
  /// {"broker","reclaimed":[{"topic","partition","size_bytes"}],"bytes","failed":[{"topic","partition","error"}]}.
  std::string reclaim(bool due_only);
  /// The copies held without being served: {"broker","reclaim_after_seconds","copies":[{"topic","partition",
  /// "size_bytes","idle_seconds","eligible","held_by"?,"reclaimed_in_seconds"?}],"bytes"}.
  std::string list_document();

  /// How often a round should run: a few times per delay (at most every 10 s); every 10 s without a delay, to keep
  /// the idle times.
  double round_seconds() const;

 private:
  /// Observes the copies now, moves towards this broker included (one request per peer). REQUIRES: mu_ held.
  std::vector<reclaim_candidate> observe();
  /// Whether the broker named as the owner confirms, now, that it serves `tp` with no move of it under way.
  status owner_confirms(const topic_partition& tp);

  reclaim_options opt_;
  cluster_state st_;
  move_journal& journal_;
  reassigner& moves_;
  transport::peer_client& client_;

  std::mutex mu_;  ///< one observation or reclaim at a time (the tracker is not shared)
  reclaim_tracker tracker_;
};

}  // namespace moonmq::cluster
