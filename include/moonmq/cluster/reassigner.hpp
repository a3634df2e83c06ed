// The Reassigner: moves one partition's data, committed offsets and ownership to another broker, with an exact
// cutover. It runs on the source broker, as a coroutine, over the seams (partition_store, offset_store,
// ownership_table, transport); blocking work goes to a small pool.
//
//   1. ensure    dest creates the topic, or grows it to this broker's partition count.
//   2. check     dest's copy must be empty, or a byte-for-byte prefix of ours (left by an interrupted attempt of this
//                same move, which then resumes from its end); anything else is refused: "destination not empty".
//   3. reserve   dest records this broker as the partition's owner, so it serves nothing of it until step 8.
//   4. copy      frames stream in BatchBytes batches with append_at(expected offset): a retried batch is never
//                written twice. Every batch is awaited, so produce and fetch traffic interleave with a long copy.
//                Dest fsyncs at the end.
//   5. cutover   the move is journaled, then under the partition's gate the ownership entry flips to dest and is
//                persisted: no local append begins after it; those that began before it are in the tail.
//   6. drain     the tail is copied and synced. If it fails, ownership is rolled back: the partition stays here,
//                whole.
//   7. offsets   every group's committed offset is pushed (higher wins on dest). A failure is logged loudly and does
//                not roll back: the data is safe on dest; consumers restart from their last offset there.
//   8. confirm   dest records that it owns the partition and starts serving it; the journal entry is cleared.
//
// Internal topics (__*) never move. A crash of either broker at any step leaves the partition whole on its last
// confirmed owner (see move_journal.hpp for how a restart resolves a move caught between cutover and confirm), and
// the move can be retried. Progress (step, bytes copied of total) is observable while a move runs.
// Thread safety: moves of different partitions may run concurrently; a second move of a partition already moving
// is refused. progress() may be called from any thread.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/thread_pool.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moonmq/core/runtime.hpp"
#include "moonmq/autobalancer/planner.hpp"
#include "moonmq/cluster/cluster_service.hpp"
#include "moonmq/cluster/move_journal.hpp"
#include "moonmq/cluster/move_progress.hpp"
#include "moonmq/transport/peer_client.hpp"

namespace moonmq::cluster {

struct reassigner_options {
  std::uint32_t batch_bytes = 256 * 1024;
  std::uint64_t throttle_bytes_per_sec = 0;  ///< the copies' shared rate limit (0 = none); see set_throttle()
  double stall_seconds = 30;  ///< a running move with no step and no byte for this long is reported stalled
  /// Before the second and third try of the offsets step: this, then twice this (0: at once, as a simulation that
  /// replays by counting rather than by time wants).
  std::chrono::milliseconds offsets_retry{200};
  /// Called once when a move ends (done, failed or cancelled), on the reactor, after progress() shows it. A move cut
  /// short because its executor stopped never ends, so it never calls this: that is how an embedding broker tells an
  /// interrupted move from a finished one.
  std::function<void(const move_progress&)> on_finished;
  /// The topic's current record in the cluster's catalog as JSON (topic_directory), sent with a move's ensure so that
  /// a destination whose catalog is behind learns it (without Raft) or refuses until it has applied it (with Raft);
  /// nullopt for a topic the catalog does not list. Empty: none is sent.
  std::function<std::optional<std::string>(const std::string& topic)> topic_record;
  /// The incarnation of `topic` in the catalog (topic_record::created), UINT64_MAX for a deleted one, 0 for one it
  /// does not list (or not yet). A move records the incarnation it started on and is dropped, never decided, once the
  /// catalog names another (a decision taken after the name was made again would route the new topic's partition).
  /// Empty: not checked.
  std::function<std::uint64_t(const std::string& topic)> incarnation_of;
  /// Required: the clocks (progress times, the throttle, move ids) and the waits (the throttle's, the offsets step's
  /// retries, the journal's 5 s retry). moonmqd: the broker's system runtime; a simulation: its manual one.
  runtime* rt = nullptr;
};

class reassigner {
 public:
  /// File work (reads for the copy, the journal and ownership writes) runs on `blocking`.
  reassigner(reassigner_options options, cluster_state state, transport::peer_client& peers, move_journal& journal,
             asio::any_io_executor blocking);
  reassigner(reassigner_options options, cluster_state state, transport::peer_client& peers, move_journal& journal,
             asio::thread_pool& blocking)
      : reassigner(std::move(options), state, peers, journal, asio::any_io_executor(blocking.get_executor())) {}
  ~reassigner();

  /// The runtime it was given (reassigner_options::rt): what works beside it waits on the same clock.
  runtime& rt() const;

  /// Moves `tp` to `dest`; with `claim`, control-plane requests are fenced by it.
  asio::awaitable<status> move(topic_partition tp, broker_id dest, std::optional<controller_claim> claim = {});

  /// Starts a move on `ex` and returns at once with its id (see progress()); refuses, without starting anything, an
  /// internal topic, a partition this broker does not serve and one already moving. If the move fails with its
  /// journal entry left behind, the entry is resolved in the background (recover(), every 5 s).
  /// `id`: the move's id when it has one already (a hand move resumed after a restart keeps its id); else a new one.
  result<std::uint64_t> start(const asio::any_io_executor& ex, topic_partition tp, broker_id dest,
                              std::optional<controller_claim> claim = {}, std::optional<std::uint64_t> id = {});

  /// A new move id, never handed out before by this broker (a hand move records it before it starts).
  std::uint64_t allocate_id();

  /// A move this broker will resume (listed before a restart, not started again yet): progress() shows it, in step
  /// `resuming`, until it starts or is forgotten (`forget_resuming`).
  void expect_resume(const topic_partition& tp, const broker_id& dest, std::uint64_t id);
  void forget_resuming(const topic_partition& tp);

  /// Moves that ended before this broker last stopped (a kept history), shown by progress() as finished.
  void restore_finished(std::vector<move_progress> ended);

  /// Executes one planned action on this broker: a MOVE, or the local half of a SWAP (its first partition goes to
  /// the destination; the counterpart's data lives on the other broker, which this one cannot push).
  /// REQUIRES: this broker is the action's source.
  asio::awaitable<status> execute(autobalancer::described_action action, std::optional<controller_claim> claim = {});

  /// Resolves journaled moves left by a crash (see move_journal.hpp). Returns how many remain unresolved.
  asio::awaitable<std::size_t> recover();

  /// Moves in progress and the most recent finished ones (newest last). A running move's rate, ETA and stall are
  /// worked out at the call.
  std::vector<move_progress> progress() const;

  /// Whether a move of `tp` runs here, is journaled here (its cutover may still be rolled back or confirmed) or is
  /// being resolved by recover(): this broker's copy of `tp` may still be needed.
  bool busy(const topic_partition& tp) const;

  /// Whether no move runs here and no recover() is resolving a journaled one: nothing of this reassigner is waiting
  /// on the reactor but a started move's 5 s recovery retry, which touches nothing once the reassigner is gone.
  bool idle() const;

  /// Cancels move `id` if it has not begun its cutover: it stops at its next check (between steps, between copy
  /// batches, during a throttle wait), ownership never having left this broker, and the destination is asked to
  /// discard its partial copy; it then ends in step "cancelled". conflict once the cutover has begun (the move can
  /// no longer be rolled back without risking two servers) or when it has ended; not_found for an unknown id.
  status cancel(std::uint64_t id);

  /// The rate every copy of this broker shares, in bytes/s (0 = unlimited); applies at once to running copies.
  void set_throttle(std::uint64_t bytes_per_sec);
  std::uint64_t throttle() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// How a cluster_service reaches the reassigner in `slot` for POST /cluster/reassign and GET /cluster/moves: moves start
/// on `ex`. The slot is read at each call, so the service may be built before the reassigner is.
inline move_control move_control_of(const std::unique_ptr<reassigner>& slot, asio::any_io_executor ex) {
  move_control c;
  c.start = [&slot, ex](topic_partition tp, broker_id dest, std::optional<controller_claim> claim) {
    return slot->start(ex, std::move(tp), std::move(dest), claim);
  };
  c.progress = [&slot] { return slot->progress(); };
  c.cancel = [&slot](std::uint64_t id) { return slot->cancel(id); };
  c.busy = [&slot](const topic_partition& tp) { return slot && slot->busy(tp); };
  c.set_throttle = [&slot](std::uint64_t rate) {
    slot->set_throttle(rate);
    return status{};
  };
  c.throttle = [&slot] { return slot->throttle(); };
  return c;
}

}  // namespace moonmq::cluster
