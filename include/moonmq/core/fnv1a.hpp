// FNV-1a, 32 bits: the spec's hash for a keyed record's partition and a group's coordinator. Pure.
#pragma once

#include <cstdint>
#include <string_view>

namespace moonmq {

inline std::uint32_t fnv1a(std::string_view s) noexcept {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

}  // namespace moonmq
