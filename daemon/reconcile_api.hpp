// moonmqd's routes for reconciling strays (docs/cluster.md, "Strays"): a partition with a log on a broker that the
// topic catalog did not make there, beside the log the cluster serves. Any broker answers for the cluster:
//   GET  /v1/topics/{t}/reconcile                     every partition of t with more than one log: who serves it
//                                                     (and its size), and each stray (broker, size)
//   POST /v1/topics/{t}/partitions/{p}/reconcile      (admin) the operator's decision for partition p, one of
//        {"keep": B, "from"?: N}     B's log is the partition's: with B the owner, every stray is emptied; with B a
//                                    stray's holder, the served log is emptied and B's records appended in its place
//                                    (then every stray is emptied)
//        {"append": B, "from"?: N}   B's stray is appended to the served log as new records, then emptied
//      The answer says what was done, and for an append the offsets the records were given ("runs"); an error answer
//      carries the same fields (what was done before it). A large stray is appended in steps: "done": false with
//      "next" says to POST again with "from": next (moonmqctl does).
// Each step runs on the broker whose log it changes, over POST /cluster/admin/strays {"action": check | append |
// discard | clear, "topic", "partition", and "from" (append), "appended" (discard), "producer_id" and "resumed"
// (clear)} (cluster::stray_reconciler).
// Thread safety: the routes may run concurrently.
#pragma once

#include <httplib.h>

#include "cluster/wire_strays.hpp"
#include "api_routes.hpp"

#include <functional>
#include <string>

#include "json/writer.hpp"

#include "cluster_view.hpp"
#include "moonmq/cluster/stray_reconciler.hpp"
#include "moonmq/transport/message.hpp"

namespace moonmq::daemon {

class reconcile_api {
 public:
  reconcile_api(cluster::stray_reconciler& here, cluster_view& view) : here_(here), view_(view) {}

  void routes(api_routes& api);

  /// POST /cluster/admin/strays: a step on this broker.
  transport::response handle_cluster(const transport::request& req);

 private:
  void show(const std::string& topic, httplib::Response& res);
  void decide(const std::string& topic, std::int32_t partition, const httplib::Request& req, httplib::Response& res);
  /// A step on `broker` (this one, or a peer over the cluster route).
  transport::response step(const std::string& broker, const cluster::wire::stray_step& s);

  cluster::stray_reconciler& here_;
  cluster_view& view_;
};

}  // namespace moonmq::daemon
