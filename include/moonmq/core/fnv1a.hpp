// FNV-1a, 32 bits: the spec's hash for a keyed record's partition and a group's (or topic's) coordinator. Pure.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "moonmq/core/ids.hpp"

namespace moonmq {

inline std::uint32_t fnv1a(std::string_view s) noexcept {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

/// The broker that coordinates `key` among `brokers`: fnv1a(key) modulo their number, over the ids sorted (so every
/// broker with the same list picks the same one). Empty when there are none.
inline broker_id coordinator_by_hash(std::string_view key, std::vector<broker_id> brokers) {
  std::sort(brokers.begin(), brokers.end());
  brokers.erase(std::unique(brokers.begin(), brokers.end()), brokers.end());
  if (brokers.empty()) return broker_id();
  return brokers[fnv1a(key) % brokers.size()];
}

}  // namespace moonmq
