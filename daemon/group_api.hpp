// moonmqd's consumer group client routes: join, heartbeat, leave and describe under /v1/groups, each decoded into a
// typed call on the group's coordinator (groups::group_routes: here, or forwarded) and its answer encoded
// (lib/groups/group_wire.hpp).
// Thread safety: the routes may run concurrently.
#pragma once

#include <httplib.h>

#include "api_routes.hpp"
#include "cluster_lists.hpp"

#include "moonmq/groups/group_routes.hpp"

namespace moonmq::daemon {

class group_api {
 public:
  group_api(groups::group_routes& routes, cluster_lists& lists) : routes_(routes), lists_(lists) {}

  /// Registers POST /v1/groups/{g}/{join,heartbeat,leave}, GET /v1/groups and GET /v1/groups/{g}.
  void routes(api_routes& api);

 private:
  groups::group_routes& routes_;
  cluster_lists& lists_;
};

}  // namespace moonmq::daemon
