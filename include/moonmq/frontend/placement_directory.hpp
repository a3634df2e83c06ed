// The placement directory: one cached view of which broker serves every partition, built from every broker's own
// report of the partitions it serves (GET /cluster/loads; this broker's own without a request), refreshed on one
// schedule and corrected by what requests learn (a produce answered by the owner, a 421 naming one). The front ends
// read it for a topic this broker does not have, so that a produce owned elsewhere costs no extra round trip while
// the directory is fresh, and the group coordinator reads it to place partitions with members.
//
// A broker that does not answer keeps its last report and is asked again only after `retry_after`, so that one
// dead broker does not slow every refresh by a peer timeout. The picture counts as known once every broker has
// reported since the directory started, or `settle` after its first refresh (a broker that stays down).
// Thread safety: every method may be called concurrently; refreshes run one at a time.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "moonmq/cluster/local_loads.hpp"
#include "moonmq/cluster/peer.hpp"
#include "moonmq/frontend/placement.hpp"

namespace moonmq::frontend {

using time_ms = std::int64_t;

struct placement_directory_options {
  broker_id self;
  std::vector<broker_id> brokers;  ///< every broker of the cluster, this one included
  /// This broker's own report (the partitions it serves).
  std::function<std::vector<cluster::partition_load>()> local;
  std::function<time_ms()> clock;  ///< steady milliseconds
  time_ms retry_after = 5000;      ///< a broker that did not answer is asked again only after this
  time_ms settle = 10'000;         ///< known this long after the first refresh even with a broker silent
  /// A lookup of a topic the directory has no partition of refreshes first, at most this often per topic (a
  /// topic created a moment ago is found; a name that exists nowhere does not cost a round of requests each time).
  time_ms miss_refresh = 1000;
};

class placement_directory final : public placement_source {
 public:
  placement_directory(placement_directory_options options, cluster::peer_client& peers);

  /// Asks every broker for its report (peers in turn, from the calling thread) and rebuilds the picture.
  void refresh() { rebuild(); }
  /// refresh(), when the last one is at least `age` old.
  void refresh_if_older(time_ms age);

  /// Whether every broker has reported (or `settle` has passed since the first refresh).
  bool known() const;
  /// The partitions of `topics` and their owners; nullopt until known().
  std::optional<std::vector<std::pair<topic_partition, broker_id>>> placements(const std::set<std::string>& topics) const;
  /// Brokers whose last request went unanswered.
  std::vector<broker_id> unanswered() const override;

  /// What a request learned: `owner` serves `tp` (until the next refresh says otherwise).
  void learn(const topic_partition& tp, const broker_id& owner) override;

  // placement_source
  std::map<std::int32_t, broker_id> topic_owners(const std::string& topic) const override;
  std::optional<broker_id> owner_of(const topic_partition& tp) const override;

 private:
  /// The picture is a cache: looking a topic up may rebuild it.
  void rebuild() const;
  /// Refreshes when the directory holds nothing of `topic` (or of that partition of it), at most every
  /// `miss_refresh` per topic.
  void refresh_on_miss(const std::string& topic, std::optional<std::int32_t> partition) const;
  bool has(const std::string& topic, std::optional<std::int32_t> partition) const;

  placement_directory_options opt_;
  cluster::peer_client& peers_;
  mutable std::mutex refresh_mu_;  ///< one refresh at a time; guards reports_ and retry_at_
  mutable std::map<broker_id, std::vector<cluster::partition_load>> reports_;
  mutable std::map<broker_id, time_ms> retry_at_;
  mutable std::mutex mu_;  ///< guards what follows
  mutable std::map<topic_partition, broker_id> owners_;
  mutable std::set<broker_id> silent_;
  mutable std::optional<time_ms> first_refresh_;
  mutable std::optional<time_ms> last_refresh_;
  mutable bool all_reported_ = false;
  mutable std::map<std::string, time_ms> missed_;  ///< topic -> when a miss last refreshed
};

}  // namespace moonmq::frontend
