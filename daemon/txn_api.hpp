// moonmqd's producer and transaction client routes, decoded into the transactions front end's calls
// (frontend/transactions.hpp, where the rules live) and their answers encoded:
//   POST /v1/producers {"transactional_id"?}            an idempotent producer's id and epoch 0, or (with a
//                                                        transactional id) its coordinator's init: same id, next epoch
//   POST /v1/transactions/{tid}/partitions               the partitions the open transaction will write, declared
//                                                        before its produces (one coordinator round trip for all)
//   POST /v1/transactions/{tid}/offsets                  group offsets committed if and only if the transaction is
//   POST /v1/transactions/{tid}/commit · /abort          end; answers the state and the producer's next epoch
//   GET  /v1/transactions[?scope=cluster] · /{tid}      this broker's transactions (every broker's) / one, from its
//                                                        coordinator
// A coordinator that does not answer is 503 `coordinator_unavailable` naming it.
// Thread safety: the routes may run concurrently.
#pragma once

#include <httplib.h>

#include "api_routes.hpp"
#include "cluster_lists.hpp"
#include "moonmq/frontend/transactions.hpp"

namespace moonmq::daemon {

class txn_api {
 public:
  txn_api(frontend::transactions_frontend& txns, cluster_lists& lists) : txns_(txns), lists_(lists) {}

  void routes(api_routes& api);

 private:
  frontend::transactions_frontend& txns_;
  cluster_lists& lists_;
};

}  // namespace moonmq::daemon
