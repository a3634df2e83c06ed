#include "autobalancer/config_reader.hpp"

#include <set>

#include "json/object_reader.hpp"
#include "moonmq/autobalancer/config_json.hpp"

namespace moonmq::autobalancer {

namespace {

status read_goal(const rapidjson::Value& v, const std::string& path, goal_config& g) {
  json::object_reader r(v, path);
  r.get("Name", g.name, true);
  r.get("Deviation", g.deviation);
  r.get("DetectThreshold", g.detect_threshold);
  r.get("MinChange", g.min_change);
  if (r.ok() && g.name.empty()) r.fail("Name", "must not be empty");
  if (r.ok() && g.deviation && (*g.deviation < 0 || *g.deviation >= 1)) r.fail("Deviation", "must be in [0, 1)");
  if (r.ok() && g.detect_threshold && *g.detect_threshold < 0) r.fail("DetectThreshold", "must not be negative");
  if (r.ok() && g.min_change && (*g.min_change < 0 || *g.min_change >= 1)) r.fail("MinChange", "must be in [0, 1)");
  return r.finish();
}

status read_capacity(const rapidjson::Value& v, const std::string& path, broker_capacity& c) {
  json::object_reader r(v, path);
  r.get("NwIn", c.nw_in);
  r.get("NwOut", c.nw_out);
  r.get("Disk", c.disk);
  for (auto [key, value] : {std::pair<const char*, double>{"NwIn", c.nw_in}, {"NwOut", c.nw_out}, {"Disk", c.disk}})
    if (r.ok() && value < 0) r.fail(key, "must not be negative (0 = not stated)");
  return r.finish();
}

status read_capacities(const rapidjson::Value& v, const std::string& path, autobalance_config& c) {
  json::object_reader r(v, path);
  if (const auto* d = r.member("Default")) {
    if (auto s = read_capacity(*d, r.child_path("Default"), c.default_capacity); !s) return s;
  }
  if (const auto* brokers = r.member("Brokers")) {
    if (!brokers->IsObject()) {
      r.fail("Brokers", std::string("expected an object of broker ids, got ") + json::type_name(*brokers));
    } else {
      c.capacity.clear();
      for (auto it = brokers->MemberBegin(); it != brokers->MemberEnd(); ++it) {
        std::string id(it->name.GetString(), it->name.GetStringLength());
        broker_capacity b;
        if (auto s = read_capacity(it->value, r.child_path("Brokers") + "." + id, b); !s) return s;
        c.capacity[id] = b;
      }
    }
  }
  return r.finish();
}

}  // namespace

status read_autobalance_config(const rapidjson::Value& v, const std::string& path, autobalance_config& c) {
  json::object_reader r(v, path);
  r.get("Enabled", c.enabled);
  r.get("IntervalSeconds", c.interval_seconds);
  r.get("DryRun", c.dry_run);
  r.get("MaxActionsPerDetect", c.max_actions_per_detect);
  r.get("Window", c.window);
  r.get("MinValid", c.min_valid);
  r.get("SettleSamples", c.settle_samples);
  r.get("Percentile", c.percentile);
  r.get("MaxMovesPerBroker", c.max_moves_per_broker);
  r.get("ExcludedTopics", c.excluded_topics);
  r.get("ExcludedBrokers", c.excluded_brokers);
  r.get("MaxUtilization", c.max_utilization);
  if (const auto* cap = r.member("Capacity")) {
    if (auto s = read_capacities(*cap, r.child_path("Capacity"), c); !s) return s;
  }
  if (const auto* goals = r.member("Goals")) {
    if (!goals->IsArray()) {
      r.fail("Goals", std::string("expected an array of goals, got ") + json::type_name(*goals));
    } else {
      c.goals.clear();
      std::set<std::string> seen;
      for (rapidjson::SizeType i = 0; i < goals->Size() && r.ok(); ++i) {
        std::string gp = r.child_path("Goals") + "[" + std::to_string(i) + "]";
        goal_config g;
        if (auto s = read_goal((*goals)[i], gp, g); !s) return s;
        if (!seen.insert(g.name).second)
          return {errc::invalid_argument, gp + ".Name: goal '" + g.name + "' listed twice"};
        c.goals.push_back(std::move(g));
      }
    }
  }
  if (!r.ok()) return r.first_error();
  if (c.interval_seconds < 1) r.fail("IntervalSeconds", "must be at least 1");
  if (c.max_actions_per_detect < 1) r.fail("MaxActionsPerDetect", "must be at least 1");
  if (c.window < 1 || c.window > 65535) r.fail("Window", "must be from 1 to 65535");
  if (c.min_valid > c.window) r.fail("MinValid", "must not exceed Window");
  if (c.settle_samples > c.window) r.fail("SettleSamples", "must not exceed Window");
  if (!(c.percentile > 0 && c.percentile <= 1)) r.fail("Percentile", "must be in (0, 1]");
  if (c.max_moves_per_broker < 1) r.fail("MaxMovesPerBroker", "must be at least 1");
  if (!(c.max_utilization > 0 && c.max_utilization <= 1)) r.fail("MaxUtilization", "must be in (0, 1]");
  return r.finish();
}

result<autobalance_config> parse_autobalance_config(std::string_view text, std::string_view path) {
  rapidjson::Document doc;
  if (auto s = json::parse_document(text, doc, path); !s) return s.err();
  autobalance_config c;
  if (auto s = read_autobalance_config(doc, std::string(path), c); !s) return s.err();
  return c;
}

}  // namespace moonmq::autobalancer
