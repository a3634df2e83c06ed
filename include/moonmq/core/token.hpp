// Comparing secrets without leaking, through timing, how much of a guess was right.
// Thread safety: pure.
#pragma once

#include <cstddef>
#include <string_view>

namespace moonmq {

/// Equal contents, in time that depends only on the lengths.
inline bool constant_time_equal(std::string_view a, std::string_view b) noexcept {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const std::size_t n = a.size() < b.size() ? a.size() : b.size();
  for (std::size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  // Walk the longer one too, so a short guess takes as long as a full one.
  for (std::size_t i = n; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i]);
  return diff == 0;
}

}  // namespace moonmq
