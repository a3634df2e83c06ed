// Topics as cluster metadata: which topics exist, how many partitions each has, and where each partition was
// created (its first owner: the owner at ownership version 0, before any move).
//
// A topic is decided once for the cluster. Every change (create, grow, delete) is a compare-and-set on the topic's
// version: it names the version it was made against, and applies only while the topic is still there. Of two changes
// racing for one version, the one applied first wins and the other is refused, so two creates of one name never both
// succeed. Under Raft the changes are log entries applied on every broker in the log's order; without Raft one broker
// (the topic's coordinator) applies them to its own catalog and tells the others (docs/cluster.md, "Topics").
//
// A deleted topic keeps its record, marked deleted, with its version: a later create of the name continues from that
// version, so a change made against the old topic can never apply to the new one.
// Thread safety: none; its owner locks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "moonmq/core/ids.hpp"
#include "moonmq/core/result.hpp"

namespace moonmq::cluster {

/// One topic as the cluster knows it.
struct topic_record {
  std::string name;
  std::uint64_t version = 0;      ///< grows with every change: 1 at the first create
  std::uint64_t created = 0;      ///< the version that created this incarnation of the name (a later create of a
                                  ///< deleted name is a new incarnation, whose logs never hold the old one's records)
  std::vector<broker_id> owners;  ///< the first owner of each partition, by partition number
  bool deleted = false;

  std::int32_t partitions() const noexcept { return static_cast<std::int32_t>(owners.size()); }
  bool operator==(const topic_record&) const = default;
};

enum class topic_op : std::uint8_t { create = 1, grow = 2, remove = 3 };

constexpr const char* topic_op_name(topic_op op) noexcept {
  switch (op) {
    case topic_op::create:
      return "create";
    case topic_op::grow:
      return "grow";
    case topic_op::remove:
      return "delete";
  }
  return "?";
}

/// A change to one topic, made against the version it names.
struct topic_change {
  topic_op op = topic_op::create;
  std::string name;
  std::uint64_t expect = 0;       ///< the topic's version the change was made against (0: never existed)
  std::vector<broker_id> added;   ///< create and grow: the first owners of the partitions added, in order
  bool operator==(const topic_change&) const = default;
};

class topic_catalog {
 public:
  /// Whether `c` applies to the catalog as it is: errc::already_exists for a create of a live topic,
  /// errc::not_found for a grow or delete of a topic that does not exist (or was deleted), errc::conflict when the
  /// topic is no longer at `c.expect`, errc::invalid_argument for a change that adds nothing (or, for a delete,
  /// something).
  status check(const topic_change& c) const {
    const topic_record* t = find(c.name);
    const std::uint64_t version = t ? t->version : 0;
    const bool live = t && !t->deleted;
    switch (c.op) {
      case topic_op::create:
        if (live) return {errc::already_exists, "topic '" + c.name + "' already exists"};
        if (c.added.empty()) return {errc::invalid_argument, "a topic has at least one partition"};
        break;
      case topic_op::grow:
        if (!live) return {errc::not_found, "unknown topic '" + c.name + "'"};
        if (c.added.empty()) return {errc::invalid_argument, "a grow adds at least one partition"};
        break;
      case topic_op::remove:
        if (!live) return {errc::not_found, "unknown topic '" + c.name + "'"};
        if (!c.added.empty()) return {errc::invalid_argument, "a delete adds no partition"};
        break;
    }
    if (version != c.expect)
      return {errc::conflict, "topic '" + c.name + "' is at version " + std::to_string(version) + ", the " +
                                  topic_op_name(c.op) + " was made against version " + std::to_string(c.expect)};
    return {};
  }

  /// Applies `c` when check() allows it; returns the topic as it now is.
  result<topic_record> apply(const topic_change& c) {
    if (auto s = check(c); !s) return s.err();
    topic_record& t = topics_[c.name];
    t.name = c.name;
    ++t.version;
    switch (c.op) {
      case topic_op::create:
        t.deleted = false;
        t.created = t.version;
        t.owners = c.added;
        break;
      case topic_op::grow:
        t.owners.insert(t.owners.end(), c.added.begin(), c.added.end());
        break;
      case topic_op::remove:
        t.deleted = true;
        t.owners.clear();
        break;
    }
    return t;
  }

  /// Takes `r` as the topic's record when it is newer than the one here (a coordinator's record reaching a broker
  /// that may have missed some of its changes). Returns whether it was taken.
  bool learn(const topic_record& r) {
    auto it = topics_.find(r.name);
    if (it != topics_.end() && it->second.version >= r.version) return false;
    topics_[r.name] = r;
    return true;
  }

  /// The record of `name`, deleted or not; nullptr when the cluster never had it.
  const topic_record* find(std::string_view name) const {
    auto it = topics_.find(name);
    return it == topics_.end() ? nullptr : &it->second;
  }

  /// The record of a topic that exists now.
  const topic_record* live(std::string_view name) const {
    const topic_record* t = find(name);
    return t && !t->deleted ? t : nullptr;
  }

  /// Where `tp` was created, when its topic exists and has the partition.
  std::optional<broker_id> first_owner(const topic_partition& tp) const {
    const topic_record* t = live(tp.topic);
    if (!t || tp.partition < 0 || tp.partition >= t->partitions()) return std::nullopt;
    return t->owners[static_cast<std::size_t>(tp.partition)];
  }

  /// Every record, deleted ones included, by name.
  std::vector<topic_record> records() const {
    std::vector<topic_record> out;
    out.reserve(topics_.size());
    for (const auto& [name, t] : topics_) out.push_back(t);
    return out;
  }

  std::size_t size() const noexcept { return topics_.size(); }
  bool operator==(const topic_catalog&) const = default;

 private:
  std::map<std::string, topic_record, std::less<>> topics_;
};

/// Where a new topic's partitions go, or the partitions a grow adds: each to the broker that then holds the fewest
/// partitions (`held`: what each candidate serves now), ties to the earlier broker in `held`'s order, so that a topic
/// of n partitions on k equal brokers puts n/k on each. REQUIRES: `held` is not empty.
/// With `weights` (one per broker of `held`, > 0: the brokers' relative capacities), each partition goes where the
/// partitions per unit of capacity would be fewest once it is there, so that a broker twice the size takes twice the
/// partitions; ties to the earlier broker. Without, weights are equal.
inline std::vector<broker_id> spread_partitions(std::vector<std::pair<broker_id, std::size_t>> held, std::size_t count,
                                                const std::vector<double>& weights = {}) {
  auto weight = [&](std::size_t b) { return b < weights.size() && weights[b] > 0 ? weights[b] : 1.0; };
  auto share = [&](std::size_t b) { return static_cast<double>(held[b].second + 1) / weight(b); };
  std::vector<broker_id> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t best = 0;
    for (std::size_t b = 1; b < held.size(); ++b)
      if (share(b) < share(best)) best = b;
    out.push_back(held[best].first);
    ++held[best].second;
  }
  return out;
}

}  // namespace moonmq::cluster
