// moonmqd's producer and transaction client routes:
//   POST /v1/producers {"transactional_id"?}            an idempotent producer's id and epoch 0, or (with a
//                                                        transactional id) its coordinator's init: same id, next epoch
//   POST /v1/transactions/{tid}/partitions               the partitions the open transaction will write, declared
//                                                        before its produces (one coordinator round trip for all)
//   POST /v1/transactions/{tid}/offsets                  group offsets committed if and only if the transaction is
//   POST /v1/transactions/{tid}/commit · /abort          end; answers the state and the producer's next epoch
//   GET  /v1/transactions · /v1/transactions/{tid}       this broker's transactions / one, from its coordinator
// Each is made into a /cluster/txn/* call on the id's coordinator (txn::txn_service, here or forwarded).
//
// An idempotent producer's id is 63 random bits from the system's random source: nothing to store or lose in a
// crash, and no two brokers need to agree (a collision among a million producers has a probability around 5e-8).
// Thread safety: the routes may run concurrently.
#pragma once

#include <httplib.h>

#include "api_routes.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <set>

#include "moonmq/core/ids.hpp"
#include "moonmq/core/result.hpp"
#include "moonmq/txn/txn_service.hpp"

namespace moonmq::daemon {

/// A fresh producer id (never 0).
std::uint64_t fresh_producer_id();

class txn_api {
 public:
  /// The brokers serving `partitions` of `topic`, each found as a produce would find it: not_found for one no broker
  /// is known to have, unavailable when the peers that would know did not answer.
  using owners_source = std::function<result<std::map<std::int32_t, broker_id>>(
      const std::string& topic, const std::set<std::int32_t>& partitions)>;

  /// `owner_of`: the broker this one believes serves a partition (a hint for the coordinator's offsets); `owners_of`:
  /// for declared partitions, which must exist.
  txn_api(txn::txn_service& service, std::function<broker_id(const topic_partition&)> owner_of,
          owners_source owners_of)
      : service_(service), owner_of_(std::move(owner_of)), owners_of_(std::move(owners_of)) {}

  /// Topics one declaration may name (a topic this broker does not hold costs a question to every peer).
  static constexpr std::size_t max_declared_topics = 16;

  void routes(api_routes& api);

 private:
  txn::txn_service& service_;
  std::function<broker_id(const topic_partition&)> owner_of_;
  owners_source owners_of_;
};

}  // namespace moonmq::daemon
