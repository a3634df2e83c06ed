// A broker's load report (what GET /cluster/loads answers): for every partition this broker owns, its size on disk
// and its cumulative produce/consume byte counters. Partitions it holds but has moved away are not reported: their
// load is the new owner's.
// Thread safety: a pure function of its arguments (each is thread-safe).
#pragma once

#include <cstdint>
#include <vector>

#include "moonmq/cluster/ownership_table.hpp"
#include "moonmq/cluster/producer_states.hpp"
#include "moonmq/cluster/traffic.hpp"
#include "moonmq/storage/partition_store.hpp"

namespace moonmq::cluster {

struct partition_load {
  topic_partition partition;
  std::uint64_t size_bytes = 0;
  std::uint64_t produced_bytes = 0;
  std::uint64_t consumed_bytes = 0;
  bool open_transactions = false;  ///< a transaction is open on it (the balance loop leaves it alone for a while)
  bool operator==(const partition_load&) const = default;
};

/// Bytes of the partitions in `store` that `self` does not serve (copies left by moves, until reclaimed).
inline std::uint64_t unserved_bytes(const storage::partition_store& store, const ownership_table& table,
                                    const broker_id& self) {
  std::uint64_t total = 0;
  for (const auto& tp : store.list_partitions())
    if (!serves(table, tp, self))
      if (auto size = store.size_bytes(tp)) total += *size;
  return total;
}

/// The strays in `store` (ownership_table::withhold) with their sizes (only size_bytes is set).
inline std::vector<partition_load> collect_strays(const storage::partition_store& store, const ownership_table& table) {
  std::vector<partition_load> out;
  for (const auto& tp : table.withheld_all()) {
    auto size = store.size_bytes(tp);
    if (size && *size > 0) out.push_back({tp, *size, 0, 0, false});  // an emptied stray (reconciled) is none
  }
  return out;
}

/// The loads of the partitions `self` serves, sorted by partition. Internal topics are included (they are load too).
/// With `producers`, whether each has a transaction open.
inline std::vector<partition_load> collect_local_loads(const storage::partition_store& store, const traffic& counters,
                                                       const ownership_table& table, const broker_id& self,
                                                       producer_states* producers = nullptr) {
  std::vector<partition_load> out;
  for (const auto& tp : store.list_partitions()) {
    if (!serves(table, tp, self)) continue;
    auto size = store.size_bytes(tp);
    auto c = counters.get(tp);
    out.push_back({tp, size ? *size : 0, c.produced_bytes, c.consumed_bytes,
                   producers && producers->has_open_transactions(tp)});
  }
  return out;
}

}  // namespace moonmq::cluster
