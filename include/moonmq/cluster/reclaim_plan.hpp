// Which local copies a broker may give back to the disk: copies of partitions it does not serve (left behind by a
// move away, or by a move towards it that failed), once they have been left alone for a while. A copy is never
// reclaimed while something may still need it: the partition is served here or being handed here, a move of it is
// journaled here (its cutover may still be rolled back onto this copy), a move of it runs here or towards here, or
// its size changed recently (a copy arriving). A stray (a log the topic catalog did not make here) is never reclaimed.
// Pure: the caller observes; time is passed in. Thread safety: none (one owner).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "moonmq/core/ids.hpp"

namespace moonmq::cluster {

/// One partition in this broker's store, as observed now.
struct local_copy {
  topic_partition partition;
  std::uint64_t size_bytes = 0;
  bool served_here = false;  ///< this broker serves it, or it is being handed over to this broker
  bool journaled = false;    ///< a move of it is in this broker's journal
  bool moving = false;       ///< a move of it runs here (as source) or towards here (as destination)
  bool stray = false;        ///< a log the topic catalog did not make here: kept until an operator reconciles it
};

/// A copy that may go, or the wait left before it may.
struct reclaim_candidate {
  topic_partition partition;
  std::uint64_t size_bytes = 0;
  double idle_seconds = 0;    ///< since the copy was last seen to change (or this broker started watching it)
  bool eligible_now = false;  ///< nothing needs it (the admin call reclaims it at once)
  bool due = false;           ///< eligible and idle for the configured delay (the ticker reclaims it)
  std::string held_by;        ///< why it may not go, when not eligible
};

class reclaim_tracker {
 public:
  /// `after_seconds`: how long an unneeded copy is kept; 0 = forever (only the admin call reclaims).
  explicit reclaim_tracker(double after_seconds) : after_(after_seconds) {}

  /// Takes the observation made at `now` (seconds) and returns every copy with bytes this broker does not serve.
  std::vector<reclaim_candidate> observe(const std::vector<local_copy>& copies, double now) {
    std::vector<reclaim_candidate> out;
    std::map<topic_partition, seen> next;
    for (const auto& c : copies) {
      if (c.served_here || c.size_bytes == 0) continue;
      seen s{c.size_bytes, now};
      if (auto it = seen_.find(c.partition); it != seen_.end() && it->second.size == c.size_bytes)
        s.since = it->second.since;  // unchanged: still idle since then
      next[c.partition] = s;
      reclaim_candidate r{c.partition, c.size_bytes, now - s.since, false, false, ""};
      if (c.stray)
        r.held_by = "a stray: a log the cluster's topic catalog did not make here, kept until an operator reconciles it";
      else if (c.journaled)
        r.held_by = "a move of it is journaled here (its cutover may still be rolled back onto this copy)";
      else if (c.moving)
        r.held_by = "a move of it is running";
      r.eligible_now = r.held_by.empty();
      r.due = r.eligible_now && after_ > 0 && r.idle_seconds >= after_;
      out.push_back(std::move(r));
    }
    seen_ = std::move(next);
    return out;
  }

  /// A copy was reclaimed: it is watched again from scratch if it ever holds bytes again.
  void forget(const topic_partition& tp) { seen_.erase(tp); }

  double after_seconds() const { return after_; }

 private:
  struct seen {
    std::uint64_t size = 0;
    double since = 0;
  };
  double after_;
  std::map<topic_partition, seen> seen_;
};

}  // namespace moonmq::cluster
