// Reads `Server.Autobalance` from a RapidJSON value (shared by the config loader and the planner). Internal to lib/.
#pragma once

#include <rapidjson/document.h>

#include <string>

#include "moonmq/autobalancer/config.hpp"
#include "moonmq/core/result.hpp"

namespace moonmq::autobalancer {

/// Fills `out` from the object `v` (keys not present keep their defaults). Errors name the key under `path`.
status read_autobalance_config(const rapidjson::Value& v, const std::string& path, autobalance_config& out);

}  // namespace moonmq::autobalancer
