#include "moonmq/cluster/stray_reconciler.hpp"

#include <limits>
#include <shared_mutex>

namespace moonmq::cluster {

namespace {

/// Records per produce: the owner's producer table answers a retry with its offsets for the last 1,024 records of a
/// producer, so a batch is well within that.
constexpr std::size_t batch_records = 500;
constexpr std::size_t batch_bytes = 1u << 20;
constexpr std::size_t read_bytes = 1u << 20;
/// Sequences are counted in a signed 32-bit space (producer_table refuses past it).
constexpr std::uint64_t max_sequence = std::numeric_limits<std::int32_t>::max();

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

std::uint64_t stray_producer_id(const broker_id& holder, const topic_partition& tp, std::uint64_t stray_bytes,
                                std::uint32_t stray_crc) {
  // FNV-1a, 64 bits, over the four, each followed by a byte no name contains; a zero result becomes 1.
  std::uint64_t h = 14695981039346656037ULL;
  auto mix = [&](std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
    h = (h ^ 0xff) * 1099511628211ULL;
  };
  mix("moonmq stray append");
  mix(holder.value());
  mix(name_of(tp));
  mix(std::to_string(stray_bytes));
  mix(std::to_string(stray_crc));
  h &= 0x7fffffffffffffffULL;
  return h == 0 ? 1 : h;
}

result<std::uint32_t> stray_reconciler::checksum(const topic_partition& tp, std::uint64_t size) {
  {
    std::lock_guard lock(mu_);
    if (auto it = crc_.find(tp); it != crc_.end() && it->second.first == size) return it->second.second;
  }
  auto crc = storage::prefix_crc32c(p_.store, tp, size);
  if (!crc) return crc.err();
  std::lock_guard lock(mu_);
  crc_[tp] = {size, *crc};
  return *crc;
}

bool stray_reconciler::begin(const topic_partition& tp) {
  std::lock_guard lock(mu_);
  return busy_.insert(tp).second;
}

void stray_reconciler::end(const topic_partition& tp) {
  std::lock_guard lock(mu_);
  busy_.erase(tp);
}

result<stray_info> stray_reconciler::check(const topic_partition& tp) {
  const std::string name = name_of(tp);
  if (!p_.ownership.withheld(tp))
    return error{errc::conflict, name + " on " + p_.self.value() + " is no stray (nothing to append from there)"};
  auto r = p_.topics.find(tp.topic);
  if (!r || r->deleted || tp.partition >= r->partitions())
    return error{errc::not_found, name + " is not a partition of a topic in " + p_.self.value() +
                                      "'s catalog: there is no log to append the stray to"};
  stray_info info;
  info.owner = owner_as_seen_by(p_.ownership, tp, p_.self);
  if (info.owner == p_.self)
    return error{errc::conflict, name + ": " + p_.self.value() + " holds the stray and is the broker the partition is "
                                           "routed to; nothing serves it (docs/cluster.md, \"Reconciling a stray\")"};
  auto size = p_.store.size_bytes(tp);
  if (!size) return size.err();
  auto crc = checksum(tp, *size);
  if (!crc) return crc.err();
  info.size_bytes = *size;
  info.producer_id = stray_producer_id(p_.self, tp, *size, *crc);
  return info;
}

result<append_step> stray_reconciler::append(const topic_partition& tp, std::uint64_t from, std::size_t budget_bytes,
                                             std::chrono::milliseconds budget_time) {
  const std::string name = name_of(tp);
  const auto deadline = std::chrono::steady_clock::now() + budget_time;
  if (!begin(tp)) return error{errc::conflict, "an append or discard of the stray " + name + " runs here already"};
  struct ender {
    stray_reconciler& r;
    const topic_partition& tp;
    ~ender() { r.end(tp); }
  } ending{*this, tp};
  auto info = check(tp);
  if (!info) return info.err();
  if (from > info->size_bytes)
    return error{errc::invalid_argument, name + ": offset " + std::to_string(from) + " is past the stray's end (" +
                                             std::to_string(info->size_bytes) + ")"};
  auto view = p_.producers.whole_log(tp);
  if (!view) return view.err();
  append_step step;
  step.owner = info->owner;

  // The sequence of a copy is its index among the copies: recounted from the start unless the step before ended at
  // `from` (its own count), so that a resumed step stamps exactly as the first run did.
  std::uint64_t sequence = 0;
  std::uint64_t at = 0;
  {
    std::lock_guard lock(mu_);
    if (auto c = resume_.find(tp); c != resume_.end() && c->second.next == from && c->second.stray_bytes == info->size_bytes) {
      at = from;
      sequence = c->second.sequence;
    }
  }
  std::vector<storage::record> batch;
  std::vector<std::uint64_t> batch_at, batch_stray_sizes;  // stray offset and frame size of each
  std::size_t batch_size = 0, read_now = 0;
  std::uint64_t stray_next = 0, owner_next = 0;
  std::string why;

  auto note = [&](std::uint64_t stray, std::uint64_t stray_size, std::uint64_t owner_at, std::uint64_t owner_size) {
    if (!step.runs.empty() && stray == stray_next && owner_at == owner_next) {
      step.runs.back().stray_last = stray;
      step.runs.back().last = owner_at;
    } else {
      step.runs.push_back({stray, stray, owner_at, owner_at});
    }
    stray_next = stray + stray_size;
    owner_next = owner_at + owner_size;
  };
  auto flush = [&]() -> bool {
    if (batch.empty()) return true;
    auto sent = p_.route.forward_blocking(tp, batch, step.owner);
    if (!sent) {
      why = "this broker cannot send to " + step.owner.value() + " from the calling thread";
      return false;
    }
    if (!*sent && sent->code() == errc::duplicate_sequence) {
      step.already += batch.size();  // written by an earlier run; the owner no longer keeps their offsets
    } else if (!*sent) {
      why = sent->message();
      return false;
    } else {
      step.owner = sent->value().broker;
      const auto& offsets = sent->value().offsets;
      for (std::size_t i = 0; i < batch.size() && i < offsets.size(); ++i)
        note(batch_at[i], batch_stray_sizes[i], offsets[i], storage::frame_size(batch[i]));
      step.copied += batch.size();
    }
    batch.clear();
    batch_at.clear();
    batch_stray_sizes.clear();
    batch_size = 0;
    return true;
  };

  bool stopped = false;
  while (!stopped) {
    auto got = p_.store.read(tp, at, read_bytes);
    if (!got) return got.err();
    if (got->bytes.empty()) {
      step.done = true;
      break;
    }
    for (const auto& v : storage::decode_frames(got->bytes.view(), at)) {
      const bool copy = copied_from_stray(v, *view);
      if (v.offset < from) {  // before this step: only counted
        if (copy) ++sequence;
        continue;
      }
      if (!copy) {
        ++step.skipped;
        continue;
      }
      if (sequence > max_sequence)
        return error{errc::resource_exhausted, name + ": the stray has more records than one producer can number (" +
                                                   std::to_string(max_sequence + 1) + ")"};
      storage::record rec = storage::to_record(v);
      rec.attributes = 0;  // a plain record of the partition now; its transaction, if any, committed
      rec.producer = storage::producer_stamp{info->producer_id, 0, static_cast<std::uint32_t>(sequence++)};
      batch_size += storage::frame_size(rec);
      batch.push_back(std::move(rec));
      batch_at.push_back(v.offset);
      batch_stray_sizes.push_back(v.frame_size);
      if ((batch.size() >= batch_records || batch_size >= batch_bytes) && !flush()) {
        stopped = true;
        break;
      }
    }
    if (stopped) break;
    const bool counting = at < from;  // recounting the copies before `from` (no step before ended there): no budget
    if (!counting) read_now += got->bytes.size();
    at = got->next_offset;
    if (!counting && (read_now >= budget_bytes || std::chrono::steady_clock::now() >= deadline)) break;
  }
  if (!stopped && !flush()) stopped = true;
  if (stopped) {
    // A batch not answered: the next run starts at it (what the owner has of it is answered as a duplicate).
    const std::uint64_t resume_at = batch_at.empty() ? at : batch_at.front();
    std::lock_guard lock(mu_);
    resume_.erase(tp);
    return error{errc::unavailable, name + ": appending the stray on " + p_.self.value() + " to " +
                                        step.owner.value() + " stopped at stray offset " + std::to_string(resume_at) +
                                        " (" + why + "); run it again: what was appended is not appended twice"};
  }
  step.next = step.done ? info->size_bytes : at;
  {
    std::lock_guard lock(mu_);
    resume_[tp] = {step.next, sequence, info->size_bytes, step.done};
  }
  if (step.copied || step.already)
    p_.log.info("topics", name + ": " + std::to_string(step.copied + step.already) + " record(s) of the stray here are "
                              "on " + step.owner.value() + "'s log" + (step.done ? " (all of it)" : ""));
  return step;
}

status stray_reconciler::discard(const topic_partition& tp, bool appended) {
  const std::string name = name_of(tp);
  if (!begin(tp)) return {errc::conflict, "an append or discard of the stray " + name + " runs here already"};
  struct ender {
    stray_reconciler& r;
    const topic_partition& tp;
    ~ender() { r.end(tp); }
  } ending{*this, tp};
  if (appended) {
    auto size = p_.store.size_bytes(tp);
    if (!size) return size.err();
    std::lock_guard lock(mu_);
    auto it = resume_.find(tp);
    if (it == resume_.end() || !it->second.done || it->second.stray_bytes != *size)
      return {errc::conflict, name + " on " + p_.self.value() + ": no append of this stray reached its end here; it is "
                                     "kept (append it again from the start: nothing is written twice)"};
  }
  auto s = p_.topics.drop_stray(tp, [this](const topic_partition& t) { return p_.producers.discard(t); });
  if (s) {
    std::lock_guard lock(mu_);
    resume_.erase(tp);
    crc_.erase(tp);
  }
  return s;
}

result<bool> stray_reconciler::clear(const topic_partition& tp, std::uint64_t producer_id, bool resumed) {
  const std::string name = name_of(tp);
  std::unique_lock gate(p_.gates.gate(tp));
  if (!serves(p_.ownership, tp, p_.self))
    return error{errc::conflict, name + " is not served by " + p_.self.value() + " (any more): nothing cleared"};
  auto first = p_.store.read(tp, 0, 1);
  if (!first) return first.err();
  const auto head = storage::decode_frames(first->bytes.view(), 0);
  if (!head.empty() && head.front().producer && head.front().producer->id == producer_id) return false;
  {
    // Emptied for this stray already (and clients produced to it before the copies began): not again.
    std::lock_guard lock(mu_);
    if (auto c = cleared_.find(tp); c != cleared_.end() && c->second == producer_id) return false;
  }
  if (resumed)
    return error{errc::conflict, name + ": the log on " + p_.self.value() + " does not start with the stray's copies; "
                                            "a resumed decision to keep the stray would leave its start out (run it "
                                            "from the start)"};
  if (p_.moving && p_.moving(tp))
    return error{errc::conflict, "a move of " + name + " runs or is journaled on " + p_.self.value() +
                                     ": its log is not cleared; try again when it has ended"};
  auto end = p_.store.end_offset(tp);
  if (!end) return end.err();
  auto view = p_.producers.committed(tp, *end);
  if (!view) return view.err();
  if (!view->open.empty())
    return error{errc::conflict, name + " has " + std::to_string(view->open.size()) +
                                     " transaction(s) open: its log is not cleared; try again when they have ended"};
  if (auto s = p_.producers.discard(tp); !s) return s.err();
  {
    std::lock_guard lock(mu_);
    cleared_[tp] = producer_id;
  }
  p_.log.warn("topics", name + ": the log here (" + std::to_string(*end) +
                            " bytes) is emptied, by an operator's decision to keep a stray in its place");
  return true;
}

}  // namespace moonmq::cluster
