// Loads `appsettings.json` into server_config (see config.hpp for the rules). Implemented in lib/ (RapidJSON).
// Thread safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>
#include <string_view>

#include "moonmq/cluster/config.hpp"
#include "moonmq/core/result.hpp"

namespace moonmq::cluster {

/// Environment overrides, name -> value, e.g. {"MOONMQ_Server__Cluster__BrokerId", "b2"}. Only MOONMQ_Server__*
/// names are settings; others (MOONMQ_FAULTS, moonmqctl's MOONMQ_BROKER and MOONMQ_TOKEN) are ignored.
using environment = std::map<std::string, std::string>;

/// The process environment's MOONMQ_Server__* variables.
environment process_environment();
/// MOONMQ_* variables of the process environment that configure nothing: not MOONMQ_Server__* and not a tool's own
/// (MOONMQ_FAULTS, MOONMQ_BROKER, MOONMQ_TOKEN). moonmqd warns of each at start: a misspelled override
/// (MOONMQ_Server_Port, one underscore) would otherwise be silently ignored.
std::vector<std::string> unused_environment();

/// Parses the document `json` (named `source` in messages) with `env` applied on top.
result<server_config> parse_settings(std::string_view json, const environment& env, std::string_view source);

/// Reads and parses the file at `path`.
result<server_config> load_settings(const std::string& path, const environment& env);

}  // namespace moonmq::cluster
