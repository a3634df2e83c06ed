#include "moonmq/txn/producer_table.hpp"

namespace moonmq::txn {

namespace {
std::string name(std::uint64_t id) { return "producer " + std::to_string(id); }
}  // namespace

result<producer_verdict> producer_table::check(const storage::producer_stamp& first, std::size_t count) const {
  if (count == 0) return error{errc::invalid_argument, "an empty batch"};
  if (static_cast<std::uint64_t>(first.sequence) + count - 1 > INT32_MAX)
    return error{errc::invalid_argument, name(first.id) + ": sequences past 2^31 - 1; start a new producer"};
  auto it = producers_.find(first.id);
  if (it == producers_.end() || first.epoch > it->second.epoch) {
    if (it == producers_.end() && producers_.size() >= max_producers_)
      return error{errc::resource_exhausted,
                   "this partition tracks " + std::to_string(max_producers_) + " producers already"};
    if (first.sequence != 0)
      return error{errc::out_of_order_sequence,
                   name(first.id) + " epoch " + std::to_string(first.epoch) + " is new to this partition; its first " +
                       "batch must start at sequence 0, not " + std::to_string(first.sequence)};
    return producer_verdict{};
  }
  const producer& p = it->second;
  if (first.epoch < p.epoch)
    return error{errc::producer_fenced, name(first.id) + " epoch " + std::to_string(first.epoch) +
                                            " is fenced: this partition has seen epoch " + std::to_string(p.epoch)};
  const std::int64_t seq = first.sequence;
  const std::int64_t last = seq + static_cast<std::int64_t>(count) - 1;
  if (seq == p.last_sequence + 1) return producer_verdict{};
  if (last <= p.last_sequence) {
    // Written already: a retry. Its offsets, when every one is still kept.
    const std::int64_t oldest_kept = p.last_sequence + 1 - static_cast<std::int64_t>(p.recent.size());
    if (seq < oldest_kept)
      return error{errc::duplicate_sequence, name(first.id) + ": sequences " + std::to_string(seq) + ".." +
                                                 std::to_string(last) + " were written, too long ago to answer with offsets"};
    producer_verdict v{true, {}};
    for (std::int64_t s = seq; s <= last; ++s) v.offsets.push_back(p.recent[static_cast<std::size_t>(s - oldest_kept)]);
    return v;
  }
  return error{errc::out_of_order_sequence,
               name(first.id) + " epoch " + std::to_string(first.epoch) + ": expected sequence " +
                   std::to_string(p.last_sequence + 1) + ", got " + std::to_string(seq) +
                   (seq <= p.last_sequence ? " (overlapping what was written)" : " (a gap)")};
}

void producer_table::observe(const storage::producer_stamp& stamp, std::uint64_t offset) {
  auto [it, fresh] = producers_.try_emplace(stamp.id);
  producer& p = it->second;
  if (!fresh && stamp.epoch < p.epoch) return;  // a fenced epoch's record cannot be written; ignore a stray one
  if (fresh || stamp.epoch > p.epoch || static_cast<std::int64_t>(stamp.sequence) != p.last_sequence + 1) {
    // A new producer, a new epoch, or (only in a log written before these rules) a jump: start over from here.
    p.recent.clear();
  }
  p.epoch = stamp.epoch;
  p.last_sequence = stamp.sequence;
  p.recent.push_back(offset);
  while (p.recent.size() > kept_offsets) p.recent.pop_front();
}

void producer_table::observe_epoch(std::uint64_t producer_id, std::uint32_t epoch) {
  auto [it, fresh] = producers_.try_emplace(producer_id);
  producer& p = it->second;
  if (!fresh && epoch <= p.epoch) return;
  p.epoch = epoch;
  p.last_sequence = -1;
  p.recent.clear();
}

}  // namespace moonmq::txn
