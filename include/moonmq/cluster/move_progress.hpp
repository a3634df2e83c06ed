// What one partition move is doing or did: the Reassigner's progress report, also what GET /cluster/moves and
// GET /v1/reassignments answer and what the balance loop follows for moves it asked another broker to run.
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <string>

#include "moonmq/core/ids.hpp"

namespace moonmq::cluster {

/// What one move is doing or did.
struct move_progress {
  std::uint64_t id = 0;  ///< unique on this broker, also across its restarts
  topic_partition partition;
  std::string source;  ///< the broker that runs the move (the partition's owner when it started)
  std::string dest;
  /// ensure, check, reserve, copy, cutover, drain, offsets, confirm; then done, failed or cancelled
  std::string step;
  std::uint64_t bytes_copied = 0;
  std::uint64_t bytes_total = 0;  ///< the partition's size when the copy began (grows with the tail)
  bool finished = false;
  bool succeeded = false;
  std::string error;
  double started_at = 0;  ///< seconds since the epoch
  double finished_at = 0;
  std::uint64_t resumed_from = 0;  ///< bytes the destination already held (an interrupted attempt's prefix)
  double copy_started_at = 0;      ///< when the copy step began (0: not yet)
  double last_activity_at = 0;     ///< the last step taken or byte copied
  std::string waiting_for;         ///< the request or wait in progress, e.g. "b2: append at 1048576"
  bool cancel_requested = false;  ///< an operator cancelled it; it stops before its cutover and is rolled back
  double rate_bytes_per_sec = 0;  ///< the copy's average rate since its copy step began
  double eta_seconds = -1;        ///< bytes left at that rate; -1 when unknown
  bool stalled = false;           ///< no step and no byte for a while
  std::string stalled_reason;     ///< what it has been waiting for
};

}  // namespace moonmq::cluster
