// One page of a list that may be long (the groups or transactional ids a broker coordinates, and the cluster's
// merged lists): the names after `after`, in byte order, at most `limit` of them. A page that stops short of the end
// says which name to ask after next. The same query parameters (`after`, `limit`) on the client API and between
// brokers, so that a merged page never asks a peer for more than one page.
// Thread safety: plain values.
#pragma once

#include <charconv>
#include <cstddef>
#include <map>
#include <string>

#include "moonmq/core/result.hpp"

namespace moonmq::transport {

struct list_page {
  static constexpr std::size_t default_limit = 1000;
  static constexpr std::size_t max_limit = 10000;

  std::string after;  ///< names after this one (empty: from the first)
  std::size_t limit = default_limit;

  /// The page `params` ask for: `limit` a whole number 1..max_limit (default default_limit), `after` any name.
  static result<list_page> from(const std::map<std::string, std::string>& params) {
    list_page p;
    if (auto a = params.find("after"); a != params.end()) p.after = a->second;
    if (auto l = params.find("limit"); l != params.end()) {
      const std::string& t = l->second;
      std::size_t n = 0;
      auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
      if (ec != std::errc{} || end != t.data() + t.size() || n == 0 || n > max_limit)
        return error{errc::invalid_argument, "limit: expected a whole number from 1 to " + std::to_string(max_limit)};
      p.limit = n;
    }
    return p;
  }

  /// Query parameters asking for this page, as a peer is asked.
  std::map<std::string, std::string> params() const {
    std::map<std::string, std::string> out{{"limit", std::to_string(limit)}};
    if (!after.empty()) out["after"] = after;
    return out;
  }
};

}  // namespace moonmq::transport
