// The rule for topic names, shared by every store and route: 1 to 249 characters from [A-Za-z0-9._-], not "." or
// "..". A valid name is always a safe file name.
// Thread safety: pure.
#pragma once

#include <string>
#include <string_view>

#include "moonmq/core/result.hpp"

namespace moonmq {

inline status validate_topic_name(std::string_view t) {
  if (t.empty() || t.size() > 249)
    return {errc::invalid_argument, "topic name must be 1 to 249 characters, got " + std::to_string(t.size())};
  if (t == "." || t == "..") return {errc::invalid_argument, "topic name '" + std::string(t) + "' is reserved"};
  for (char c : t) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok)
      return {errc::invalid_argument, "topic name '" + std::string(t) + "' has a character outside [A-Za-z0-9._-]"};
  }
  return {};
}

}  // namespace moonmq
