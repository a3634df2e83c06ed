// moonmqd's client side, composed over the broker's parts: the front ends (produce, fetch, offsets, topic admin, move
// requests, transactions; groups are the coordinators'), the HTTP routes and the Kafka handlers that decode into them,
// the operator's routes and their executors (drain, reclaim, the peer watch), and the client and Kafka listeners.
// broker.cpp builds the parts
// below it (disk, peers, Raft, topics, the cluster service, mover and coordinators) and hands them in.
// Thread safety: open() and stop() from the broker's thread; the routes run on the listener's threads.
#pragma once

#include <asio/any_io_executor.hpp>
#include <functional>
#include <memory>
#include <string>

#include "broker_disk.hpp"
#include "client_auth.hpp"
#include "cluster_link.hpp"
#include "coordinators.hpp"
#include "listener_refusals.hpp"
#include "moonmq/cluster/balance_loop.hpp"
#include "moonmq/cluster/cluster_service.hpp"
#include "moonmq/cluster/hand_moves.hpp"
#include "moonmq/cluster/reassigner.hpp"
#include "moonmq/cluster/router.hpp"
#include "moonmq/cluster/topic_directory.hpp"
#include "moonmq/raft/service.hpp"
#include "moonmq/transport/http_transport.hpp"
#include "move_throttle.hpp"
#include "prometheus_sink.hpp"

namespace moonmq::daemon {

struct client_api_parts {
  const cluster::server_config* cfg = nullptr;
  broker_id self;
  broker_disk* disk = nullptr;
  cluster_link* link = nullptr;
  cluster::cluster_state state;
  prometheus_sink* metrics = nullptr;
  logger* log = nullptr;
  cluster::topic_directory* topics = nullptr;
  cluster::router* router = nullptr;
  cluster::reassigner* reassigner = nullptr;
  cluster::hand_moves* hand_moves = nullptr;
  move_throttle* throttle = nullptr;
  coordinators* coordination = nullptr;       ///< the group and transaction coordinators
  cluster::balance_loop* balancer = nullptr;  ///< null without Autobalance
  raft::service* raft = nullptr;              ///< null without Cluster.Raft
  asio::any_io_executor io;                   ///< the broker's reactor (drain's moves start there)
  std::function<std::string()> controller_id;
  runtime* rt = nullptr;  ///< the broker's clocks and schedule (the drain, reclaim and peer-watch jobs)
};

class client_api {
 public:
  ~client_api();
  static result<std::unique_ptr<client_api>> open(client_api_parts parts);

  /// The /cluster/admin/* routes (topics, drain, reclaim, strays, the balancer, the Kafka address).
  transport::response handle_admin(const transport::request& r);
  /// Without Raft: the topic records decided while this broker was away, from their coordinators.
  void catch_up_topics();

  /// Binds the client listener; an error names the address.
  status listen(const client_auth& auth, listener_refusals& refusals);
  std::uint16_t port() const;
  /// The Kafka listener's port (0: none).
  std::uint16_t kafka_port() const;
  /// Stops the listener, then the executors that start moves (before the reactor stops).
  void stop_listener();
  void stop_executors();

 private:
  explicit client_api(client_api_parts p);
  status build();
  /// The partitions this broker serves, with their sizes and rates.
  std::vector<cluster::partition_load> local_loads() const;
  /// GET /cluster/admin/kafka: this broker's advertised Kafka address, {"host","port"} (404 without a listener).
  transport::response kafka_address() const;
  /// Every peer's answer to it: broker id -> "host:port", for the peers that answered.
  std::map<std::string, std::string> peer_kafka_addresses() const;

  struct impl;
  std::unique_ptr<impl> m_;
};

}  // namespace moonmq::daemon
