// Reading the `Autobalance` configuration from JSON text (implemented in lib/ with RapidJSON, so that this header
// stays light). Unknown keys and wrong types are errors naming the key's path.
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "moonmq/autobalancer/config.hpp"
#include "moonmq/core/result.hpp"

namespace moonmq::autobalancer {

/// Parses a JSON object with the keys of `Server.Autobalance`; `path` prefixes key names in error messages.
result<autobalance_config> parse_autobalance_config(std::string_view json, std::string_view path = "Autobalance");

}  // namespace moonmq::autobalancer
