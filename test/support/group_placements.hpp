// Who serves what in an in-process cluster, from every broker's own report (what moonmqd gathers over
// /cluster/loads): the placement source a test's group coordinators use.
#pragma once

#include <map>
#include <set>
#include <vector>

#include "moonmq/cluster/local_loads.hpp"
#include "moonmq/groups/group_service.hpp"
#include "support/in_process_cluster.hpp"

namespace moonmq::test {

inline groups::placement_source placements_of(in_process_cluster& c) {
  return [&c](const std::set<std::string>& topics) -> std::optional<std::vector<groups::placement>> {
    std::map<topic_partition, broker_id> seen;
    for (int i = 1; i <= static_cast<int>(c.size()); ++i)
      for (const auto& l : cluster::collect_local_loads(c[i].store, c[i].counters, *c[i].ownership, broker_id(c[i].id)))
        if (topics.count(l.partition.topic)) seen.try_emplace(l.partition, broker_id(c[i].id));
    std::vector<groups::placement> out;
    for (const auto& [tp, owner] : seen) out.push_back({tp, owner});
    return out;
  };
}

}  // namespace moonmq::test
