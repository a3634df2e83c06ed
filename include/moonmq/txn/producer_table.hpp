// What one partition knows about the idempotent producers that write to it: per producer id, its epoch, the last
// sequence written and the offsets of the most recent records, so that a retry gets the original offsets. Pure: the
// table learns from the records it is shown (observe) and judges a new batch (check); the caller writes.
//
// The rules, per partition and producer (sequences count records, from 0):
//   - an epoch older than the one the table knows: fenced;
//   - a newer epoch, or a producer never seen: its first batch must start at sequence 0;
//   - the same epoch: the batch must start right after the last sequence written (a gap, or a batch overlapping
//     only part of what was written, is out of order); a batch whose records were all written is a duplicate, and
//     its original offsets are returned when the table still keeps them (the last `kept_offsets` records).
// Thread safety: none (the caller holds the partition's producer lock).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "moonmq/core/result.hpp"
#include "moonmq/storage/record.hpp"

namespace moonmq::txn {

/// A batch's verdict: append it, or answer with the offsets it was written at.
struct producer_verdict {
  bool duplicate = false;
  std::vector<std::uint64_t> offsets;  ///< for a duplicate: where its records are
};

class producer_table {
 public:
  /// Offsets of the most recent records kept per producer for answering retries.
  static constexpr std::size_t kept_offsets = 1024;

  explicit producer_table(std::size_t max_producers = 10000) : max_producers_(max_producers) {}

  /// Judges a batch of `count` records stamped `first` (sequence of its first record), or why it is refused:
  /// producer_fenced, out_of_order_sequence, duplicate_sequence (written, offsets no longer kept),
  /// resource_exhausted (a new producer beyond max_producers).
  result<producer_verdict> check(const storage::producer_stamp& first, std::size_t count) const;

  /// Learns a record written at `offset` with `stamp`.
  void observe(const storage::producer_stamp& stamp, std::uint64_t offset);
  /// Learns that the producer reached `epoch` without writing records at it (a transaction marker or enrolment):
  /// older epochs are fenced from here on, and the epoch's first record is sequence 0.
  void observe_epoch(std::uint64_t producer_id, std::uint32_t epoch);
  /// Learns a marker written by a coordinator at `coordinator_epoch` (a marker's stamp carries it as its sequence).
  void observe_coordinator(std::uint64_t producer_id, std::uint32_t coordinator_epoch) {
    auto it = producers_.find(producer_id);
    if (it != producers_.end()) it->second.coordinator_epoch = std::max(it->second.coordinator_epoch, coordinator_epoch);
  }
  /// Learns a marker that ended a transaction of a session keeping its epoch, numbered `number`.
  void observe_marker_number(std::uint64_t producer_id, std::uint32_t number) {
    auto it = producers_.find(producer_id);
    if (it != producers_.end()) it->second.marker_number = std::max(it->second.marker_number, number);
  }
  /// The highest such number a marker of `producer_id` carried here (0: none).
  std::uint32_t marker_number_of(std::uint64_t producer_id) const {
    auto it = producers_.find(producer_id);
    return it == producers_.end() ? 0 : it->second.marker_number;
  }
  /// The newest coordinator epoch a marker of `producer_id` carried here (0: none).
  std::uint32_t coordinator_epoch_of(std::uint64_t producer_id) const {
    auto it = producers_.find(producer_id);
    return it == producers_.end() ? 0 : it->second.coordinator_epoch;
  }
  /// The producer's next record is sequence 0 again (a transaction begins), at the epoch it has.
  void restart_sequences(std::uint64_t producer_id) {
    auto it = producers_.find(producer_id);
    if (it == producers_.end()) return;
    it->second.last_sequence = -1;
    it->second.recent.clear();
  }
  /// The epoch the table knows for `producer_id`, if any.
  std::optional<std::uint32_t> epoch_of(std::uint64_t producer_id) const {
    auto it = producers_.find(producer_id);
    if (it == producers_.end()) return std::nullopt;
    return it->second.epoch;
  }

  /// The log position up to which records were observed (the caller catches up from here).
  std::uint64_t applied() const noexcept { return applied_; }
  void set_applied(std::uint64_t at) noexcept { applied_ = at; }
  void clear() {
    producers_.clear();
    applied_ = 0;
  }

  struct producer {
    std::uint32_t epoch = 0;
    std::int64_t last_sequence = -1;   ///< -1: nothing written at this epoch
    std::deque<std::uint64_t> recent;  ///< offsets of sequences last_sequence - size + 1 .. last_sequence
    std::uint32_t coordinator_epoch = 0;  ///< of the newest marker seen
    std::uint32_t marker_number = 0;      ///< of the newest numbered marker seen
  };
  const std::map<std::uint64_t, producer>& producers() const noexcept { return producers_; }

 private:
  std::size_t max_producers_;
  std::map<std::uint64_t, producer> producers_;
  std::uint64_t applied_ = 0;
};

}  // namespace moonmq::txn
