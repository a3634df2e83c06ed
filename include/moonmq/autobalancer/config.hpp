// The `Server.Autobalance` section of appsettings.json (and the `autobalance` object of a planner snapshot), as
// plain structs with the documented defaults. Parsing from JSON lives in lib/ (see config_json.hpp); these types are
// pure and can be built by hand by an embedding broker.
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace moonmq::autobalancer {

/// One entry of `Autobalance.Goals`. Unset parameters take the goal's own default.
struct goal_config {
  std::string name;                        ///< registered goal name: NW_IN, NW_OUT, DISK, PARTITION_COUNT or custom
  std::optional<double> deviation;         ///< band half-width as a fraction of the mean (default 0.1)
  std::optional<double> detect_threshold;  ///< the goal is satisfied while the mean is below this
  std::optional<double> min_change;        ///< net change of an out-of-band broker under this fraction of the mean is
                                           ///< undone as not worth moving data for (default 0.05)
};

/// What a broker can carry (`Autobalance.Capacity`): inbound and outbound bytes per second and bytes on disk.
/// 0 = not stated.
struct broker_capacity {
  double nw_in = 0;
  double nw_out = 0;
  double disk = 0;
  bool operator==(const broker_capacity&) const = default;
};

/// `Server.Autobalance`.

struct autobalance_config {
  bool enabled = false;
  std::uint32_t interval_seconds = 60;
  bool dry_run = true;
  std::uint32_t max_actions_per_detect = 50;
  std::uint32_t window = 60;               ///< load samples kept per partition
  std::uint32_t min_valid = 1;             ///< samples needed before a partition's load counts
  std::uint32_t settle_samples = 2;        ///< inbound samples a moved partition's new owner reports before it may
                                           ///< move again (at most Window)
  double percentile = 0.9;                 ///< load figure taken from the window
  std::uint32_t max_moves_per_broker = 1;  ///< concurrent moves a broker runs at once (execution, not planning)
  std::vector<goal_config> goals = default_goals();
  std::vector<std::string> excluded_topics;   ///< never move
  std::vector<std::string> excluded_brokers;  ///< never receive
  /// `Capacity.Default`: for every broker not listed in `Capacity.Brokers` (and for the resources a listed one leaves
  /// unstated).
  broker_capacity default_capacity;
  /// `Capacity.Brokers`, by broker id.
  std::map<std::string, broker_capacity> capacity;
  /// With capacities known, no broker is planned above this share of a capacity (`MaxUtilization`).
  double max_utilization = 0.8;

  /// The capacity that applies to broker `id`: its own entry, its unstated resources from the default.
  broker_capacity capacity_of(const std::string& id) const {
    broker_capacity c = default_capacity;
    if (auto it = capacity.find(id); it != capacity.end()) {
      if (it->second.nw_in > 0) c.nw_in = it->second.nw_in;
      if (it->second.nw_out > 0) c.nw_out = it->second.nw_out;
      if (it->second.disk > 0) c.disk = it->second.disk;
    }
    return c;
  }

  static std::vector<goal_config> default_goals() {
    return {{"NW_IN", {}, {}, {}}, {"NW_OUT", {}, {}, {}}, {"DISK", {}, {}, {}}, {"PARTITION_COUNT", {}, {}, {}}};
  }
};

/// The relative capacity of each of `brokers` (placement of a new topic's partitions): over the resources whose
/// capacity is stated for every one of them, the mean of each broker's capacity divided by the brokers' mean; all 1
/// when none is.
inline std::vector<double> relative_capacities(const autobalance_config& c, const std::vector<std::string>& brokers) {
  std::vector<double> out(brokers.size(), 0.0);
  int stated = 0;
  for (double broker_capacity::*r : {&broker_capacity::nw_in, &broker_capacity::nw_out, &broker_capacity::disk}) {
    std::vector<double> caps;
    double sum = 0;
    bool all = !brokers.empty();
    for (const auto& b : brokers) {
      caps.push_back(c.capacity_of(b).*r);
      all = all && caps.back() > 0;
      sum += caps.back();
    }
    if (!all) continue;
    const double mean = sum / static_cast<double>(caps.size());
    for (std::size_t i = 0; i < caps.size(); ++i) out[i] += caps[i] / mean;
    ++stated;
  }
  for (auto& w : out) w = stated ? w / stated : 1.0;
  return out;
}

}  // namespace moonmq::autobalancer
