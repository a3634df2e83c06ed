// Where the partitions of a topic live when this broker cannot tell from its own tables (without Raft, a broker
// knows only the moves it took part in, and nothing of a topic it never had). The front ends ask it before they
// answer "no such topic"; moonmqd's implementation asks the other brokers.
// Thread safety: implementations are called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "moonmq/core/ids.hpp"
#include "moonmq/core/result.hpp"

namespace moonmq::frontend {

class placement_source {
 public:
  virtual ~placement_source() = default;

  /// The partitions of `topic` some broker serves, with the broker that serves each (one that did not answer is
  /// left out).
  virtual std::map<std::int32_t, broker_id> topic_owners(const std::string& topic) const = 0;

  /// The broker that serves `tp`, if any broker says it does.
  virtual std::optional<broker_id> owner_of(const topic_partition& tp) const = 0;

  /// The brokers that did not answer when last asked (their partitions may be missing from the answers above).
  virtual std::vector<broker_id> unanswered() const { return {}; }

  /// Whether the cluster's topic catalog rules out that any broker serves `topic` (or its `partition`), silent
  /// brokers included: the catalog holds the topic as deleted, or lists it with fewer partitions.
  virtual bool ruled_out(const std::string& topic, std::optional<std::int32_t> partition) const {
    (void)topic;
    (void)partition;
    return false;
  }

  /// What a request learned: `owner` took records of `tp` (a source that caches may keep it).
  virtual void learn(const topic_partition& tp, const broker_id& owner) {
    (void)tp;
    (void)owner;
  }
};

/// Why no broker is known to serve `what` (`topic`, or its `partition`), when some broker did not answer (it may be
/// the one): unavailable, naming those brokers, so that a client retries rather than hear that nothing serves it.
/// nullopt when every broker answered, when the catalog rules the partition out (a deleted topic is not found
/// whoever is silent), or when there is no source to ask.
inline std::optional<error> unplaced_while_silent(const placement_source* source, const std::string& topic,
                                                  std::optional<std::int32_t> partition, const std::string& what) {
  if (!source) return std::nullopt;
  auto silent = source->unanswered();
  if (!silent.empty() && source->ruled_out(topic, partition)) silent.clear();
  if (silent.empty()) return std::nullopt;
  std::string ids;
  for (const auto& b : silent) ids += (ids.empty() ? "" : ", ") + b.value();
  return error{errc::unavailable, "no reachable broker serves " + what + " (no answer from " + ids + "); retry"};
}

}  // namespace moonmq::frontend
