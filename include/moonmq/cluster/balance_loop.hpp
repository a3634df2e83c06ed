// The balance loop: the backend that feeds the decision engine and executes its plans (the detector stays pure).
//
// Each pass (every IntervalSeconds):
//   1. controllership  On its first pass the loop claims the next controller epoch through the fence; every pass it
//                      announces the claim to every peer (POST /cluster/controller/claim) and every control-plane
//                      request it makes carries it. A 409 from any broker, or a newer claim this broker has itself
//                      seen, means another loop claimed later: this one stops acting for good (until the process
//                      restarts) and says so in the log, status() and the metrics. Of two loops, exactly one acts.
//                      With Raft (a fence `by_consensus()`), the claim is the leader's term, taken afresh each pass:
//                      a broker that is not the leader passes in "standby" and does nothing.
//   2. feed            The model gets this broker's partitions and every peer's GET /cluster/loads, asked
//                      concurrently. A peer that does not answer is inactive for the pass: it neither gives nor
//                      receives. Cumulative produce/consume counters are differenced into NW_IN/NW_OUT byte rates
//                      (counter_rate: the first report and a counter that went down only prime a baseline), so rates
//                      flow from the second pass on.
//   3. follow          Moves started by earlier passes are followed to their end (this broker's Reassigner, or the
//                      source broker's GET /cluster/moves). A failed move is reported, and its partition is left alone
//                      for one interval, doubling with each further failure up to ten: retried, never in a tight loop.
//   4. detect          The anomaly detector plans at most MaxActionsPerDetect actions. Partitions moving or backing
//                      off are pinned (they count, but are not planned).
//   5. execute         With DryRun the plan is only logged. Otherwise each MOVE, and each half of a SWAP, starts as a
//                      move on its source broker: this broker's Reassigner, or a fenced POST /cluster/reassign to the
//                      source peer, so one controller balances the whole cluster. A broker takes part in at most
//                      MaxMovesPerBroker moves at once (as source or destination); actions that would exceed it are
//                      deferred to a later pass, which plans afresh.
//
// Reads like the spec's steps: a coroutine on the broker's io_context. status() is a copy of what the last pass saw,
// for GET /v1/autobalancer.
// Thread safety: the passes run on one executor that runs handlers one at a time; status() and stop() may be called
// from any thread.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/thread_pool.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "moonmq/autobalancer/goals/goal_registry.hpp"
#include "moonmq/core/runtime.hpp"
#include "moonmq/autobalancer/planner.hpp"
#include "moonmq/cluster/cluster_service.hpp"
#include "moonmq/transport/peer_client.hpp"
#include "moonmq/cluster/reassigner.hpp"

namespace moonmq::cluster {

struct balance_loop_options {
  broker_id self;
  std::vector<std::string> peers;  ///< every other broker's id
  autobalancer::autobalance_config config;
  autobalancer::goal_registry registry = autobalancer::goal_registry::with_builtins();
  /// Required: its steady clock for rates and back-off, its wall clock for the times it reports, and the wait
  /// between passes. moonmqd: the broker's system runtime.
  runtime* rt = nullptr;
};

/// One broker as the last pass's model saw it.
struct broker_view {
  std::string id;
  bool active = true;
  autobalancer::load_vector load;  ///< nw_in and nw_out in bytes/s, disk in bytes
  std::uint32_t partitions = 0;
};

/// A move a pass started and the loop is following.
struct followed_move {
  std::string src;
  move_progress progress;  ///< the source's latest report (id, partition, dest, step, bytes)
  std::string action_type;  ///< MOVE or SWAP (a SWAP is followed as two moves)
};

struct balance_status {
  bool enabled = false;
  bool dry_run = true;
  bool paused = false;  ///< an operator paused it: no pass runs (moves in flight finish)
  std::optional<controller_claim> claim;  ///< this broker's own claim, once made
  bool superseded = false;
  std::string superseded_reason;
  std::uint64_t passes = 0;
  std::string last_result;  ///< ok, superseded, standby (Raft: not the leader), error (empty before the first pass)
  std::string last_error;
  double last_pass_unix_seconds = 0;  ///< when the last pass ended
  double last_pass_duration_seconds = 0;
  double last_detect_seconds = 0;
  bool satisfied = false;  ///< every goal was met on the last pass's model
  std::vector<autobalancer::described_action> last_plan;  ///< each with the steps that chose it (chosen_by)
  /// Why brokers stay out of band once the last plan is carried out (autobalancer/shortfalls.hpp).
  std::vector<autobalancer::shortfall> out_of_band;
  std::vector<broker_view> brokers;
  std::vector<followed_move> moves;  ///< moves in progress
};

class balance_loop {
 public:
  /// Builds the detector from `options.config.goals`; errors name the goal entry. Freezing, planning and the fence's
  /// durable claim run on `blocking`, never on the reactor.
  static result<std::unique_ptr<balance_loop>> create(balance_loop_options options, cluster_state state,
                                                      transport::peer_client& peers, reassigner& moves,
                                                      asio::any_io_executor blocking);
  static result<std::unique_ptr<balance_loop>> create(balance_loop_options options, cluster_state state,
                                                      transport::peer_client& peers, reassigner& moves,
                                                      asio::thread_pool& blocking) {
    return create(std::move(options), state, peers, moves, asio::any_io_executor(blocking.get_executor()));
  }
  ~balance_loop();

  /// One pass (see above). Returns what it saw.
  asio::awaitable<balance_status> run_pass();

  /// Passes every IntervalSeconds until stop().
  asio::awaitable<void> run();

  /// Ends run() after the pass in progress.
  void stop();

  /// Paused, run() makes no pass (so plans and starts no move; moves already running finish) until resumed.
  void set_paused(bool paused);

  /// Brokers being drained: from the next pass on, nothing is planned onto them (their own partitions may still be
  /// planned away).
  void set_draining(std::set<std::string> brokers);

  /// The model as the last pass froze it, as a planner input (autobalancer::render_planner_input) with this loop's
  /// goals and exclusions (draining brokers among them); nullopt before the first pass that froze one.
  std::optional<std::string> snapshot_document() const;

  /// What the last pass saw; the moves this broker runs itself are reported as they are now.
  balance_status status() const;

 private:
  balance_loop();
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace moonmq::cluster
