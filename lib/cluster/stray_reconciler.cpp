#include "moonmq/cluster/stray_reconciler.hpp"

#include <limits>
#include <mutex>
#include <shared_mutex>

namespace moonmq::cluster {

namespace {

/// Records per produce: the owner's producer table answers a retry with its offsets for the last 1,024 records of a
/// producer, so a batch is well within that.
constexpr std::size_t batch_records = 500;
constexpr std::size_t batch_bytes = 1u << 20;
constexpr std::size_t read_bytes = 1u << 20;

}  // namespace

bool copied_from_stray(const storage::record_view& v, const producer_states::committed_view& view) {
  if (v.attributes & storage::attr_control) return false;
  if (!(v.attributes & storage::attr_transactional) || !v.producer) return true;
  for (const auto& a : view.aborted)
    if (a.producer_id == v.producer->id && a.first <= v.offset && v.offset <= a.last) return false;
  if (auto open = view.open.find(v.producer->id); open != view.open.end() && open->second.first <= v.offset)
    return false;
  return true;
}

std::uint64_t stray_producer_id(const broker_id& holder, const topic_partition& tp, std::uint64_t stray_bytes) {
  // FNV-1a, 64 bits, over the three; a zero result (never seen in practice) becomes 1.
  std::uint64_t h = 14695981039346656037ULL;
  auto mix = [&](std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
    h = (h ^ 0xff) * 1099511628211ULL;  // a separator no name contains
  };
  mix("moonmq stray append");
  mix(holder.value());
  mix(name_of(tp));
  mix(std::to_string(stray_bytes));
  h &= 0x7fffffffffffffffULL;
  return h == 0 ? 1 : h;
}

result<append_step> stray_reconciler::append(const topic_partition& tp, std::uint64_t from, std::size_t budget_bytes) {
  const std::string name = name_of(tp);
  if (!p_.ownership.withheld(tp))
    return error{errc::conflict, name + " on " + p_.self.value() + " is no stray (nothing to append from there)"};
  auto r = p_.topics.find(tp.topic);
  if (!r || r->deleted || tp.partition >= r->partitions())
    return error{errc::not_found, name + " is not a partition of a topic in the cluster's catalog: there is no log to "
                                          "append the stray to (keep or discard it)"};
  append_step step;
  step.owner = owner_as_seen_by(p_.ownership, tp, p_.self);
  if (step.owner == p_.self)
    return error{errc::conflict, name + ": " + p_.self.value() + " holds the stray and is named the partition's owner; "
                                           "move the partition away first"};
  auto size = p_.store.size_bytes(tp);
  if (!size) return size.err();
  auto view = p_.producers.committed(tp, 0);
  if (!view) return view.err();
  const std::uint64_t producer = stray_producer_id(p_.self, tp, *size);

  // The stray's sequence numbers count the records copied before `from`: recounted from the start unless the step
  // before ended there (its own count), so that a resumed step stamps exactly as the first run did.
  std::uint64_t sequence = 0;
  std::uint64_t at = 0;
  {
    std::lock_guard lock(mu_);
    if (auto c = resume_.find(tp); c != resume_.end() && c->second.next == from && c->second.stray_bytes == *size) {
      at = from;
      sequence = c->second.sequence;
    }
  }
  std::size_t read_now = 0;
  std::vector<storage::record> batch;
  std::vector<std::uint64_t> batch_at;  // stray offset of each
  std::size_t batch_size = 0;
  bool stopped = false;
  std::string why;

  auto note = [&](std::uint64_t stray, std::uint64_t stray_size, std::uint64_t owner_at, std::uint64_t owner_size,
                  std::uint64_t& stray_next, std::uint64_t& owner_next) {
    if (!step.runs.empty() && stray == stray_next && owner_at == owner_next) {
      step.runs.back().stray_last = stray;
      step.runs.back().last = owner_at;
    } else {
      step.runs.push_back({stray, stray, owner_at, owner_at});
    }
    stray_next = stray + stray_size;
    owner_next = owner_at + owner_size;
  };
  std::uint64_t stray_next = 0, owner_next = 0;
  std::vector<std::uint64_t> batch_stray_sizes;

  auto flush = [&]() -> bool {
    if (batch.empty()) return true;
    auto sent = p_.route.forward_blocking(tp, batch, step.owner);
    if (!sent) {
      why = "this broker cannot send to " + step.owner.value() + " from the calling thread";
      return false;
    }
    if (!*sent && sent->code() == errc::duplicate_sequence) {
      step.already += batch.size();  // written by an earlier run; its offsets are no longer kept by the owner
    } else if (!*sent) {
      why = sent->message();
      return false;
    } else {
      step.owner = sent->value().broker;
      const auto& offsets = sent->value().offsets;
      for (std::size_t i = 0; i < batch.size() && i < offsets.size(); ++i)
        note(batch_at[i], batch_stray_sizes[i], offsets[i], storage::frame_size(batch[i]), stray_next, owner_next);
      step.copied += batch.size();
    }
    batch.clear();
    batch_at.clear();
    batch_stray_sizes.clear();
    batch_size = 0;
    return true;
  };

  while (!stopped) {
    auto got = p_.store.read(tp, at, read_bytes);
    if (!got) return got.err();
    if (got->bytes.empty()) {
      step.done = true;
      break;
    }
    const auto records = storage::decode_frames(std::string_view(got->bytes.data(), got->bytes.size()), at);
    for (const auto& v : records) {
      const bool before = v.offset < from;
      const bool copy = copied_from_stray(v, *view);
      if (before) {
        if (copy) ++sequence;
        continue;
      }
      if (!copy) {
        ++step.skipped;
        continue;
      }
      if (sequence >= std::numeric_limits<std::uint32_t>::max())
        return error{errc::resource_exhausted, name + ": the stray has more records than one producer can number"};
      storage::record rec = storage::to_record(v);
      rec.attributes = 0;  // a plain record of the partition now; its transaction, if any, was committed
      rec.producer = storage::producer_stamp{producer, 0, static_cast<std::uint32_t>(sequence++)};
      batch_size += storage::frame_size(rec);
      batch.push_back(std::move(rec));
      batch_at.push_back(v.offset);
      batch_stray_sizes.push_back(v.frame_size);
      if (batch.size() >= batch_records || batch_size >= batch_bytes) {
        if (!flush()) {
          stopped = true;
          break;
        }
      }
    }
    if (stopped) break;
    if (at >= from) read_now += got->bytes.size();
    at = got->next_offset;
    if (read_now >= budget_bytes) break;
  }
  if (!stopped && !flush()) stopped = true;
  // Where the next step starts: after the last record written (or known written), on a record boundary.
  if (stopped) {
    step.done = false;
    step.next = batch_at.empty() ? at : batch_at.front();
    return error{errc::unavailable, name + ": appending the stray on " + p_.self.value() + " to " +
                                        step.owner.value() + " stopped at stray offset " + std::to_string(step.next) +
                                        " (" + why + "); run it again: what was appended is not appended twice"};
  }
  step.next = step.done ? *size : at;
  {
    std::lock_guard lock(mu_);
    resume_[tp] = {step.next, sequence, *size};
  }
  if (step.copied || step.already)
    p_.log.info("topics", name + ": " + std::to_string(step.copied) + " record(s) of the stray here appended to " +
                              step.owner.value() + "'s log" +
                              (step.already ? " (" + std::to_string(step.already) + " appended before)" : ""));
  return step;
}

status stray_reconciler::discard(const topic_partition& tp) {
  return p_.topics.drop_stray(tp, [this](const topic_partition& t) { return p_.producers.discard(t); });
}

status stray_reconciler::clear(const topic_partition& tp) {
  const std::string name = name_of(tp);
  std::unique_lock gate(p_.gates.gate(tp));
  if (!serves(p_.ownership, tp, p_.self))
    return {errc::conflict, name + " is not served by " + p_.self.value() + " (any more): nothing cleared"};
  if (p_.moving && p_.moving(tp))
    return {errc::conflict, "a move of " + name + " runs or is journaled on " + p_.self.value() +
                                ": its log is not cleared; try again when it has ended"};
  auto end = p_.store.end_offset(tp);
  if (!end) return end.err();
  auto view = p_.producers.committed(tp, *end);
  if (!view) return view.err();
  if (!view->open.empty())
    return {errc::conflict, name + " has " + std::to_string(view->open.size()) +
                                " transaction(s) open: its log is not cleared; try again when they have ended"};
  if (auto s = p_.producers.discard(tp); !s) return s;
  p_.log.warn("topics", name + ": the log here (" + std::to_string(*end) +
                            " bytes) is emptied, by an operator's decision to keep a stray in its place");
  return {};
}

}  // namespace moonmq::cluster
