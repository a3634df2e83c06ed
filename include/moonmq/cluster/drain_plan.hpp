// What a draining broker does next: which of its partitions go where, and why the others cannot go yet. A drain
// empties one broker (maintenance, decommissioning): each partition it serves moves to the reachable broker that is
// neither draining nor excluded and holds the fewest bytes (counting what this plan already sends it), largest
// partitions first, never more moves at once than allowed. Every partition that cannot start is listed with the
// reason, so that an operator sees why a drain is stuck.
// Pure: a function of what the caller gathered. Thread safety: none needed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "moonmq/core/ids.hpp"

namespace moonmq::cluster {

/// A broker that might take partitions.
struct drain_target {
  std::string id;
  bool reachable = true;
  bool draining = false;
  std::uint64_t bytes = 0;  ///< what it serves now
};

/// A partition the draining broker serves.
struct drain_partition {
  topic_partition partition;
  std::uint64_t size_bytes = 0;
  bool moving = false;  ///< a move of it runs now
  std::string held;     ///< non-empty: not to be moved now, and why (e.g. its last move failed a moment ago)
};

struct drain_move {
  topic_partition partition;
  std::string dest;
  std::uint64_t size_bytes = 0;
};

struct drain_blocked {
  topic_partition partition;
  std::string reason;
};

struct drain_plan {
  std::vector<drain_move> start;      ///< moves to start now
  std::vector<drain_blocked> blocked;  ///< partitions that cannot move, and why
  std::size_t partitions_left = 0;     ///< partitions still on the broker (moving ones included)
  std::uint64_t bytes_left = 0;
  std::size_t moving = 0;  ///< moves already running
};

/// Plans the next moves of a drain of `self`. `excluded`: brokers that never receive (Autobalance.ExcludedBrokers).
inline drain_plan plan_drain(const std::string& self, std::vector<drain_partition> partitions,
                             const std::vector<drain_target>& targets, std::size_t max_moves,
                             const std::set<std::string>& excluded = {}) {
  drain_plan out;
  std::map<std::string, std::uint64_t> load;  // receivers: bytes now plus what this plan sends
  std::vector<std::string> why_none;
  for (const auto& t : targets) {
    if (t.id == self) continue;
    if (!t.reachable)
      why_none.push_back(t.id + " is unreachable");
    else if (t.draining)
      why_none.push_back(t.id + " is draining too");
    else if (excluded.count(t.id))
      why_none.push_back(t.id + " is excluded (ExcludedBrokers)");
    else
      load[t.id] = t.bytes;
  }
  std::sort(partitions.begin(), partitions.end(), [](const drain_partition& a, const drain_partition& b) {
    return a.size_bytes != b.size_bytes ? a.size_bytes > b.size_bytes : a.partition < b.partition;
  });
  for (const auto& p : partitions) {
    ++out.partitions_left;
    out.bytes_left += p.size_bytes;
    if (p.moving) ++out.moving;
  }
  std::size_t slots = max_moves > out.moving ? max_moves - out.moving : 0;
  for (const auto& p : partitions) {
    if (p.moving) continue;
    if (!p.held.empty()) {
      out.blocked.push_back({p.partition, p.held});
      continue;
    }
    if (is_internal_topic(p.partition.topic)) {
      out.blocked.push_back({p.partition, "internal topics never move"});
      continue;
    }
    if (load.empty()) {
      std::string reason = "no broker can take it";
      for (std::size_t i = 0; i < why_none.size(); ++i) reason += (i ? "; " : ": ") + why_none[i];
      if (why_none.empty()) reason += ": the cluster has no other broker";
      out.blocked.push_back({p.partition, reason});
      continue;
    }
    if (slots == 0) {
      out.blocked.push_back({p.partition, "waiting: " + std::to_string(max_moves) + " move" +
                                              (max_moves == 1 ? "" : "s") + " at a time (MaxMovesPerBroker)"});
      continue;
    }
    auto best = std::min_element(load.begin(), load.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second < b.second : a.first < b.first;
    });
    out.start.push_back({p.partition, best->first, p.size_bytes});
    best->second += p.size_bytes;
    --slots;
  }
  return out;
}

}  // namespace moonmq::cluster
