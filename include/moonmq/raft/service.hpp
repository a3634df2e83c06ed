// The host of a Raft node in a broker: the timers, the RPCs and the apply loop around the pure `raft::node`.
//
// Everything that touches the node runs on the broker's io_context (one thread): a ticker steps the node's clock,
// messages arriving on POST /cluster/raft/{vote,append,snapshot} are posted to it, and one pump at a time carries out
// each ready batch in order: save it (fsync, on the blocking pool), then send its messages, then apply its committed
// entries to the state machine. Outgoing messages go through one queue per peer with its own sender, so an
// unreachable peer delays nobody else; a queued append is replaced by a newer one to the same peer, and a queue that
// still backs up drops its oldest messages (Raft retries by itself).
// Proposals are made on the leader or forwarded to it (POST /cluster/raft/propose) and complete once the entry is
// applied on this broker, so the caller sees its own change.
// Thread safety: handle(), status() and propose_blocking() may be called from any thread (propose_blocking never
// from the io_context's own thread); start() and stop() once each.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <asio/thread_pool.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "moonmq/core/runtime.hpp"
#include "moonmq/transport/peer_client.hpp"
#include "moonmq/core/logger.hpp"
#include "moonmq/core/metrics_sink.hpp"
#include "moonmq/raft/storage.hpp"
#include "moonmq/transport/message.hpp"

namespace moonmq::raft {

/// What the replicated log drives: committed entries in order, or a whole snapshot.
class state_machine {
 public:
  virtual ~state_machine() = default;
  virtual void apply(const entry& e) = 0;
  virtual void restore(const std::string& snapshot) = 0;
  virtual std::string snapshot() const = 0;
  /// Called once, on the io_context's thread, when everything the cluster had committed when this broker started
  /// has been applied (raft::node::caught_up).
  virtual void caught_up() {}
};

struct service_options {
  std::string self;
  std::vector<std::string> peers;
  std::chrono::milliseconds tick{50};
  std::chrono::milliseconds heartbeat{500};
  std::chrono::milliseconds election_min{1500};
  std::chrono::milliseconds election_max{3000};
  std::size_t max_log_entries = 10000;
  std::uint64_t seed = 0;  ///< 0: a random one
  std::chrono::milliseconds propose_timeout{5000};
  /// Required: the clock proposals' deadlines are read on, and where the ticks and the waits for an entry run
  /// (moonmqd: the broker's system runtime, whose timers are on the reactor the service runs on).
  runtime* rt = nullptr;
};

struct raft_status {
  role current_role = role::follower;
  term_t term = 0;
  std::string leader;
  index_t commit = 0;
  index_t applied = 0;
  index_t last_index = 0;
  index_t snapshot_index = 0;
  bool caught_up = false;  ///< see raft::node::caught_up
};

class service {
 public:
  /// Loads the durable state from `disk` and builds the node; the state machine is restored from the snapshot and
  /// the committed entries before start() returns.
  static result<std::unique_ptr<service>> open(service_options options, storage& disk, state_machine& machine,
                                               transport::peer_client& peers, asio::io_context& io,
                                               asio::thread_pool& blocking, logger& log,
                                               metrics_sink& metrics = no_metrics());
  ~service();

  void start();
  void stop();

  /// The /cluster/raft/* routes (token and TLS are the listener's business; no epoch fence).
  transport::response handle(const transport::request& req);

  /// Appends an entry through the leader and waits until it is applied here.
  asio::awaitable<result<index_t>> propose(entry_kind kind, std::string data);
  result<index_t> propose_blocking(entry_kind kind, std::string data);

  raft_status status() const;

 private:
  service();
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace moonmq::raft
