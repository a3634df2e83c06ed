// Test shorthand for the ownership table: record a new owner one version above what the table knows.
#pragma once

#include "moonmq/cluster/ownership_table.hpp"

namespace moonmq::test {

/// `owner` owns `tp` from the next version on (out of handover), recorded in `table`.
inline status set_owner(cluster::ownership_table& table, const topic_partition& tp, const broker_id& owner) {
  auto e = table.entry(tp);
  return table.record({tp, owner, (e ? e->version : 0) + 1, false});
}

}  // namespace moonmq::test
