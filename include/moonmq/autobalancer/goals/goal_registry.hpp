// Goals by name: the built-ins (NW_IN, NW_OUT, DISK, PARTITION_COUNT) and any a user registers, so that
// `Autobalance.Goals` can list them in priority order.
// Thread safety: register goals before detectors are created from the registry; lookups are then read-only.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "moonmq/autobalancer/goals/goal.hpp"
#include "moonmq/autobalancer/goals/partition_count_goal.hpp"
#include "moonmq/autobalancer/goals/resource_distribution_goal.hpp"
#include "moonmq/core/result.hpp"

namespace moonmq::autobalancer {

class goal_registry {
 public:
  /// Builds a goal from its configuration entry (name and the optional common parameters).
  using factory = std::function<std::unique_ptr<goal>(const goal_config&)>;

  /// A registry holding the four built-in goals.
  static goal_registry with_builtins() {
    goal_registry r;
    auto add_resource = [&r](const char* name, resource res) {
      r.add(name, [name, res](const goal_config& c) -> std::unique_ptr<goal> {
        return std::make_unique<resource_distribution_goal>(
            name, res, distribution_params::from(c, resource_distribution_goal::defaults(res)));
      });
    };
    add_resource("NW_IN", resource::nw_in);
    add_resource("NW_OUT", resource::nw_out);
    add_resource("DISK", resource::disk);
    r.add("PARTITION_COUNT", [](const goal_config& c) -> std::unique_ptr<goal> {
      return std::make_unique<partition_count_goal>(distribution_params::from(c, {}));
    });
    return r;
  }

  /// Registers (or replaces) the goal called `name`.
  void add(std::string name, factory f) { factories_[std::move(name)] = std::move(f); }

  bool contains(const std::string& name) const { return factories_.count(name) != 0; }

  /// The registered names, sorted.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [n, f] : factories_) out.push_back(n);
    return out;
  }

  /// Builds the goal configured by `c`; an unknown name is an error naming it.
  result<std::unique_ptr<goal>> create(const goal_config& c) const {
    auto it = factories_.find(c.name);
    if (it == factories_.end()) return error{errc::invalid_argument, "unknown goal '" + c.name + "'"};
    if (c.deviation && (*c.deviation < 0 || *c.deviation >= 1))
      return error{errc::invalid_argument, "goal '" + c.name + "': Deviation must be in [0, 1)"};
    if (c.detect_threshold && *c.detect_threshold < 0)
      return error{errc::invalid_argument, "goal '" + c.name + "': DetectThreshold must not be negative"};
    if (c.min_change && (*c.min_change < 0 || *c.min_change >= 1))
      return error{errc::invalid_argument, "goal '" + c.name + "': MinChange must be in [0, 1)"};
    return it->second(c);
  }

 private:
  std::map<std::string, factory> factories_;
};

}  // namespace moonmq::autobalancer
