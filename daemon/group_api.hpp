// moonmqd's consumer group client routes: join, heartbeat, leave and describe under /v1/groups, each made into a
// /cluster/group/* call on the group's coordinator (groups::group_routes, here or forwarded) and its answer relayed.
// A member's connection lives on the broker it joined through: the join names this broker as the member's.
// Thread safety: the routes may run concurrently.
#pragma once

#include <httplib.h>

#include "api_routes.hpp"

#include "moonmq/groups/group_routes.hpp"

namespace moonmq::daemon {

class group_api {
 public:
  group_api(groups::group_service& groups, groups::group_routes& routes) : groups_(groups), routes_(routes) {}

  /// Registers POST /v1/groups/{g}/{join,heartbeat,leave}, GET /v1/groups and GET /v1/groups/{g}.
  void routes(api_routes& api);

 private:
  groups::group_service& groups_;
  groups::group_routes& routes_;
};

}  // namespace moonmq::daemon
