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
  const std::uint64_t last = static_cast<std::uint64_t>(first.sequence) + count - 1;
  if (first.sequence == static_cast<std::uint64_t>(p.last_sequence) + 1) return producer_verdict{};
  if (last <= p.last_sequence) {
    // Written already: a retry. Its offsets, when every one is still kept.
    const std::uint64_t oldest_kept = p.last_sequence + 1 - p.recent.size();
    if (first.sequence < oldest_kept)
      return error{errc::duplicate_sequence, name(first.id) + ": sequences " + std::to_string(first.sequence) + ".." +
                                                 std::to_string(last) + " were written, too long ago to answer with offsets"};
    producer_verdict v{true, {}};
    for (std::uint64_t s = first.sequence; s <= last; ++s) v.offsets.push_back(p.recent[s - oldest_kept]);
    return v;
  }
  return error{errc::out_of_order_sequence,
               name(first.id) + " epoch " + std::to_string(first.epoch) + ": expected sequence " +
                   std::to_string(static_cast<std::uint64_t>(p.last_sequence) + 1) + ", got " +
                   std::to_string(first.sequence) + (first.sequence <= p.last_sequence ? " (overlapping what was written)" : " (a gap)")};
}

void producer_table::observe(const storage::producer_stamp& stamp, std::uint64_t offset) {
  auto [it, fresh] = producers_.try_emplace(stamp.id);
  producer& p = it->second;
  if (!fresh && stamp.epoch < p.epoch) return;  // a fenced epoch's record cannot be written; ignore a stray one
  if (fresh || stamp.epoch > p.epoch || stamp.sequence != p.last_sequence + 1) {
    // A new producer, a new epoch, or (only in a log written before these rules) a jump: start over from here.
    p.recent.clear();
  }
  p.epoch = stamp.epoch;
  p.last_sequence = stamp.sequence;
  p.recent.push_back(offset);
  while (p.recent.size() > kept_offsets) p.recent.pop_front();
}

}  // namespace moonmq::txn
