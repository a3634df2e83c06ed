// moonmqd's topic routes: a topic is created, grown and deleted for the whole cluster (cluster::topic_directory).
//   POST   /v1/topics {"name","partitions"?,"placement"?,"brokers"?}   (admin) create; 409 topic_exists when any broker
//                                                                    has the name; 503 naming a broker that might
//   GET    /v1/topics                                                the cluster's topics (and this broker's own
//                                                                    topics that the catalog does not list)
//   POST   /v1/topics/{t}/partitions {"count"}                        (admin) grow for the cluster
//   DELETE /v1/topics/{t}                                            (admin) delete for the cluster
//   POST   /v1/topics/{t}/adopt                                      (admin) a topic made before topics were cluster
//                                                                    metadata enters the catalog: each partition's
//                                                                    log is one serving broker's, the others' strays
// With Raft the broker that receives a change decides it through the log. Without Raft it is forwarded to the
// topic's coordinator over the cluster routes this class also answers:
//   POST /cluster/admin/topics/change        a change, decided on the coordinator (the body a client sent, resolved)
//   POST /cluster/admin/topics/learn         a decided record, told by the coordinator to every broker
//   GET  /cluster/admin/topics/holds?name=   whether this broker has a log of that name; the partitions it serves
//   GET  /cluster/admin/topics/catalog       this broker's catalog (a broker that starts learns what it missed)
//   POST /cluster/admin/topics/claim         an adoption's claim of this broker's logs (topic_directory::claim)
// Placement of a new topic's partitions (and of those a grow adds): spread over the brokers that answered, each to the
// one serving the fewest partitions; `"placement":"local"` puts them all on the receiving broker (the spec's
// behaviour); `"brokers":[...]` spreads them over the brokers named.
// Thread safety: the routes may run concurrently; changes are serialized by the directory.
#pragma once

#include <httplib.h>

#include "api_routes.hpp"

#include <functional>
#include <string>
#include <vector>

#include "cluster_view.hpp"
#include "moonmq/autobalancer/config.hpp"
#include "moonmq/cluster/topic_directory.hpp"
#include "moonmq/storage/partition_store.hpp"
#include "moonmq/transport/message.hpp"

namespace moonmq::daemon {

class topic_api {
 public:
  /// `served`: how many partitions this broker serves now (what placement balances); `balance`: the balancer's
  /// settings, whose stated capacities weigh placement (a broker twice the size takes twice the partitions).
  /// `own_entry`: this broker's ownership entry of a partition (what a peer answers on GET /cluster/owner).
  topic_api(cluster::topic_directory& topics, cluster_view& view, storage::partition_store& store,
            std::function<std::size_t()> served, autobalancer::autobalance_config balance = {},
            std::function<std::optional<cluster::ownership_entry>(const topic_partition&)> own_entry = {})
      : topics_(topics),
        view_(view),
        store_(store),
        served_(std::move(served)),
        own_entry_(std::move(own_entry)),
        balance_(std::move(balance)) {}

  void routes(api_routes& api);

  /// The /cluster/admin/topics/* routes.
  transport::response handle_cluster(const transport::request& req);

  /// Without Raft, at start: learns from every peer the records of the topics that peer coordinates.
  void catch_up();

 private:
  /// A client's change, resolved: what it asks for and, for a local placement, which broker received it.
  struct change_request {
    std::string op;  ///< create, grow, delete
    std::string name;
    std::uint32_t partitions = 0;  ///< create: the count; grow: the new count
    std::string placement = "spread";
    std::vector<std::string> brokers;  ///< where the partitions may go (local: the receiving broker)
  };

  transport::response submit(const change_request& c);
  transport::response decide_here(const change_request& c);
  /// What one broker said of a topic about to be made or grown to `partitions`.
  struct answer {
    broker_id broker;
    std::size_t served = 0;  ///< partitions it serves now
    bool holds = false;      ///< it has a log of the topic's name
    status room;             ///< whether it could hold the topic at that count (its limits)
  };
  /// Every broker that answered, or the answer that refuses the change: with `refuse_holders` (a create), any broker
  /// holding a log of the name, or not answering, refuses it.
  struct survey {
    std::vector<answer> answers;
    std::optional<transport::response> refusal;
  };
  survey ask_everyone(const std::string& name, std::uint32_t partitions, bool refuse_holders);
  std::vector<std::string> tell_everyone(const cluster::topic_record& r);

  void create(const httplib::Request& req, httplib::Response& res);
  void list(httplib::Response& res);
  void grow(const httplib::Request& req, httplib::Response& res);
  /// POST /v1/topics/{t}/adopt: a topic made before topics were cluster metadata enters the catalog (docs/cluster.md,
  /// "Adopting a topic made before").
  void adopt(const httplib::Request& req, httplib::Response& res);
  void remove(const httplib::Request& req, httplib::Response& res);

  cluster::topic_directory& topics_;
  cluster_view& view_;
  storage::partition_store& store_;
  std::function<std::size_t()> served_;
  std::function<std::optional<cluster::ownership_entry>(const topic_partition&)> own_entry_;
  autobalancer::autobalance_config balance_;
};

}  // namespace moonmq::daemon
