// A frozen, mutable picture of the cluster that goals work on.
//
// The detector runs every goal against one snapshot: goals try actions with `apply()` and take them back with
// `undo()`, and the snapshot keeps each broker's totals (per resource and partition count) and its list of
// partitions up to date incrementally, so that trying an action costs O(1) whatever the cluster's size.
// Partitions and brokers are addressed by index (the order they were added in); data is laid out as arrays so that
// a million partitions stay compact and scans stay in cache.
//
// A snapshot is built either by `cluster_model::freeze()` or directly (the offline planner, tests, benchmarks).
// Thread safety: none; one snapshot belongs to one detector run.
#pragma once

#include <array>
#include <cassert>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "moonmq/autobalancer/action.hpp"
#include "moonmq/core/ids.hpp"

namespace moonmq::autobalancer {

/// The resources the distribution goals balance. Network figures are bytes per second, disk is bytes.
enum class resource : std::uint8_t { nw_in = 0, nw_out = 1, disk = 2 };
inline constexpr std::size_t resource_count = 3;

constexpr const char* resource_name(resource r) noexcept {
  switch (r) {
    case resource::nw_in:
      return "nw_in";
    case resource::nw_out:
      return "nw_out";
    case resource::disk:
      return "disk";
  }
  return "?";
}

/// One figure per resource.
struct load_vector {
  std::array<double, resource_count> v{};
  double operator[](resource r) const noexcept { return v[static_cast<std::size_t>(r)]; }
  double& operator[](resource r) noexcept { return v[static_cast<std::size_t>(r)]; }
};

class snapshot {
 public:
  // ---- building -------------------------------------------------------------------------------------------------

  /// Adds a broker. `active` false = unreachable for this pass: it neither receives nor gives, and is left out of
  /// every goal's mean. Returns its index. REQUIRES: `id` not added before.
  broker_index add_broker(std::string id, bool active = true) {
    auto b = static_cast<broker_index>(brokers_.size());
    broker_by_id_.emplace(id, b);
    brokers_.push_back({std::move(id), active, active});
    broker_load_.emplace_back();
    held_disk_.push_back(0);
    capacity_.emplace_back();
    broker_count_.push_back(0);
    members_.emplace_back();
    if (recording_) arrivals_.emplace_back();
    return b;
  }

  /// Bytes broker `b` holds on disk beyond the partitions it serves (copies left by moves, until reclaimed). They
  /// are not load a move could shift (counting them so made every move add to its source's disk and the DISK goal
  /// chase its own tail): they take room under the broker's disk capacity, so a capacity-aware DISK goal plans
  /// nothing onto a broker whose served and held bytes would pass its ceiling (see capacity()).
  void set_held_disk(broker_index b, double bytes) { held_disk_[b] = bytes; }
  double held_disk(broker_index b) const { return held_disk_[b]; }

  /// What broker `b` can carry of each resource (bytes/s, bytes); 0 = not known. A goal balances utilisation
  /// (load / capacity) instead of load when every active broker has a capacity for its resource.
  void set_capacity(broker_index b, resource r, double value) { capacity_[b][r] = value; }
  double capacity(broker_index b, resource r) const { return capacity_[b][r]; }
  /// Whether every active broker has a capacity for `r`.
  bool capacity_known(resource r) const {
    bool any = false;
    for (broker_index b = 0; b < brokers_.size(); ++b) {
      if (!brokers_[b].active) continue;
      if (capacity_[b][r] <= 0) return false;
      any = true;
    }
    return any;
  }
  /// The share of a capacity no broker is planned above (Autobalance.MaxUtilization).
  void set_max_utilization(double share) { max_utilization_ = share; }
  double max_utilization() const noexcept { return max_utilization_; }

  /// Adds a partition owned by broker `owner`. `valid` false = its network load is not known yet (fewer samples
  /// than MinValid): it counts for disk and partition count but never moves. Returns its index.
  partition_index add_partition(std::string_view topic, std::int32_t partition, broker_index owner, load_vector load,
                                bool valid = true) {
    assert(owner < brokers_.size());
    auto p = static_cast<partition_index>(topic_of_.size());
    topic_of_.push_back(intern_topic(topic));
    number_.push_back(partition);
    owner_.push_back(owner);
    load_.push_back(load);
    flags_.push_back(valid ? 0 : flag_invalid);
    if (is_internal_topic(topic)) flags_.back() |= flag_pinned;
    position_.push_back(static_cast<std::uint32_t>(members_[owner].size()));
    members_[owner].push_back(p);
    for (std::size_t r = 0; r < resource_count; ++r) broker_load_[owner].v[r] += load.v[r];
    ++broker_count_[owner];
    return p;
  }

  /// Partitions of `topic` never move (configuration's ExcludedTopics).
  void exclude_topic(std::string_view topic) {
    auto it = topic_ids_.find(topic);
    if (it == topic_ids_.end()) return;
    for (std::size_t p = 0; p < topic_of_.size(); ++p)
      if (topic_of_[p] == it->second) flags_[p] |= flag_pinned;
  }

  /// Partition `p` counts but is not planned (the balance loop pins partitions that are moving or backing off).
  void pin(partition_index p) { flags_[p] |= flag_pinned; }

  /// A move of `p` to `dest` is running: `p` counts on `dest`, where it will be, and is not planned. Counted on its
  /// source instead, it would make the goals plan more moves off the source for load that is already leaving, and
  /// the destinations overshoot when the moves land. REQUIRES: before any action is applied.
  void place_moving(partition_index p, broker_index dest) {
    if (owner_[p] != dest) relocate(p, owner_[p], dest);
    flags_[p] |= flag_pinned;
  }

  /// Partition `p` moved lately and counts but is not planned until its new owner has reported `samples` more
  /// inbound samples (cluster_model::set_owner). Kept apart from pin() so that explain can say why a broker waits.
  void settle(partition_index p, std::uint16_t samples) {
    flags_[p] |= flag_settling;
    settling_[p] = samples;
  }
  /// Samples `p` still waits for after a move; 0 = not settling.
  std::uint16_t settling(partition_index p) const {
    if (!(flags_[p] & flag_settling)) return 0;
    auto it = settling_.find(p);
    return it == settling_.end() ? 0 : it->second;
  }
  /// Whether settling is all that keeps `p` from moving.
  bool only_settling(partition_index p) const {
    return flags_[p] == flag_settling && brokers_[owner_[p]].active;
  }

  /// Broker `id` never receives (configuration's ExcludedBrokers). Unknown ids are ignored.
  void exclude_broker(std::string_view id) {
    if (auto b = find_broker(id); b != no_index) brokers_[b].can_receive = false;
  }

  // ---- reading --------------------------------------------------------------------------------------------------

  std::size_t broker_count() const noexcept { return brokers_.size(); }
  std::size_t partition_count() const noexcept { return topic_of_.size(); }

  const std::string& broker_id(broker_index b) const { return brokers_[b].id; }
  bool active(broker_index b) const { return brokers_[b].active; }
  /// Active and not excluded: may be the destination of an action.
  bool can_receive(broker_index b) const { return brokers_[b].can_receive; }
  broker_index find_broker(std::string_view id) const {
    auto it = broker_by_id_.find(id);
    return it == broker_by_id_.end() ? no_index : it->second;
  }

  const std::string& topic(partition_index p) const { return topics_[topic_of_[p]]; }
  std::uint32_t topic_id(partition_index p) const { return topic_of_[p]; }
  std::size_t topic_count() const noexcept { return topics_.size(); }
  std::int32_t partition_number(partition_index p) const { return number_[p]; }
  broker_index owner(partition_index p) const { return owner_[p]; }
  double load(partition_index p, resource r) const { return load_[p][r]; }
  const load_vector& loads(partition_index p) const { return load_[p]; }
  /// May move: not internal, not excluded, load known, and its owner is active.
  bool movable(partition_index p) const { return flags_[p] == 0 && brokers_[owner_[p]].active; }

  double broker_load(broker_index b, resource r) const { return broker_load_[b][r]; }
  std::uint32_t broker_partition_count(broker_index b) const { return broker_count_[b]; }
  /// The partitions a broker owns now, in no particular order.
  const std::vector<partition_index>& partitions_on(broker_index b) const { return members_[b]; }

  /// From now on, remembers which partitions arrive at each broker (the detector's working copy does: a goal then
  /// brings what it knew of a broker up to date from the arrivals instead of reading every partition again).
  void record_arrivals() {
    recording_ = true;
    arrivals_.resize(brokers_.size());
  }
  bool recording_arrivals() const noexcept { return recording_; }
  /// The partitions that arrived at `b` since record_arrivals(), oldest first; some may have left again.
  /// REQUIRES: recording_arrivals().
  const std::vector<partition_index>& arrivals(broker_index b) const { return arrivals_[b]; }


  /// While one lives, apply() and undo() leave no trace in arrivals(): for trying actions that are all taken back
  /// before it ends (the placement is then what it was, so there is nothing to record).
  class trial {
   public:
    explicit trial(snapshot& s) : s_(s), was_(s.recording_) { s.recording_ = false; }
    ~trial() { s_.recording_ = was_; }
    trial(const trial&) = delete;
    trial& operator=(const trial&) = delete;

   private:
    snapshot& s_;
    bool was_;
  };

  // ---- changing -------------------------------------------------------------------------------------------------

  /// Carries out an action on the snapshot. REQUIRES: the action is valid against the current placement.
  void apply(const action& a) {
    relocate(a.partition, a.src, a.dest);
    if (a.type == action_type::swap) relocate(a.swap_partition, a.dest, a.src);
  }

  /// Takes back an action applied earlier. REQUIRES: the partitions are where the action put them.
  void undo(const action& a) { apply(a.reversed()); }

  /// True when `a` can be applied to the current placement: the partitions are where it says, they may move, and
  /// the destination(s) may receive.
  bool valid(const action& a) const {
    if (a.src == a.dest || a.src >= brokers_.size() || a.dest >= brokers_.size()) return false;
    if (a.partition >= owner_.size() || owner_[a.partition] != a.src || !movable(a.partition)) return false;
    if (!can_receive(a.dest)) return false;
    if (a.type == action_type::swap) {
      if (a.swap_partition >= owner_.size() || owner_[a.swap_partition] != a.dest || !movable(a.swap_partition))
        return false;
      if (!can_receive(a.src)) return false;
    }
    return true;
  }

 private:
  static constexpr std::uint8_t flag_invalid = 1;  // load not known yet
  static constexpr std::uint8_t flag_pinned = 2;   // internal or excluded topic, moving, backing off
  static constexpr std::uint8_t flag_settling = 4; // moved lately (settle())

  struct broker_info {
    std::string id;
    bool active;
    bool can_receive;
  };

  std::uint32_t intern_topic(std::string_view topic) {
    if (auto it = topic_ids_.find(topic); it != topic_ids_.end()) return it->second;
    auto id = static_cast<std::uint32_t>(topics_.size());
    topic_ids_.emplace(std::string(topic), id);
    topics_.emplace_back(topic);
    return id;
  }

  /// Lets the maps be searched with a string_view, without building a std::string per lookup.
  struct name_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  template <typename V>
  using name_map = std::unordered_map<std::string, V, name_hash, std::equal_to<>>;

  void relocate(partition_index p, broker_index from, broker_index to) {
    assert(owner_[p] == from);
    auto& src = members_[from];
    std::uint32_t pos = position_[p];
    partition_index last = src.back();
    src[pos] = last;
    position_[last] = pos;
    src.pop_back();
    position_[p] = static_cast<std::uint32_t>(members_[to].size());
    members_[to].push_back(p);
    owner_[p] = to;
    if (recording_) arrivals_[to].push_back(p);
    for (std::size_t r = 0; r < resource_count; ++r) {
      broker_load_[from].v[r] -= load_[p].v[r];
      broker_load_[to].v[r] += load_[p].v[r];
    }
    --broker_count_[from];
    ++broker_count_[to];
  }

  std::vector<broker_info> brokers_;
  name_map<broker_index> broker_by_id_;
  std::vector<load_vector> broker_load_;
  std::vector<double> held_disk_;  ///< per broker: see set_held_disk
  std::vector<load_vector> capacity_;  ///< per broker: see set_capacity
  double max_utilization_ = 0.8;
  std::vector<std::uint32_t> broker_count_;
  std::vector<std::vector<partition_index>> members_;
  bool recording_ = false;
  std::vector<std::vector<partition_index>> arrivals_;  ///< per broker, while recording_: see arrivals()

  std::vector<std::string> topics_;
  name_map<std::uint32_t> topic_ids_;
  std::vector<std::uint32_t> topic_of_;
  std::vector<std::int32_t> number_;
  std::vector<broker_index> owner_;
  std::vector<load_vector> load_;
  std::vector<std::uint8_t> flags_;
  std::unordered_map<partition_index, std::uint16_t> settling_;  ///< the few partitions settle() marked
  std::vector<std::uint32_t> position_;  // index of the partition in members_[owner]
};

}  // namespace moonmq::autobalancer
