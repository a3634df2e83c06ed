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
  std::string dest;
  std::string step;  ///< ensure, check, reserve, copy, cutover, drain, offsets, confirm, done, failed
  std::uint64_t bytes_copied = 0;
  std::uint64_t bytes_total = 0;  ///< the partition's size when the copy began (grows with the tail)
  bool finished = false;
  bool succeeded = false;
  std::string error;
  double started_at = 0;  ///< seconds since the epoch
  double finished_at = 0;
};

}  // namespace moonmq::cluster
