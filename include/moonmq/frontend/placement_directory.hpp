// The placement directory: one cached view of which broker serves every partition, built from every broker's own
// report of the partitions it serves (GET /cluster/loads; this broker's own without a request), refreshed on one
// schedule and corrected by what requests learn (a produce answered by the owner, a 421 naming one). The front ends
// read it for a topic this broker does not have, so that a produce owned elsewhere costs no extra round trip while
// the directory is fresh, and the group coordinator reads it to place partitions with members.
//
// A broker that does not answer keeps its last report for `forget_after`. One whose request took `slow_failure` or
// longer to fail (a peer timeout: a broker cut off or stalled) is asked again only after `retry_after`, so that it does
// not slow every refresh by a timeout; one that failed at once (nothing listening yet, a broker starting or down) is
// asked again at the next refresh, which costs nothing. Where a fresh report and an
// old one name different owners of a partition, the fresh one wins. The picture counts as known once every broker
// has reported since the directory started, or `settle` after its first refresh (a broker that stays down).
// What the topic catalog rules out (a deleted topic, a partition past a listed topic's count) is never placed, however
// recent the report that named it: a lookup of it asks no broker and finds nothing.
// Thread safety: every method may be called concurrently. Refreshes run one at a time, and callers that waited for
// one to end take its picture rather than asking every broker again.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "moonmq/core/clock.hpp"
#include "moonmq/cluster/local_loads.hpp"
#include "moonmq/transport/peer_client.hpp"
#include "moonmq/frontend/placement.hpp"

namespace moonmq::frontend {

using moonmq::time_ms;

struct placement_directory_options {
  broker_id self;
  std::vector<broker_id> brokers;  ///< every broker of the cluster, this one included
  /// This broker's own report (the partitions it serves).
  std::function<std::vector<cluster::partition_load>()> local;
  std::function<time_ms()> clock;  ///< steady milliseconds
  time_ms retry_after = 5000;      ///< a broker that did not answer is asked again only after this
  time_ms settle = 10'000;         ///< known this long after the first refresh even with a broker silent
  /// A lookup of a topic the directory has no partition of refreshes first, at most this often per topic (a topic
  /// created a moment ago is found). Refreshes run one at a time and lookups that waited for one take its picture,
  /// so names that exist nowhere cost at most one round of requests under way, however many are asked for.
  time_ms miss_refresh = 1000;
  /// A broker that has not answered for this long no longer counts as serving what it last reported: a request
  /// for those partitions is not forwarded to it on an old word.
  time_ms forget_after = 60'000;
  /// A request for a report that failed after this long sends its broker to the back of `retry_after`.
  time_ms slow_failure = 200;
  /// Whether the cluster's topic catalog rules out that any broker serves the topic (or partition); empty: never.
  std::function<bool(const std::string&, std::optional<std::int32_t>)> ruled_out = {};
};

class placement_directory final : public placement_source {
 public:
  placement_directory(placement_directory_options options, transport::peer_client& peers);

  /// Asks every broker for its report (peers in turn, from the calling thread) and rebuilds the picture; if a
  /// refresh is running, waits for it and takes its picture instead.
  void refresh() { rebuild(started()); }
  /// refresh(), when the last one is at least `age` old and none is running (a ticker never waits for one).
  void refresh_if_older(time_ms age);

  /// Whether every broker has reported (or `settle` has passed since the first refresh).
  bool known() const;
  /// The partitions of `topics` and their owners; nullopt until known().
  std::optional<std::vector<std::pair<topic_partition, broker_id>>> placements(const std::set<std::string>& topics) const;
  /// Brokers whose last request went unanswered.
  std::vector<broker_id> unanswered() const override;
  bool ruled_out(const std::string& topic, std::optional<std::int32_t> partition) const override {
    return opt_.ruled_out && opt_.ruled_out(topic, partition);
  }

  /// What a request learned: `owner` serves `tp` (until the next refresh says otherwise).
  void learn(const topic_partition& tp, const broker_id& owner) override;

  // placement_source
  std::map<std::int32_t, broker_id> topic_owners(const std::string& topic) const override;
  std::optional<broker_id> owner_of(const topic_partition& tp) const override;

 private:
  /// The picture is a cache: looking a topic up may rebuild it. Does nothing if a refresh that started after
  /// `seen` refreshes had started (started() at the caller's miss) has ended while this one waited for its turn:
  /// that picture was asked for after the miss.
  void rebuild(std::uint64_t seen) const;
  /// The body of rebuild. REQUIRES: refresh_mu_ held.
  void rebuild_locked() const;
  std::uint64_t started() const;
  /// Refreshes when the directory holds nothing of `topic` (or of that partition of it), at most every
  /// `miss_refresh` per topic.
  void refresh_on_miss(const std::string& topic, std::optional<std::int32_t> partition) const;
  bool has(const std::string& topic, std::optional<std::int32_t> partition) const;

  struct report {
    std::vector<cluster::partition_load> loads;
    time_ms at = 0;  ///< when the broker gave it
  };

  placement_directory_options opt_;
  transport::peer_client& peers_;
  mutable std::mutex refresh_mu_;  ///< one refresh at a time; guards reports_ and retry_at_
  mutable std::map<broker_id, report> reports_;
  mutable std::map<broker_id, time_ms> retry_at_;
  mutable std::mutex mu_;  ///< guards what follows
  mutable std::map<topic_partition, broker_id> owners_;
  mutable std::set<broker_id> silent_;
  mutable std::optional<time_ms> first_refresh_;
  mutable std::optional<time_ms> last_refresh_;
  mutable std::map<std::string, time_ms> missed_;  ///< topic -> when a miss last refreshed
  mutable std::uint64_t started_ = 0;          ///< refreshes begun
  mutable std::uint64_t last_ended_start_ = 0;  ///< the number (in started_) of the last refresh that ended
  mutable bool all_reported_ = false;
};

}  // namespace moonmq::frontend
