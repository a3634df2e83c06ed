// moonmqd's client routes for data: produce, fetch, and committed group offsets (topics: topic_api.hpp).
//   POST /v1/topics/{t}/records                                           produce, routed to the owner (also of a
//                                                                         topic this broker has never had)
//   GET  /v1/topics/{t}/partitions/{p}/records                            fetch (421 with the owner elsewhere)
//   POST /v1/groups/{g}/offsets · GET /v1/groups/{g}/offsets              commit / read at the partition's owner
// Idempotent and transactional produce go through the producer states and the transaction coordinator.
// Thread safety: the routes may run concurrently.
#pragma once

#include <httplib.h>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>
#include <atomic>

#include "cluster_view.hpp"
#include "moonmq/cluster/local_loads.hpp"
#include "moonmq/cluster/ownership_table.hpp"
#include "moonmq/cluster/partition_gates.hpp"
#include "moonmq/cluster/producer_states.hpp"
#include "moonmq/cluster/router.hpp"
#include "moonmq/cluster/traffic.hpp"
#include "moonmq/core/metrics_sink.hpp"
#include "moonmq/core/offload.hpp"
#include "moonmq/groups/group_routes.hpp"
#include "moonmq/groups/group_service.hpp"
#include "moonmq/storage/offset_store.hpp"
#include "moonmq/storage/partition_store.hpp"
#include "moonmq/txn/txn_service.hpp"

namespace moonmq::daemon {

/// What the data routes work with (all owned by the broker, which outlives the routes).
struct record_api_parts {
  broker_id self;
  storage::partition_store* store;
  storage::offset_store* offsets;
  cluster::ownership_table* ownership;
  cluster::producer_states* producers;
  cluster::router* router;
  cluster::partition_gates* gates;
  cluster::traffic* counters;
  txn::txn_service* txns;
  groups::group_service* groups;
  groups::group_routes* group_routes;
  metrics_sink* metrics;
  asio::io_context* io;  ///< the reactor forwarded produces run on
  /// Asked when a request names a topic this broker does not have (without Raft, nothing here knows where its
  /// partitions live): the produce goes to the owner, a fetch gets 421 naming it. Null: 404.
  const cluster_view* view = nullptr;
};

class record_api {
 public:
  explicit record_api(const record_api_parts& p)
      : self_(p.self),
        store_(p.store),
        offsets_(p.offsets),
        ownership_(p.ownership),
        producers_(p.producers),
        router_(p.router),
        gates_(*p.gates),
        counters_(*p.counters),
        txns_(p.txns),
        groups_(p.groups),
        group_routes_(p.group_routes),
        metrics_(*p.metrics),
        io_(*p.io),
        view_(p.view) {}

  void routes(httplib::Server& api);

 private:
  void produce(const httplib::Request& req, httplib::Response& res);
  void not_owner(httplib::Response& res, const topic_partition& tp);
  void out_of_range(httplib::Response& res, const topic_partition& tp, std::uint64_t offset, std::uint64_t end);
  void fetch(const httplib::Request& req, httplib::Response& res);
  void commit(const httplib::Request& req, httplib::Response& res);
  void committed(const httplib::Request& req, httplib::Response& res);

  /// Runs a coroutine on the reactor and waits for it (from a listener thread).
  template <typename T>
  T on_reactor(asio::awaitable<T> work) {
    return std::move(*asio::co_spawn(io_, as_optional(std::move(work)), asio::use_future).get());
  }

  broker_id self_;
  storage::partition_store* store_;
  storage::offset_store* offsets_;
  cluster::ownership_table* ownership_;
  cluster::producer_states* producers_;
  cluster::router* router_;
  cluster::partition_gates& gates_;
  cluster::traffic& counters_;
  txn::txn_service* txns_;
  groups::group_service* groups_;
  groups::group_routes* group_routes_;
  metrics_sink& metrics_;
  asio::io_context& io_;
  const cluster_view* view_;
  std::atomic<std::uint64_t> round_robin_{0};
};

}  // namespace moonmq::daemon
