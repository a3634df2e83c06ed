// A broker's drain, carried out: the set of draining brokers every broker keeps (drain-state.json), and the rounds of
// this broker's own drain. Each round reads what every broker reports, plans the next moves with plan_drain (largest
// partition first, to the emptiest receiver, within max_moves), starts them through the reassigner (this broker is
// their source), and keeps the progress: partitions and bytes left, moves running, an ETA at the running moves' rate,
// and every partition that cannot move with why. A partition whose move failed is held back for `retry_after` before
// it is tried again, so that a failing destination is not hammered every round.
// The caller runs the rounds (the daemon's ticker, or a test) and tells the other brokers; time is passed in.
// Thread safety: every method may be called concurrently; rounds run one at a time.
#pragma once

#include <asio/any_io_executor.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "moonmq/cluster/peer_fanout.hpp"
#include "moonmq/core/clock.hpp"
#include "moonmq/core/ids.hpp"
#include "moonmq/core/logger.hpp"
#include "moonmq/core/result.hpp"
#include "moonmq/storage/state_file.hpp"

namespace moonmq::cluster {

class balance_loop;
class reassigner;

struct drain_options {
  broker_id self;
  std::size_t max_moves = 1;       ///< moves the draining broker runs at once (Autobalance.MaxMovesPerBroker)
  std::set<std::string> excluded;  ///< brokers that never receive (Autobalance.ExcludedBrokers)
  std::chrono::seconds retry_after{30};
  std::function<time_ms()> wall_ms = wall_now_ms;
};

/// Every broker's report, this broker's own among them (under its id), as a round reads them.
using drain_reports = std::function<std::vector<peer_report>()>;

class drain_executor {
 public:
  /// Reads the draining set from `state` (corrupt when it is not `{"draining": [ids]}`) and tells `loop` (may be null).
  static result<std::unique_ptr<drain_executor>> open(drain_options options, reassigner& moves,
                                                      asio::any_io_executor ex, balance_loop* loop,
                                                      std::unique_ptr<storage::state_file> state, drain_reports reports,
                                                      logger& log);

  /// Marks `broker` draining or not, durably before it counts; the balance loop is told.
  status set(const std::string& broker, bool draining);
  std::set<std::string> draining() const;

  /// One round of this broker's drain (nothing when it is not draining).
  void round();

  /// This broker's progress (GET /cluster/admin/drain): {"broker","draining"} and, while draining, "done",
  /// "partitions_left", "bytes_left", "moving", "eta_seconds" (-1: no rate yet), "blocked":[{"topic","partition","reason"}].
  std::string progress_document() const;

 private:
  drain_executor(drain_options options, reassigner& moves, asio::any_io_executor ex, balance_loop* loop,
                 std::unique_ptr<storage::state_file> state, drain_reports reports, logger& log);

  drain_options opt_;
  reassigner& moves_;
  asio::any_io_executor ex_;
  balance_loop* loop_;
  std::unique_ptr<storage::state_file> state_;
  drain_reports reports_;
  logger& log_;

  std::mutex round_mu_;  ///< one round at a time
  mutable std::mutex mu_;
  std::set<std::string> draining_;
  std::string progress_;  ///< the last round's report (JSON)
};

}  // namespace moonmq::cluster
