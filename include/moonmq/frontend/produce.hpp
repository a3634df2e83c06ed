// The produce front end: what a client's produce means, whichever protocol carried it (moonmqd's HTTP API, the Kafka
// listener) and wherever it runs (moonmqd, the in-process cluster, the simulation).
//
// One produce: the partition (the one asked for; else by the first record's key, FNV-1a modulo the partition count;
// else round robin), the owner (this broker's tables; for a topic this broker does not have, the ownership table or
// the placement source), the producer's stamps (each record's sequence is the first one's plus its index), and for
// a transactional produce the coordinator's join before the records are routed: the coordinator records the
// partition first, so that its markers will reach it. A refused append forgets the join (the next produce asks the
// coordinator again); records taken by another owner than the one joined tell the coordinator where they went.
// Then the records are appended here or forwarded to the owner (cluster::router), and counted.
// Thread safety: every method may be called concurrently.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <atomic>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "moonmq/cluster/ownership_table.hpp"
#include "moonmq/cluster/router.hpp"
#include "moonmq/core/metrics_sink.hpp"
#include "moonmq/frontend/outcome.hpp"
#include "moonmq/frontend/placement.hpp"
#include "moonmq/storage/partition_store.hpp"
#include "moonmq/storage/record.hpp"

namespace moonmq::txn {
class txn_service;
}

namespace moonmq::frontend {

struct produce_request {
  std::string topic;
  std::optional<std::int32_t> partition;  ///< absent: chosen (see above)
  std::vector<storage::record> records;   ///< at least one (or `encoded`); stamped here for an idempotent producer
  std::optional<storage::producer_stamp> producer;  ///< the first record's id, epoch and sequence
  std::string transactional_id;  ///< not empty: the records join the producer's open transaction
  /// false: a partition another broker serves is refused (errc::not_owner naming it) instead of forwarded there
  /// (the Kafka listener: its clients follow the owner through Metadata).
  bool forward = true;
  /// A transactional produce asks the coordinator only when its batch opens the transaction on the partition (a
  /// batch of a transaction open there needs no round trip). For a Kafka client, whose transactions share one epoch,
  /// so that a join remembered from the last one proves nothing about this one. Only with a local append (`forward`
  /// false) and produce().
  bool join_on_open = false;
  /// The caller's thread must not wait (the Kafka listener's reactor): a produce that would wait is refused with
  /// errc::would_block and writes nothing, and the caller asks again from a thread that may wait. It would wait for
  /// a transactional produce (the coordinator), a topic this broker does not hold (the brokers are asked who
  /// serves it), and where the local append would (cluster::append_options::never_wait). Only with `forward` false.
  bool never_wait = false;
  /// Instead of `records`: the records already encoded as frames, stamped and numbered by the caller (the Kafka
  /// listener's decoder writes a produced batch straight into them), appended as they are. Only with `forward` false
  /// and a named partition, in produce().
  storage::encoded_records encoded{};
};

struct produced {
  std::int32_t partition = 0;
  std::vector<std::uint64_t> offsets;  ///< on the owner's log, one per record
  broker_id broker;                    ///< the owner that appended them
};

struct produce_parts {
  broker_id self;
  storage::partition_store* store = nullptr;
  cluster::ownership_table* ownership = nullptr;
  cluster::router* router = nullptr;
  txn::txn_service* txns = nullptr;  ///< null: a transactional produce is refused
  metrics_sink* metrics = nullptr;   ///< null: nothing counted
  placement_source* placement = nullptr;  ///< null: a topic this broker does not have is not found
  /// Where a forward runs when the transport cannot send from the calling thread (see produce()).
  asio::any_io_executor reactor;
};

class produce_frontend {
 public:
  explicit produce_frontend(produce_parts parts) : p_(std::move(parts)) {}

  /// On a thread that may block (a listener's worker): a local append runs here, and so does a forward when the
  /// transport can send from this thread (otherwise it runs on the reactor and this thread waits for it).
  outcome<produced> produce(produce_request req);

  /// The same as a coroutine, for callers on the reactor (the in-process cluster and the simulation).
  asio::awaitable<outcome<produced>> produce_async(produce_request req);

  /// The owners a produce would route `partitions` of `topic` to (a transaction's declared partitions, Kafka's
  /// AddPartitionsToTxn): partitions here, ones the ownership table places on a peer, else the placement source's.
  /// errc::not_found for a partition no broker has; errc::unavailable when one may be on a broker that did not answer.
  result<std::map<std::int32_t, broker_id>> owners(const std::string& topic,
                                                   const std::set<std::int32_t>& partitions) const;

 private:
  struct plan {
    topic_partition tp;
    std::optional<broker_id> elsewhere;  ///< the owner of a topic this broker does not have
    broker_id joined_owner;              ///< the owner the transaction's coordinator holds for tp
    std::size_t bytes = 0;               ///< key and value bytes of the records, for the counters
  };
  /// Validates and stamps the records, chooses the partition and its owner, and joins the transaction.
  outcome<plan> prepare(produce_request& req);
  /// What the append or forward came to: the coordinator corrected or told to forget, the records counted.
  outcome<produced> finish(const produce_request& req, const plan& at, result<cluster::produce_result> done);
  /// The refusal of a produce that would be forwarded (produce_request::forward false).
  outcome<produced> served_elsewhere(const topic_partition& tp, const broker_id& owner);

  produce_parts p_;
  std::atomic<std::uint64_t> round_robin_{0};
};

}  // namespace moonmq::frontend
