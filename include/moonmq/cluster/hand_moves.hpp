// Moves asked by hand (an operator through the API, here or forwarded by a peer) and the one loop that brings moves
// back after a stop or a crash.
//
// A hand move is listed in `<data_dir>/move-requests.json` before it starts and forgotten when it ends (done, failed
// or cancelled). Every move that ends, by hand or not, is added to `<data_dir>/move-history.json` (the last 100). A move cut short by a stop never ends, so it stays listed. A move a controller starts (with a claim)
// is not listed: the balance loop plans again from what it sees.
//
// recover() is the one recovery loop of a broker's moves. Each round it first resolves the move journal
// (reassigner::recover: moves caught between cutover and confirm), then starts again each listed move of a partition
// this broker serves and no move of which runs (the destination's partial copy is a prefix: the copy resumes from
// its end). A listed move of a partition another broker serves by then (its journal moved it forward) is forgotten;
// one of a partition in handover to this broker waits until that is decided. Rounds repeat every `retry` until the
// journal is empty and every listed move has been started again, or stop() is called.
//
// Why two records: the journal is written at the cutover under the partition's gate and says what ownership may be
// (it is resolved by phase alone, never by intent); the request says what an operator wants, and outlives a
// journaled move that recovery rolls back. One owner reads both, in one loop.
// Thread safety: start(), finished() and stop() may be called from any thread; recover() runs on one executor. The
// destructor waits for the work finished() handed to `blocking` (run or dropped with its executor).
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "moonmq/cluster/cluster_service.hpp"
#include "moonmq/cluster/reassigner.hpp"
#include "moonmq/storage/state_file.hpp"

namespace moonmq::cluster {

class move_requests;

struct hand_moves_parts {
  broker_id self;
  storage::partition_store& store;
  ownership_table& ownership;
  move_journal& journal;
  reassigner& moves;
  logger& log;
  asio::any_io_executor io;        ///< where moves and the recovery loop run
  asio::any_io_executor blocking;  ///< file writes
  std::chrono::milliseconds retry{5000};
};

class hand_moves {
 public:
  /// `file`: the moves asked by hand (move-requests.json); `history` (may be null): the moves that ended, the last
  /// 100, kept so that `moves --all` still shows them after a restart (move-history.json).
  static result<std::unique_ptr<hand_moves>> open(hand_moves_parts parts, std::unique_ptr<storage::state_file> file,
                                                  std::unique_ptr<storage::state_file> history = nullptr);
  ~hand_moves();

  /// Starts a move of `tp` to `dest` here. Without a claim it is a hand move: listed first, so that it resumes if
  /// this broker stops before it ends (not listed when a move of `tp` already runs: that one keeps its record and
  /// this one is refused). A refused move is not kept.
  result<std::uint64_t> start(const topic_partition& tp, const broker_id& dest,
                              std::optional<controller_claim> claim = {});

  /// What reassigner_options::on_finished should call: a move that ended is forgotten (unless a newer move of the
  /// partition runs by then).
  void finished(const move_progress& p);

  /// The recovery loop (see above). Returns once everything is resolved and resumed, or after stop().
  asio::awaitable<void> recover();
  /// Whether recover() has work: a journaled move or a listed one.
  bool anything_to_recover() const;

  /// Ends recover() at its next round; finished() then keeps what is listed (a move cut short stays listed).
  void stop() { stopped_ = true; }

  /// The moves listed now, by partition, with their destinations.
  std::map<topic_partition, broker_id> listed() const;

 private:
  hand_moves(hand_moves_parts parts, std::unique_ptr<move_requests> requests,
             std::unique_ptr<storage::state_file> history, std::vector<move_progress> ended);

  hand_moves_parts p_;
  std::unique_ptr<move_requests> requests_;
  std::unique_ptr<storage::state_file> history_;
  std::vector<move_progress> ended_;  ///< what history_ holds (under starting_)
  std::atomic<bool> stopped_{false};
  /// Held from a hand move's record to its start, and by the forgetting of a finished one: a record is never
  /// forgotten between being written and its move running (busy()).
  std::mutex starting_;
  std::mutex pending_mu_;
  std::condition_variable pending_done_;
  std::size_t pending_ = 0;  ///< tasks finished() handed to `blocking` that still exist
};

}  // namespace moonmq::cluster
