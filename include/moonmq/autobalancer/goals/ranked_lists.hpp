// Per broker, the partitions a distribution goal may move, heaviest first: the lists its shedding and filling scan.
//
// A list is made on its first use in a goal's run and kept up to date as the goal moves partitions: an arrival is
// inserted in order, and an entry whose partition left stays in the list (users check the owner; first_live() skips
// the run of such entries at the head). In a later run of the same detection, a list is brought up to date from
// the partitions that arrived at its broker since (snapshot::arrivals()) instead of being ranked afresh, and is then
// exactly what ranking afresh would give: the lists of a cluster whose other goals moved a few thousand partitions
// cost those partitions, not the million that stayed (trial moves that are taken back leave no arrivals:
// snapshot::trial).
//
// The goal ranks by its own figures: `Ranker` has `partition_value(snapshot, p)` and `preference(snapshot, p)`,
// both fixed for a partition within one detection.
// Thread safety: one goal run at a time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "moonmq/autobalancer/model/snapshot.hpp"

namespace moonmq::autobalancer {

class ranked_lists {
 public:
  struct entry {
    double value;
    double preference;  ///< the ranker's preference(p), read once
    partition_index p;
  };

  /// Heavier first, then preferred, then by index: a strict order in which a partition's entry is unique.
  static bool ranks_before(const entry& x, const entry& y) {
    if (x.value != y.value) return x.value > y.value;
    if (x.preference != y.preference) return x.preference > y.preference;
    return x.p < y.p;
  }

  /// The first entry of a heaviest-first list whose value is at most `limit`.
  static std::size_t first_at_most(const std::vector<entry>& list, double limit) {
    auto it =
        std::lower_bound(list.begin(), list.end(), limit, [](const entry& x, double lim) { return x.value > lim; });
    return static_cast<std::size_t>(it - list.begin());
  }

  /// A new detection: nothing made before is kept.
  void forget() { lists_of_ = nullptr; }

  /// A goal run on `s` begins: every list is made or brought up to date on its first use in it.
  void start_run(const snapshot& s) {
    if (lists_of_ != &s || !s.recording_arrivals()) {
      lists_.assign(s.broker_count(), {});
      made_.assign(s.broker_count(), 0);
      arrivals_seen_.assign(s.broker_count(), 0);
      lists_of_ = &s;
    }
    stale_.assign(s.broker_count(), 1);
    live_from_.assign(s.broker_count(), 0);
  }

  /// Movable partitions of `b` with a positive value, heaviest first; entries of partitions that have left since
  /// this run first used the list are still in it.
  template <class Ranker>
  const std::vector<entry>& of(const snapshot& s, broker_index b, const Ranker& r) {
    if (stale_[b]) {
      if (made_[b])
        bring_up_to_date(s, b, r);
      else
        make(s, b, r);
      made_[b] = s.recording_arrivals();
      if (made_[b]) arrivals_seen_[b] = s.arrivals(b).size();
      stale_[b] = 0;
      live_from_[b] = 0;
    }
    return lists_[b];
  }

  /// Keeps `b`'s list, if this run made it, complete when partition `p` arrives there.
  template <class Ranker>
  void note_arrival(const snapshot& s, broker_index b, partition_index p, const Ranker& r) {
    if (stale_[b]) return;
    double v = r.partition_value(s, p);
    if (!s.movable(p) || v <= 0) return;
    auto& list = lists_[b];
    entry e{v, r.preference(s, p), p};
    auto at = std::lower_bound(list.begin(), list.end(), e, ranks_before);
    live_from_[b] = std::min(live_from_[b], static_cast<std::size_t>(at - list.begin()));
    if (at != list.end() && at->p == p) return;  // it left earlier in this run: its entry is live again
    list.insert(at, e);
  }

  /// The first entry of `b`'s list (made in this run) that may be live: every entry before it is of a partition that
  /// has left (scans start here instead of stepping over the same departed entries again; a broker that gives away
  /// its heaviest partitions one by one would otherwise make each scan longer than the last).
  std::size_t first_live(const snapshot& s, broker_index b) {
    const auto& list = lists_[b];
    std::size_t& i = live_from_[b];
    while (i < list.size() && s.owner(list[i].p) != b) ++i;
    return i;
  }

 private:
  template <class Ranker>
  void make(const snapshot& s, broker_index b, const Ranker& r) {
    auto& list = lists_[b];
    list.clear();
    for (partition_index p : s.partitions_on(b)) {
      if (!s.movable(p)) continue;
      double v = r.partition_value(s, p);
      if (v > 0) list.push_back({v, r.preference(s, p), p});
    }
    std::sort(list.begin(), list.end(), ranks_before);
  }

  /// Makes `b`'s list from an earlier run exactly what make() would make now, reading only the partitions that
  /// arrived since: entries that left are dropped, arrivals merged in, and a partition named twice (it left and came
  /// back, or arrived during the run that used the list) kept once.
  template <class Ranker>
  void bring_up_to_date(const snapshot& s, broker_index b, const Ranker& r) {
    auto& list = lists_[b];
    std::erase_if(list, [&](const entry& e) { return s.owner(e.p) != b; });
    const auto kept = static_cast<std::ptrdiff_t>(list.size());
    const auto& arrived = s.arrivals(b);
    for (std::size_t i = arrivals_seen_[b]; i < arrived.size(); ++i) {
      const partition_index p = arrived[i];
      if (s.owner(p) != b || !s.movable(p)) continue;
      double v = r.partition_value(s, p);
      if (v > 0) list.push_back({v, r.preference(s, p), p});
    }
    std::sort(list.begin() + kept, list.end(), ranks_before);
    std::inplace_merge(list.begin(), list.begin() + kept, list.end(), ranks_before);
    // A partition's entries are equal, so one named twice is named in neighbouring entries.
    list.erase(std::unique(list.begin(), list.end(), [](const entry& x, const entry& y) { return x.p == y.p; }),
               list.end());
  }

  std::vector<std::vector<entry>> lists_;
  std::vector<char> stale_;                 ///< per broker: not yet made or brought up to date in this run
  std::vector<std::size_t> live_from_;      ///< per broker: first_live()
  const snapshot* lists_of_ = nullptr;      ///< the snapshot lists_ describe (kept from run to run while it records)
  std::vector<char> made_;                  ///< per broker: lists_ was made in an earlier run
  std::vector<std::size_t> arrivals_seen_;  ///< per broker: s.arrivals(b) already in lists_
};

}  // namespace moonmq::autobalancer
