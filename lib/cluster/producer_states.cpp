#include "moonmq/cluster/producer_states.hpp"

namespace moonmq::cluster {

namespace {
constexpr std::size_t catch_up_chunk = 4u << 20;

std::string name_of(const topic_partition& tp) { return tp.topic + "-" + std::to_string(tp.partition); }
}  // namespace

producer_states::slot& producer_states::slot_of(const topic_partition& tp) {
  std::lock_guard lock(mu_);
  auto& s = slots_[tp];
  if (!s) s = std::make_unique<slot>(max_producers_);
  return *s;
}

status producer_states::catch_up(const topic_partition& tp, slot& s) {
  auto end = store_.end_offset(tp);
  if (!end) return end.err();
  if (*end < s.table.applied()) s.table.clear();  // the log was rewritten shorter: read it again
  while (s.table.applied() < *end) {
    auto r = store_.read(tp, s.table.applied(), catch_up_chunk);
    if (!r) return r.err();
    if (r->next_offset <= s.table.applied()) break;
    for (const auto& v : storage::decode_frames(r->bytes.view(), s.table.applied()))
      if (v.producer) s.table.observe(*v.producer, v.offset);
    s.table.set_applied(r->next_offset);
  }
  return {};
}

result<std::vector<std::uint64_t>> producer_states::append(const topic_partition& tp,
                                                           const std::vector<storage::record>& records) {
  if (records.empty()) return error{errc::invalid_argument, "no records"};
  const auto& first = records.front().producer;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& p = records[i].producer;
    if (p.has_value() != first.has_value() ||
        (p && (p->id != first->id || p->epoch != first->epoch || p->sequence != first->sequence + i)))
      return error{errc::invalid_argument,
                   "a batch's records must all be one producer's, with consecutive sequences, or none stamped"};
  }
  slot& s = slot_of(tp);
  std::lock_guard lock(s.mu);
  if (auto c = catch_up(tp, s); !c) return c.err();
  if (first) {
    auto verdict = s.table.check(*first, records.size());
    if (!verdict) return error{verdict.code(), name_of(tp) + ": " + verdict.message()};
    if (verdict->duplicate) return std::move(verdict->offsets);
  }
  auto offsets = store_.append(tp, records);
  if (!offsets) return offsets;
  for (std::size_t i = 0; i < records.size(); ++i)
    if (records[i].producer) s.table.observe(*records[i].producer, (*offsets)[i]);
  // Appends to a served partition all pass here, so the log ends where this batch does.
  s.table.set_applied(offsets->back() + storage::frame_size(records.back()));
  return offsets;
}

result<std::map<std::uint64_t, txn::producer_table::producer>> producer_states::producers(const topic_partition& tp) {
  slot& s = slot_of(tp);
  std::lock_guard lock(s.mu);
  if (auto c = catch_up(tp, s); !c) return c.err();
  return s.table.producers();
}

}  // namespace moonmq::cluster
