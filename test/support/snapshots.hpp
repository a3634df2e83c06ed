// Small builders for snapshots in tests: brokers by name, partitions with loads in MiB/s and MiB.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "moonmq/autobalancer/detector.hpp"
#include "moonmq/autobalancer/model/snapshot.hpp"

namespace moonmq::test {

using namespace moonmq::autobalancer;

inline constexpr double MiB = 1024.0 * 1024.0;

/// Adds brokers b1..bn (all active) to a new snapshot.
inline snapshot brokers(int n) {
  snapshot s;
  for (int i = 1; i <= n; ++i) s.add_broker("b" + std::to_string(i));
  return s;
}

/// Adds a partition of `topic` on broker `owner` (by index) with loads given in MiB/s and MiB.
inline partition_index add(snapshot& s, const std::string& topic, int partition, broker_index owner, double nw_in_mib,
                           double nw_out_mib = 0, double disk_mib = 0) {
  return s.add_partition(topic, partition, owner, load_vector{{nw_in_mib * MiB, nw_out_mib * MiB, disk_mib * MiB}});
}

/// A configuration with only the named goals, each with the given deviation and no threshold or min-change.
inline autobalance_config only_goals(std::vector<std::string> names, double deviation = 0.1, double min_change = 0.0,
                                     std::uint32_t max_actions = 100000) {
  autobalance_config c;
  c.goals.clear();
  for (auto& n : names) c.goals.push_back({n, deviation, 0.0, min_change});
  c.max_actions_per_detect = max_actions;
  return c;
}

inline anomaly_detector make_detector(const autobalance_config& c) {
  auto d = anomaly_detector::create(c);
  if (!d) throw std::runtime_error(d.message());
  return std::move(d.value());
}

/// Total load of one resource over all brokers.
inline double total(const snapshot& s, resource r) {
  double t = 0;
  for (broker_index b = 0; b < s.broker_count(); ++b) t += s.broker_load(b, r);
  return t;
}

/// Recomputes broker totals from the partitions (to check the incremental bookkeeping).
inline std::vector<load_vector> recomputed_totals(const snapshot& s) {
  std::vector<load_vector> out(s.broker_count());
  for (partition_index p = 0; p < s.partition_count(); ++p)
    for (std::size_t r = 0; r < resource_count; ++r) out[s.owner(p)].v[r] += s.loads(p).v[r];
  return out;
}

}  // namespace moonmq::test
