// Committed consumer-group offsets: per (group, topic, partition), the offset a group will resume from.
//
// The cluster layer reads every group's offset for a partition to push them to a move's destination, where they are
// merged with `commit_if_higher` (higher wins per group, so a push never rewinds a group that already moved on).
// `memory_offset_store` is the in-memory twin; `open_durable_offset_store()` (durable_offset_store.hpp) keeps them in
// a state_file.
// Thread safety: implementations allow concurrent calls.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "moonmq/core/ids.hpp"
#include "moonmq/core/result.hpp"

namespace moonmq::storage {

/// One group's committed offset.
struct group_offset {
  std::string group;
  std::uint64_t offset = 0;
  std::string metadata;  ///< what the committer attached (Kafka's commit metadata), empty when nothing
  bool operator==(const group_offset&) const = default;
};

/// A committed offset with its metadata.
struct committed_offset {
  std::uint64_t offset = 0;
  std::string metadata;
  bool operator==(const committed_offset&) const = default;
};

/// The most metadata one commit keeps (Kafka's offset.metadata.max.bytes default).
inline constexpr std::size_t max_commit_metadata = 4096;

class offset_store {
 public:
  virtual ~offset_store() = default;
  /// The group's committed offset for the partition, or nullopt when it never committed.
  virtual std::optional<std::uint64_t> committed(const std::string& group, const topic_partition& tp) const = 0;
  /// The same with the commit's metadata.
  virtual std::optional<committed_offset> committed_with_metadata(const std::string& group,
                                                                  const topic_partition& tp) const = 0;
  /// Sets the committed offset and its metadata (a group may rewind). Durable when it returns ok. Metadata longer than
  /// max_commit_metadata is invalid_argument.
  virtual status commit(const std::string& group, const topic_partition& tp, std::uint64_t offset,
                        std::string_view metadata = {}) = 0;
  /// Sets it only if higher than the stored one (or none is stored); returns whether it changed.
  virtual result<bool> commit_if_higher(const std::string& group, const topic_partition& tp, std::uint64_t offset,
                                        std::string_view metadata = {}) = 0;
  /// Every group's offset for the partition, sorted by group.
  virtual std::vector<group_offset> groups_for(const topic_partition& tp) const = 0;
  /// Every partition's offset of one group, sorted by partition.
  virtual std::vector<std::pair<topic_partition, committed_offset>> of_group(const std::string& group) const = 0;
  /// Forgets every group's offsets for every partition of `topic` (the topic was deleted: a later topic of the name
  /// starts with none), durably.
  virtual status forget_topic(const std::string& topic) = 0;
};

/// The keyed map both implementations keep, with the merge rules in one place.
class offset_table {
 public:
  using key = std::tuple<std::string, std::string, std::int32_t>;  // group, topic, partition

  std::optional<std::uint64_t> get(const std::string& group, const topic_partition& tp) const {
    auto it = map_.find({group, tp.topic, tp.partition});
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  void set(const std::string& group, const topic_partition& tp, std::uint64_t offset, std::string_view metadata = {}) {
    const key k{group, tp.topic, tp.partition};
    map_[k] = offset;
    if (metadata.empty()) metadata_.erase(k);
    else metadata_[k] = std::string(metadata);
  }
  std::optional<committed_offset> get_with_metadata(const std::string& group, const topic_partition& tp) const {
    const key k{group, tp.topic, tp.partition};
    auto it = map_.find(k);
    if (it == map_.end()) return std::nullopt;
    return committed_offset{it->second, metadata_of(k)};
  }
  bool would_raise(const std::string& group, const topic_partition& tp, std::uint64_t offset) const {
    auto cur = get(group, tp);
    return !cur || offset > *cur;
  }
  std::vector<group_offset> groups_for(const topic_partition& tp) const {
    std::vector<group_offset> out;
    for (const auto& [k, v] : map_)
      if (std::get<1>(k) == tp.topic && std::get<2>(k) == tp.partition) out.push_back({std::get<0>(k), v, metadata_of(k)});
    return out;
  }
  std::vector<std::pair<topic_partition, committed_offset>> of_group(const std::string& group) const {
    std::vector<std::pair<topic_partition, committed_offset>> out;
    for (auto it = map_.lower_bound({group, std::string(), 0}); it != map_.end() && std::get<0>(it->first) == group; ++it)
      out.push_back({{std::get<1>(it->first), std::get<2>(it->first)}, {it->second, metadata_of(it->first)}});
    return out;
  }
  const std::map<key, std::uint64_t>& entries() const { return map_; }
  /// The keys of `topic`'s offsets.
  std::vector<key> keys_of(const std::string& topic) const {
    std::vector<key> out;
    for (const auto& [k, v] : map_)
      if (std::get<1>(k) == topic) out.push_back(k);
    return out;
  }
  void erase(const key& k) {
    map_.erase(k);
    metadata_.erase(k);
  }

 private:
  std::string metadata_of(const key& k) const {
    auto it = metadata_.find(k);
    return it == metadata_.end() ? std::string() : it->second;
  }
  std::map<key, std::uint64_t> map_;
  std::map<key, std::string> metadata_;  ///< only commits that carried some
};

class memory_offset_store final : public offset_store {
 public:
  std::optional<std::uint64_t> committed(const std::string& group, const topic_partition& tp) const override {
    std::lock_guard lock(mu_);
    return table_.get(group, tp);
  }
  std::optional<committed_offset> committed_with_metadata(const std::string& group,
                                                          const topic_partition& tp) const override {
    std::lock_guard lock(mu_);
    return table_.get_with_metadata(group, tp);
  }
  status commit(const std::string& group, const topic_partition& tp, std::uint64_t offset,
                std::string_view metadata = {}) override {
    if (group.empty()) return {errc::invalid_argument, "group id must not be empty"};
    if (metadata.size() > max_commit_metadata) return {errc::invalid_argument, "commit metadata is too long"};
    std::lock_guard lock(mu_);
    table_.set(group, tp, offset, metadata);
    return {};
  }
  result<bool> commit_if_higher(const std::string& group, const topic_partition& tp, std::uint64_t offset,
                                std::string_view metadata = {}) override {
    if (group.empty()) return error{errc::invalid_argument, "group id must not be empty"};
    if (metadata.size() > max_commit_metadata) return error{errc::invalid_argument, "commit metadata is too long"};
    std::lock_guard lock(mu_);
    if (!table_.would_raise(group, tp, offset)) return false;
    table_.set(group, tp, offset, metadata);
    return true;
  }
  std::vector<group_offset> groups_for(const topic_partition& tp) const override {
    std::lock_guard lock(mu_);
    return table_.groups_for(tp);
  }
  std::vector<std::pair<topic_partition, committed_offset>> of_group(const std::string& group) const override {
    std::lock_guard lock(mu_);
    return table_.of_group(group);
  }
  status forget_topic(const std::string& topic) override {
    std::lock_guard lock(mu_);
    for (const auto& k : table_.keys_of(topic)) table_.erase(k);
    return {};
  }

 private:
  mutable std::mutex mu_;
  offset_table table_;
};

}  // namespace moonmq::storage
