#include "moonmq/frontend/coordinator_jobs.hpp"

#include "moonmq/frontend/placement_directory.hpp"
#include "moonmq/groups/group_routes.hpp"
#include "moonmq/groups/group_service.hpp"
#include "moonmq/txn/txn_service.hpp"

namespace moonmq::frontend {

coordinator_jobs schedule_coordinators(runtime& rt, groups::group_service& groups, groups::group_routes& routes,
                                       txn::txn_service& txns, placement_directory* directory) {
  coordinator_jobs jobs;
  jobs.groups = rt.every(std::chrono::milliseconds(250), [&rt, &groups, &routes, directory] {
    groups.tick(rt.steady_ms());
    if (directory) directory->refresh_if_older(groups.groups().empty() ? 2000 : 0);
    routes.clear_pending();
  });
  jobs.transactions = rt.every(std::chrono::milliseconds(500), [&txns] { txns.tick(); });
  return jobs;
}

}  // namespace moonmq::frontend
