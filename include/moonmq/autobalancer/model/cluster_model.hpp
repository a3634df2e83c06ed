// The live load model the balance loop feeds and the detector freezes.
//
// Brokers are known with an active flag (an unreachable peer is inactive for the pass). Each partition has an owner,
// a windowed history of its inbound and outbound byte rates (see load_window) and its latest size on disk. `freeze()`
// turns the model into a `snapshot` that goals may change freely; the model itself is not touched by planning.
// Memory per partition: two windows of `Window` floats in one slab plus about 150 bytes of bookkeeping (key, index,
// size, owner) and each window's 16 largest samples kept current: about 810 bytes at the default window of 60.
// Thread safety: none; the balance loop owns its model.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "moonmq/autobalancer/config.hpp"
#include "moonmq/autobalancer/model/load_window.hpp"
#include "moonmq/autobalancer/model/snapshot.hpp"
#include "moonmq/core/ids.hpp"

namespace moonmq::autobalancer {

class cluster_model {
 public:
  /// `window` samples kept per partition and resource; `min_valid` needed before a partition's rates count;
  /// `percentile` is the load figure taken from the window; `settle_samples` inbound samples a moved partition's new
  /// owner reports before it may move again (capped at `window`).
  explicit cluster_model(std::uint32_t window = 60, std::uint32_t min_valid = 1, double percentile = 0.9,
                         std::uint32_t settle_samples = 2)
      : min_valid_(min_valid),
        settle_samples_(static_cast<std::uint16_t>(std::min(settle_samples, window))),
        percentile_(percentile),
        nw_in_(window),
        nw_out_(window) {}

  explicit cluster_model(const autobalance_config& c)
      : cluster_model(c.window, c.min_valid, c.percentile, c.settle_samples) {}

  /// Adds a broker or changes its active flag.
  void set_broker(const std::string& id, bool active) {
    auto [it, inserted] = broker_index_.try_emplace(id, brokers_.size());
    if (inserted)
      brokers_.push_back({id, active, 0});
    else
      brokers_[it->second].active = active;
  }

  /// Bytes broker `id` holds beyond the partitions it serves (snapshot::set_held_disk: room taken under its disk
  /// capacity, not load). Adds the broker if unknown.
  void set_held_disk(const std::string& id, std::uint64_t bytes) {
    set_broker_if_missing(id);
    brokers_[broker_index_.at(id)].held_disk = bytes;
  }

  /// Adds a partition on `owner` (adding the broker, active, if unknown) or changes its owner. A partition whose
  /// owner changes settles: until its new owner has reported `settle_samples` inbound samples, freeze() pins it
  /// (snapshot::settle), so that no plan moves it again before its traffic has been measured where it now lives.
  /// Its window keeps the samples taken on the previous owner: they measured the same partition's traffic.
  void set_owner(const topic_partition& tp, const std::string& owner) {
    set_broker_if_missing(owner);
    const bool known = partition_index_.count(tp) != 0;
    partition_state& s = state_of(tp);
    const auto b = static_cast<std::uint32_t>(broker_index_.at(owner));
    if (known && s.owner != b) s.settling = settle_samples_;
    s.owner = b;
  }

  /// Inbound samples still to be reported by `tp`'s new owner before it may move again (0: not settling).
  std::uint16_t settling(const topic_partition& tp) const {
    auto i = index_of(tp);
    return i == npos ? 0 : partitions_[i].settling;
  }

  /// Forgets a partition (deleted topic, or no longer reported by anyone).
  void remove_partition(const topic_partition& tp) {
    auto it = partition_index_.find(tp);
    if (it == partition_index_.end()) return;
    std::size_t i = it->second;
    std::size_t last = partitions_.size() - 1;
    partition_index_.erase(it);
    if (i != last) {
      partitions_[i] = partitions_[last];
      keys_[i] = std::move(keys_[last]);
      partition_index_[keys_[i]] = i;
    }
    partitions_.pop_back();
    keys_.pop_back();
    nw_in_.swap_remove(i);
    nw_out_.swap_remove(i);
  }

  /// Records an inbound byte-rate sample (bytes/s) for a known partition. Unknown partitions are ignored.
  void record_nw_in(const topic_partition& tp, double bytes_per_second) {
    if (auto i = index_of(tp); i != npos) {
      nw_in_.record(i, bytes_per_second);
      if (partitions_[i].settling > 0) --partitions_[i].settling;
    }
  }
  /// Records an outbound byte-rate sample (bytes/s).
  void record_nw_out(const topic_partition& tp, double bytes_per_second) {
    if (auto i = index_of(tp); i != npos) nw_out_.record(i, bytes_per_second);
  }
  /// Sets the partition's latest size on disk (bytes).
  void set_disk(const topic_partition& tp, std::uint64_t bytes) {
    if (auto i = index_of(tp); i != npos) partitions_[i].disk = bytes;
  }

  std::size_t partition_count() const noexcept { return partitions_.size(); }
  std::size_t broker_count() const noexcept { return brokers_.size(); }
  bool has_partition(const topic_partition& tp) const { return partition_index_.count(tp) != 0; }

  /// The current load figures of one partition: {nw_in, nw_out, disk}.
  load_vector load_of(const topic_partition& tp) const {
    auto i = index_of(tp);
    if (i == npos) return {};
    return {{nw_in_.percentile(i, percentile_), nw_out_.percentile(i, percentile_),
             static_cast<double>(partitions_[i].disk)}};
  }

  /// A snapshot for the detector: every broker and every partition with its load figure. Partitions with fewer than
  /// MinValid samples in either network window are marked not valid (they count, but never move).
  snapshot freeze() const {
    snapshot snap;
    for (const auto& b : brokers_) {
      auto i = snap.add_broker(b.id, b.active);
      if (b.held_disk) snap.set_held_disk(i, static_cast<double>(b.held_disk));
    }
    for (std::size_t i = 0; i < partitions_.size(); ++i) {
      bool valid = nw_in_.size(i) >= min_valid_ && nw_out_.size(i) >= min_valid_;
      load_vector l{{valid ? nw_in_.percentile(i, percentile_) : 0.0, valid ? nw_out_.percentile(i, percentile_) : 0.0,
                     static_cast<double>(partitions_[i].disk)}};
      auto p = snap.add_partition(keys_[i].topic, keys_[i].partition, partitions_[i].owner, l, valid);
      if (partitions_[i].settling > 0) snap.settle(p, partitions_[i].settling);
    }
    return snap;
  }

 private:
  struct broker_state {
    std::string id;
    bool active;
    std::uint64_t held_disk = 0;
  };
  struct partition_state {
    std::uint64_t disk = 0;
    std::uint32_t owner = 0;
    std::uint16_t settling = 0;  ///< inbound samples still to be taken on the new owner after a move
  };
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  void set_broker_if_missing(const std::string& id) {
    if (!broker_index_.count(id)) set_broker(id, true);
  }

  partition_state& state_of(const topic_partition& tp) {
    auto [it, inserted] = partition_index_.try_emplace(tp, partitions_.size());
    if (inserted) {
      partitions_.emplace_back();
      keys_.push_back(tp);
      nw_in_.add();
      nw_out_.add();
    }
    return partitions_[it->second];
  }

  std::size_t index_of(const topic_partition& tp) const {
    auto it = partition_index_.find(tp);
    return it == partition_index_.end() ? npos : it->second;
  }

  std::uint32_t min_valid_;
  std::uint16_t settle_samples_;
  double percentile_;
  std::vector<broker_state> brokers_;
  std::unordered_map<std::string, std::size_t> broker_index_;
  std::vector<partition_state> partitions_;  // by index, parallel to keys_ and the two window sets
  std::vector<topic_partition> keys_;
  std::unordered_map<topic_partition, std::size_t> partition_index_;
  load_window_set nw_in_;
  load_window_set nw_out_;
};

}  // namespace moonmq::autobalancer
