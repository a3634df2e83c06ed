// For the group state machine's tests: partitions spread over owners, and owners that clear at once.
#pragma once

#include <string>
#include <vector>

#include "moonmq/groups/group.hpp"

namespace moonmq::test {

/// `n` partitions of `topic`, partition i owned by owners[i % owners.size()].
inline std::vector<groups::placement> spread(const std::string& topic, int n, std::vector<broker_id> owners) {
  std::vector<groups::placement> out;
  for (int i = 0; i < n; ++i) out.push_back({{topic, i}, owners[static_cast<std::size_t>(i) % owners.size()]});
  return out;
}

/// Every owner clears what waits for it (the owners answer at once).
inline void clear(groups::group& g) {
  for (const auto& p : g.needing_clearance()) g.cleared_by_owner(p.partition);
}

}  // namespace moonmq::test
