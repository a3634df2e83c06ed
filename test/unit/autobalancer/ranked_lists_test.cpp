// A goal's ranked lists: after partitions move, between runs and during one, a list is exactly what ranking the
// broker's partitions afresh gives.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "moonmq/autobalancer/goals/ranked_lists.hpp"
#include "support/snapshots.hpp"

using namespace moonmq::test;

namespace {

/// Ranks by inbound rate, then by lower disk; a coarse rate makes ties, so the preference and the index decide.
struct by_nw_in {
  double partition_value(const snapshot& s, partition_index p) const { return s.load(p, resource::nw_in); }
  double preference(const snapshot& s, partition_index p) const { return -s.load(p, resource::disk); }
};

std::vector<ranked_lists::entry> afresh(const snapshot& s, broker_index b) {
  std::vector<ranked_lists::entry> out;
  by_nw_in r;
  for (partition_index p : s.partitions_on(b))
    if (s.movable(p) && r.partition_value(s, p) > 0) out.push_back({r.partition_value(s, p), r.preference(s, p), p});
  std::sort(out.begin(), out.end(), ranked_lists::ranks_before);
  return out;
}

std::vector<partition_index> indices(const std::vector<ranked_lists::entry>& list) {
  std::vector<partition_index> out;
  for (const auto& e : list) out.push_back(e.p);
  return out;
}

/// The entries whose partition is still on `b`: what a scan of the list sees.
std::vector<partition_index> live(const snapshot& s, broker_index b, const std::vector<ranked_lists::entry>& list) {
  std::vector<partition_index> out;
  for (const auto& e : list)
    if (s.owner(e.p) == b) out.push_back(e.p);
  return out;
}

}  // namespace

TEST_CASE("a ranked list is what ranking afresh gives, however partitions moved since it was made",
          "[goals][ranked_lists]") {
  const bool recording = GENERATE(true, false);
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    INFO("seed " << seed << (recording ? ", recording arrivals" : ", not recording"));
    std::mt19937_64 rng(seed);
    snapshot s = brokers(3 + static_cast<int>(seed % 3));
    for (int p = 0; p < 60; ++p) {
      // Rates in whole MiB/s (ties), a few zero (never ranked), a few pinned (never ranked).
      const double in = static_cast<double>(rng() % 6);
      s.add_partition(p % 9 == 0 ? "__internal" : "t", p, static_cast<broker_index>(rng() % s.broker_count()),
                      load_vector{{in * MiB, 0, static_cast<double>(rng() % 4) * MiB}});
    }
    if (recording) s.record_arrivals();
    ranked_lists lists;
    lists.forget();
    by_nw_in r;
    auto random_move = [&](bool noted) {
      const auto p = static_cast<partition_index>(rng() % s.partition_count());
      const auto dest = static_cast<broker_index>(rng() % s.broker_count());
      if (dest == s.owner(p) || !s.movable(p)) return;
      s.apply(action::move(p, s.owner(p), dest));
      if (noted) lists.note_arrival(s, dest, p, r);  // the goal's own move
    };
    for (int run = 0; run < 8; ++run) {
      lists.start_run(s);
      // First use in the run: exactly the fresh ranking. Some lists sit out a whole run, and catch up on two runs'
      // moves in a later one.
      std::vector<char> used(s.broker_count(), 0);
      for (broker_index b = 0; b < s.broker_count(); ++b) {
        if (rng() % 3 == 0) continue;
        used[b] = 1;
        REQUIRE(indices(lists.of(s, b, r)) == indices(afresh(s, b)));
      }
      // The goal's own moves during the run keep the lists it made complete: scans see the fresh ranking.
      for (int i = 0; i < 25; ++i) {
        random_move(true);
        for (broker_index b = 0; b < s.broker_count(); ++b) {
          if (!used[b]) continue;
          const auto& list = lists.of(s, b, r);
          REQUIRE(live(s, b, list) == indices(afresh(s, b)));
          const std::size_t from = lists.first_live(s, b);
          for (std::size_t k = 0; k < from; ++k) REQUIRE(s.owner(list[k].p) != b);
        }
      }
      // Other goals' moves between runs are never noted.
      for (int i = 0; i < 40; ++i) random_move(false);
    }
  }
}
