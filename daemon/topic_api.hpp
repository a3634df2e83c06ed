// moonmqd's topic routes: decode, call the topic admin front end (frontend/topic_admin.hpp, where the rules live),
// encode (frontend/topic_wire.hpp).
//   POST   /v1/topics {"name","partitions"?,"placement"?,"brokers"?}   (admin) create for the cluster; 409 topic_exists
//                                                                    when any broker has the name; 503 naming a
//                                                                    broker that might
//   GET    /v1/topics                                                the cluster's topics (and this broker's own
//                                                                    topics that the catalog does not list)
//   POST   /v1/topics/{t}/partitions {"count"}                        (admin) grow for the cluster
//   DELETE /v1/topics/{t}                                            (admin) delete for the cluster
//   POST   /v1/topics/{t}/adopt                                      (admin) a topic made before topics were cluster
//                                                                    metadata enters the catalog
// and the cluster routes the front end's peers (frontend/http_topic_peers.hpp) call:
//   POST /cluster/admin/topics/change        a change, decided on the topic's coordinator (without Raft)
//   POST /cluster/admin/topics/learn         a decided record, told by the coordinator to every broker
//   GET  /cluster/admin/topics/holds?name=   whether this broker has a log of that name; the partitions it serves
//   GET  /cluster/admin/topics/catalog       this broker's catalog (a broker that starts learns what it missed)
//   POST /cluster/admin/topics/claim         an adoption's claim of this broker's logs
// Thread safety: the routes may run concurrently.
#pragma once

#include <httplib.h>

#include "api_routes.hpp"
#include "moonmq/frontend/topic_admin.hpp"
#include "moonmq/transport/message.hpp"

namespace moonmq::daemon {

class topic_api {
 public:
  explicit topic_api(frontend::topic_admin& admin, broker_id self) : admin_(admin), self_(std::move(self)) {}

  void routes(api_routes& api);

  /// The /cluster/admin/topics/* routes.
  transport::response handle_cluster(const transport::request& req);

 private:
  void answer(httplib::Response& res, const frontend::outcome<frontend::topic_decision>& d);

  frontend::topic_admin& admin_;
  broker_id self_;
};

}  // namespace moonmq::daemon
