// Produce routing: records for a partition this broker serves are appended here; records for a partition owned by a
// peer are forwarded to it over /cluster/append (mode=produce), and the acknowledgement carries the owner's offsets.
//
// The local path holds the partition's gate shared across "do I serve it? then append", which is what makes a
// reassigner's cutover exact. A forward is never forwarded again by the receiver (it answers 421 with the owner it
// knows instead); the router follows such a hint at most twice, so an ownership chain ends in an error, never in an
// endless hop. While a partition is being handed over (this broker has flipped it to the destination, which does not
// serve it until the move is confirmed), a forward waits and retries for up to PeerTimeout.
// Thread safety: all methods may be called concurrently.
#pragma once

#include <chrono>

#include <asio/awaitable.hpp>
#include <optional>
#include <variant>
#include <vector>

#include "moonmq/cluster/cluster_service.hpp"
#include "moonmq/core/runtime.hpp"
#include "moonmq/transport/peer_client.hpp"
#include "moonmq/storage/record.hpp"

namespace moonmq::cluster {

struct produce_result {
  std::vector<std::uint64_t> offsets;  ///< on the owner's log
  broker_id broker;                    ///< the owner that appended them
};

/// How a produce waits out a handover (the partition's cutover in progress on its way here or away).
struct router_options {
  /// Between looks, on the router's runtime: as many as fit in the PeerTimeout, then 503 ("being handed over;
  /// retry").
  std::chrono::milliseconds handover_pause{20};
};

class router {
 public:
  /// `rt`: the clock the handover deadline is read on and the pauses are waited on.
  router(cluster_state state, transport::peer_client& peers, runtime& rt, router_options options = {})
      : st_(state), peers_(peers), rt_(rt), opt_(options) {}

  /// Appends `records` here if this broker serves `tp`; otherwise returns the owner to forward to (this broker
  /// itself while it waits to serve `tp`: forward() then waits, as for a handover). `how`: see
  /// producer_states::append.
  std::variant<result<produce_result>, broker_id> try_local(const topic_partition& tp,
                                                            const std::vector<storage::record>& records,
                                                            const append_options& how = {});
  /// The same for records already encoded as frames (the Kafka listener's batch), appended as they are.
  std::variant<result<produce_result>, broker_id> try_local(const topic_partition& tp,
                                                            const storage::encoded_records& records,
                                                            const append_options& how = {});

  /// Forwards to `owner` (see above for hints and handovers).
  asio::awaitable<result<produce_result>> forward(topic_partition tp, std::vector<storage::record> records,
                                                  broker_id owner);

  /// forward(), on the calling thread, for callers that may block (a listener's worker thread): no hop through the
  /// reactor. nullopt when the transport cannot send from the calling thread (then use forward()).
  std::optional<result<produce_result>> forward_blocking(topic_partition tp,
                                                         const std::vector<storage::record>& records, broker_id owner);

  /// try_local, then forward when needed. Note that a local append (and one after a handover rolled back) runs on
  /// the coroutine's thread: moonmqd calls try_local and forward_blocking from its listener threads instead, so its
  /// reactor never writes a file.
  asio::awaitable<result<produce_result>> produce(topic_partition tp, std::vector<storage::record> records);

 private:
  /// try_local's body; `encoded()` gives the records encoded, and is called only where they are appended here.
  template <typename Encoded>
  std::variant<result<produce_result>, broker_id> try_local_with(const topic_partition& tp, const Encoded& encoded,
                                                                 const append_options& how);
  struct forward_state;
  /// What to do after one attempt; shared by forward() and forward_blocking() so they cannot drift apart.
  struct step {
    enum kind_t { done, pause, retry } kind = done;
    std::optional<result<produce_result>> out;
    static step finish(result<produce_result> r) { return {done, std::move(r)}; }
    static step wait() { return {pause, std::nullopt}; }
    static step again() { return {retry, std::nullopt}; }
  };
  /// `records` must outlive the forward (the caller's, or the forward() coroutine's own parameter).
  forward_state begin_forward(topic_partition tp, const std::vector<storage::record>& records, broker_id owner) const;
  step interpret(forward_state& f, const transport::response& resp);
  /// Pause and look again, unless the forward's deadline would pass first.
  step wait_for_handover(const forward_state& f) const;
  std::optional<result<produce_result>> recheck(forward_state& f);

  cluster_state st_;
  transport::peer_client& peers_;
  runtime& rt_;
  router_options opt_;
};

}  // namespace moonmq::cluster
