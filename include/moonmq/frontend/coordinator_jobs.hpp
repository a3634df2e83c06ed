// The coordinators' schedule, one body for moonmqd and the simulation, on whichever runtime they pass:
// - every 250 ms the groups expire silent members (first, so that a slow peer below never delays it), the placement
//   directory is refreshed (every tick while groups are coordinated here, every 2 s otherwise, so that a produce for
//   a partition owned elsewhere finds its owner without asking), and owners are asked for clearances;
// - every 500 ms the transactions abort expired ones and deliver pending markers, a job of its own so that a slow
//   peer there never delays the groups' expiry.
#pragma once

#include <memory>

#include "moonmq/core/runtime.hpp"

namespace moonmq::groups {
class group_service;
class group_routes;
}  // namespace moonmq::groups
namespace moonmq::txn {
class txn_service;
}

namespace moonmq::frontend {

class placement_directory;

/// The two jobs; destroying them stops them. Stop them before what their ticks use goes.
struct coordinator_jobs {
  std::unique_ptr<scheduled_job> groups, transactions;
  void stop() {
    if (groups) groups->stop();
    if (transactions) transactions->stop();
  }
};

/// `directory`: null where nothing reads one (the simulation places groups from the brokers themselves).
coordinator_jobs schedule_coordinators(runtime& rt, groups::group_service& groups, groups::group_routes& routes,
                                       txn::txn_service& txns, placement_directory* directory);

}  // namespace moonmq::frontend
