// The transactions front end: a producer's calls, whichever protocol carried them (moonmqd's /v1/producers and
// /v1/transactions; Kafka's InitProducerId, AddPartitionsToTxn, TxnOffsetCommit and EndTxn).
//
// - **A producer id.** Without a transactional id: an idempotent producer's id, 63 random bits from the system's
//   random source, epoch 0 (nothing to store or lose in a crash, and no two brokers need to agree: a collision among
//   a million producers has a probability around 5e-8). With one: the coordinator's init (same id, next epoch; an
//   open transaction of the older producer is aborted first).
// - **A declaration** of the partitions the open transaction will write, before its produces: only partitions some
//   broker has (a marker for one nobody serves could never be delivered), each topic's owners found once, at most
//   max_declared_topics topics; the coordinator records them all in one round trip.
// - **Offsets** committed if and only if the transaction commits, each with the broker this one believes owns it.
// - **The end** (commit or abort) and the views (one transaction; this broker's).
// Each call runs on the transactional id's coordinator (txn::txn_service: directly, or forwarded).
// Thread safety: every method may be called concurrently.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "moonmq/core/outcome.hpp"
#include "moonmq/txn/txn_service.hpp"

namespace moonmq::frontend {

/// A fresh idempotent producer id (never 0).
std::uint64_t fresh_producer_id();

/// The brokers serving `partitions` of `topic`, as a produce would find them (produce_frontend::owners).
using owners_source = std::function<result<std::map<std::int32_t, broker_id>>(const std::string& topic,
                                                                              const std::set<std::int32_t>& partitions)>;

struct transactions_parts {
  txn::txn_service* txns = nullptr;
  /// The broker this one believes serves a partition (a hint for the coordinator's offsets).
  std::function<broker_id(const topic_partition&)> owner_of;
  owners_source owners_of;
};

class transactions_frontend {
 public:
  explicit transactions_frontend(transactions_parts parts) : p_(std::move(parts)) {}

  /// Topics one declaration may name (a topic this broker does not hold costs a question to every peer).
  static constexpr std::size_t max_declared_topics = 16;

  outcome<txn::producer_identity> init(const std::optional<std::string>& transactional_id,
                                       const txn::init_options& options = {});
  outcome<done> declare(const std::string& transactional_id, std::uint64_t producer_id, std::uint32_t epoch,
                        const std::vector<topic_partition>& partitions);
  outcome<done> add_offsets(const std::string& transactional_id, std::uint64_t producer_id, std::uint32_t epoch,
                            const std::string& group, const std::vector<std::pair<topic_partition, std::uint64_t>>& offsets);
  outcome<txn::end_answer> end(const txn::end_call& c) { return p_.txns->end(c); }
  outcome<std::string> describe(const std::string& transactional_id) { return p_.txns->describe(transactional_id); }
  std::string list(const transport::list_page& page) { return p_.txns->list_document(page); }
  broker_id coordinator_of(const std::string& transactional_id) const { return p_.txns->coordinator_of(transactional_id); }

 private:
  transactions_parts p_;
};

}  // namespace moonmq::frontend
