// One partition's transactions, as its log records them: which producers have a transaction open here (since the
// enrolment record at `first`), which ranges were aborted, and the last stable offset (LSO): the first offset of the
// oldest open transaction, or the end of what was seen. read_committed readers get records below the LSO only, and
// never a transactional record inside an aborted range. Pure: learns from records shown to it, in log order.
//
// Control records (attr_control, stamped with the producer and an epoch) carry one of the `marker_*` values.
// Thread safety: none (the caller holds the partition's producer lock).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

namespace moonmq::txn {

inline constexpr std::string_view marker_begin = "txn-begin";
inline constexpr std::string_view marker_commit = "txn-commit";
inline constexpr std::string_view marker_abort = "txn-abort";

struct open_txn {
  std::uint32_t epoch = 0;
  std::uint64_t first = 0;  ///< offset of its enrolment record
};

struct aborted_range {
  std::uint64_t producer_id = 0;
  std::uint64_t first = 0;  ///< enrolment record
  std::uint64_t last = 0;   ///< abort marker
};

class partition_txns {
 public:
  void begin(std::uint64_t producer_id, std::uint32_t epoch, std::uint64_t offset) {
    open_.try_emplace(producer_id, open_txn{epoch, offset});
  }
  /// A commit or abort marker at `offset`: closes the producer's open transaction, if any.
  void end(std::uint64_t producer_id, std::uint64_t offset, bool commit) {
    auto it = open_.find(producer_id);
    if (it == open_.end()) return;
    if (!commit) aborted_.push_back({producer_id, it->second.first, offset});
    open_.erase(it);
  }
  /// Learns the record at `offset` (a control record's value says which marker it is).
  void observe_control(std::uint64_t producer_id, std::uint32_t epoch, std::string_view value, std::uint64_t offset) {
    if (value == marker_begin)
      begin(producer_id, epoch, offset);
    else if (value == marker_commit || value == marker_abort)
      end(producer_id, offset, value == marker_commit);
  }

  std::optional<open_txn> open(std::uint64_t producer_id) const {
    auto it = open_.find(producer_id);
    if (it == open_.end()) return std::nullopt;
    return it->second;
  }
  const std::map<std::uint64_t, open_txn>& open_transactions() const noexcept { return open_; }

  /// The last stable offset of a log whose records up to `end` were seen.
  std::uint64_t last_stable_offset(std::uint64_t end) const {
    for (const auto& [pid, t] : open_) end = std::min(end, t.first);
    return end;
  }

  /// Whether a transactional record of `producer_id` at `offset` belongs to an aborted transaction.
  bool aborted(std::uint64_t producer_id, std::uint64_t offset) const {
    for (auto it = aborted_.rbegin(); it != aborted_.rend(); ++it)
      if (it->producer_id == producer_id && it->first <= offset && offset <= it->last) return true;
    return false;
  }
  /// The aborted ranges that overlap [from, to).
  std::vector<aborted_range> aborted_between(std::uint64_t from, std::uint64_t to) const {
    std::vector<aborted_range> out;
    for (const auto& a : aborted_)
      if (a.last >= from && a.first < to) out.push_back(a);
    return out;
  }

  void clear() {
    open_.clear();
    aborted_.clear();
  }

 private:
  std::map<std::uint64_t, open_txn> open_;
  std::vector<aborted_range> aborted_;  ///< in log order
};

}  // namespace moonmq::txn
