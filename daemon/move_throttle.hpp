// This broker's copy throttle as the operator last set it: `<data_dir>/move-throttle.json` (`{"bytes_per_sec": N}`),
// written by PUT /v1/reassignments/throttle (here or relayed by a peer) and applied at the next start, where it wins
// over Cluster.MoveThrottleBytesPerSec.
// Thread safety: set() may be called from any thread.
#pragma once

#include <memory>
#include <mutex>

#include "moonmq/cluster/reassigner.hpp"
#include "moonmq/core/logger.hpp"
#include "moonmq/storage/state_file.hpp"

namespace moonmq::daemon {

class move_throttle {
 public:
  /// Reads the file (when there is one) and applies it to `moves`; corrupt when it is not `{"bytes_per_sec": N}`.
  static result<std::unique_ptr<move_throttle>> open(std::unique_ptr<storage::state_file> file,
                                                     cluster::reassigner& moves, logger& log);

  /// Applies `rate` at once (0 = unlimited) and keeps it for the next start.
  status set(std::uint64_t rate);

 private:
  move_throttle(std::unique_ptr<storage::state_file> file, cluster::reassigner& moves)
      : file_(std::move(file)), moves_(moves) {}

  std::unique_ptr<storage::state_file> file_;
  cluster::reassigner& moves_;
  std::mutex mu_;  ///< one write at a time, so that the file and the reassigner agree
};

}  // namespace moonmq::daemon
