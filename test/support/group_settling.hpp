// Whether a consumer group has settled, as the group tests judge it (in-process and against moonmqd alike).
#pragma once

#include <catch2/catch.hpp>

#include <cstddef>
#include <map>
#include <vector>

namespace moonmq::test {

/// One heartbeat from each member (each must be answered 200): true when each of `count` partitions is held by
/// exactly one member and no member's assignment changed. `Member` has `int beat()` and a set of ints `partitions`.
template <typename Member>
bool settled_after_heartbeats(const std::vector<Member*>& members, std::size_t count) {
  std::map<int, int> holders;
  bool changed = false;
  for (auto* m : members) {
    const auto before = m->partitions;
    REQUIRE(m->beat() == 200);
    changed = changed || before != m->partitions;
    for (int p : m->partitions) ++holders[p];
  }
  bool once = holders.size() == count;
  for (const auto& [p, n] : holders) once = once && n == 1;
  return once && !changed;
}

}  // namespace moonmq::test
