#include "moonmq/cluster/producer_states.hpp"

#include <charconv>

namespace moonmq::cluster {

namespace {
constexpr std::size_t catch_up_chunk = 4u << 20;

/// A control record. A commit or abort marker's sequence field carries the epoch of the coordinator that wrote it (a
/// begin record's, whether the producer's sequences run on: `coordinator_epoch` is that field), and a numbered
/// marker's key its number.
storage::record control(std::uint64_t producer_id, std::uint32_t epoch, std::string_view marker,
                        std::uint32_t coordinator_epoch = 0, std::uint32_t number = 0) {
  storage::record r;
  if (number != 0) r.key = std::to_string(number);
  r.value = std::string(marker);
  r.timestamp_ms = 0;
  r.attributes = storage::attr_control;
  r.producer = storage::producer_stamp{producer_id, epoch, coordinator_epoch};
  return r;
}
}  // namespace

producer_states::slot& producer_states::slot_of(const topic_partition& tp) {
  std::lock_guard lock(mu_);
  auto& s = slots_[tp];
  if (!s) s = std::make_unique<slot>(max_producers_);
  return *s;
}

void producer_states::learn(slot& s, const std::optional<storage::producer_stamp>& producer, std::uint8_t attributes,
                            const std::optional<std::string_view>& key, std::string_view value, std::uint64_t offset) {
  if (!producer) return;
  if (attributes & storage::attr_control) {
    s.table.observe_epoch(producer->id, producer->epoch);
    if (value == txn::marker_begin) {
      // A transaction's records count their sequences from 0, whatever the producer wrote before at this epoch,
      // unless its producer's sequences run on across transactions (sequence field 1).
      if (producer->sequence == 0) s.table.restart_sequences(producer->id);
    } else {
      s.table.observe_coordinator(producer->id, producer->sequence);
      std::uint32_t number = 0;
      if (key && std::from_chars(key->data(), key->data() + key->size(), number).ec != std::errc())
        number = 0;  // no number (or not one): a marker above the transaction's epoch
      if (number != 0) s.table.observe_marker_number(producer->id, number);
    }
    s.txns.observe_control(producer->id, producer->epoch, value, offset);
    s.any_open.store(!s.txns.open_transactions().empty(), std::memory_order_relaxed);
  } else {
    s.table.observe(*producer, offset);
  }
}

void producer_states::forget_topic(const std::string& topic) {
  std::vector<slot*> of_topic;
  {
    std::lock_guard lock(mu_);
    for (auto it = slots_.lower_bound({topic, INT32_MIN}); it != slots_.end() && it->first.topic == topic; ++it)
      of_topic.push_back(it->second.get());
  }
  // Emptied in place, never erased: a reader may hold a slot (slots live as long as this object).
  for (slot* s : of_topic) {
    std::lock_guard lock(s->mu);
    s->table = txn::producer_table(max_producers_);
    s->txns = txn::partition_txns{};
    s->any_open.store(false, std::memory_order_relaxed);
  }
}

status producer_states::discard(const topic_partition& tp) {
  slot& s = slot_of(tp);
  std::lock_guard lock(s.mu);
  if (auto d = store_.discard(tp); !d) return d;
  s.table = txn::producer_table(max_producers_);
  s.txns = txn::partition_txns{};
  s.any_open.store(false, std::memory_order_relaxed);
  return {};
}

status producer_states::lock_slot(const topic_partition& tp, slot& s, std::unique_lock<std::mutex>& lock,
                                  bool never_wait) {
  if (!never_wait) {
    lock.lock();
    return {};
  }
  if (!lock.try_lock()) return {errc::would_block, name_of(tp) + ": another append is under way"};
  auto end = store_.end_offset(tp);
  if (!end) return end.err();
  if (*end != s.table.applied())
    return {errc::would_block, name_of(tp) + ": the producer table must read the log first"};
  return {};
}

status producer_states::catch_up(const topic_partition& tp, slot& s) {
  auto end = store_.end_offset(tp);
  if (!end) return end.err();
  if (*end < s.table.applied()) {  // the log was rewritten shorter: read it again
    s.table.clear();
    s.txns.clear();
    s.any_open.store(false, std::memory_order_relaxed);
  }
  while (s.table.applied() < *end) {
    auto r = store_.read(tp, s.table.applied(), catch_up_chunk);
    if (!r) return r.err();
    if (r->next_offset <= s.table.applied()) break;
    for (const auto& v : storage::decode_frames(r->bytes.view(), s.table.applied()))
      learn(s, v.producer, v.attributes, v.key, v.value, v.offset);
    s.table.set_applied(r->next_offset);
  }
  return {};
}

result<std::vector<std::uint64_t>> producer_states::write(const topic_partition& tp, slot& s,
                                                          const storage::encoded_records& records) {
  auto offsets = store_.append_encoded(tp, records);
  if (!offsets) return offsets;
  std::size_t i = 0;
  storage::for_each_frame(records.bytes, 0, [&](const storage::record_view& v) {
    learn(s, v.producer, v.attributes, v.key, v.value, (*offsets)[i++]);
  });
  // Appends to a served partition all pass here, so the log ends where this batch does.
  s.table.set_applied(offsets->front() + records.bytes.size());
  return offsets;
}

result<std::vector<std::uint64_t>> producer_states::append(const topic_partition& tp,
                                                           const std::vector<storage::record>& records,
                                                           const append_options& how) {
  return append(tp, storage::encode_records(records), how);
}

result<std::vector<std::uint64_t>> producer_states::append(const topic_partition& tp,
                                                           const storage::encoded_records& records,
                                                           const append_options& how) {
  if (records.empty()) return error{errc::invalid_argument, "no records"};
  std::optional<storage::producer_stamp> first;
  bool transactional = false;
  std::size_t i = 0;
  std::optional<error> wrong;
  storage::for_each_frame(records.bytes, 0, [&](const storage::record_view& r) {
    const auto& p = r.producer;
    if (i == 0) {
      first = p;
      transactional = r.attributes & storage::attr_transactional;
    }
    if (wrong) return;
    if (p.has_value() != first.has_value() ||
        (p && (p->id != first->id || p->epoch != first->epoch || p->sequence != first->sequence + i)))
      wrong = error{errc::invalid_argument,
                    "a batch's records must all be one producer's, with consecutive sequences, or none stamped"};
    else if (r.attributes & storage::attr_control)
      wrong = error{errc::invalid_argument, "control records are written by the cluster, not produced"};
    else if (static_cast<bool>(r.attributes & storage::attr_transactional) != transactional || (transactional && !p))
      wrong = error{errc::invalid_argument, "a transactional batch is all transactional and stamped by its producer"};
    ++i;
  });
  if (wrong) return std::move(*wrong);
  slot& s = slot_of(tp);
  std::unique_lock lock(s.mu, std::defer_lock);
  if (auto l = lock_slot(tp, s, lock, how.never_wait); !l) return l.err();
  if (auto c = catch_up(tp, s); !c) return c.err();
  if (first) {
    // The first batch of a transaction here opens it: the router had the coordinator record this partition first,
    // so its marker will come. A begin record that restarts the producer's sequences is written before judging;
    // where they run on, the batch is judged first, so that a late retry opens nothing.
    const auto open = s.txns.open(first->id);
    const bool opens = transactional && (!open || open->epoch != first->epoch);
    if (opens && how.sequences_run_on) {
      auto early = s.table.check(*first, records.size());
      if (!early) return error{early.code(), name_of(tp) + ": " + early.message()};
      if (early->duplicate) return std::move(early->offsets);
    }
    if (opens && how.must_be_open)
      return error{errc::not_found, name_of(tp) + ": producer " + std::to_string(first->id) +
                                        " has no transaction open here at epoch " + std::to_string(first->epoch)};
    if (opens)
      if (auto e = enroll_locked(tp, s, first->id, first->epoch, how.sequences_run_on); !e) return e.err();
    auto verdict = s.table.check(*first, records.size());
    if (!verdict) return error{verdict.code(), name_of(tp) + ": " + verdict.message()};
    if (verdict->duplicate) return std::move(verdict->offsets);
  }
  return write(tp, s, records);
}

status producer_states::enroll(const topic_partition& tp, std::uint64_t producer_id, std::uint32_t epoch) {
  slot& s = slot_of(tp);
  std::lock_guard lock(s.mu);
  if (auto c = catch_up(tp, s); !c) return c;
  return enroll_locked(tp, s, producer_id, epoch, false);
}

status producer_states::enroll_locked(const topic_partition& tp, slot& s, std::uint64_t producer_id,
                                      std::uint32_t epoch, bool sequences_run_on) {
  if (auto known = s.table.epoch_of(producer_id); known && *known > epoch)
    return {errc::producer_fenced, name_of(tp) + ": producer " + std::to_string(producer_id) + " epoch " +
                                       std::to_string(epoch) + " is fenced by epoch " + std::to_string(*known)};
  if (auto open = s.txns.open(producer_id)) {
    if (open->epoch == epoch) return {};
    return {errc::unavailable, name_of(tp) + ": producer " + std::to_string(producer_id) +
                                   "'s transaction at epoch " + std::to_string(open->epoch) +
                                   " is still open here (its marker is on its way); retry"};
  }
  auto begin = control(producer_id, epoch, txn::marker_begin, sequences_run_on ? 1 : 0);
  auto w = write(tp, s, storage::encode_records({begin}));
  if (!w) return w.err();
  return {};
}

status producer_states::end_transaction(const topic_partition& tp, std::uint64_t producer_id, std::uint32_t epoch,
                                        bool commit, std::uint32_t coordinator_epoch, std::uint32_t number) {
  slot& s = slot_of(tp);
  std::lock_guard lock(s.mu);
  if (auto c = catch_up(tp, s); !c) return c;
  auto open = s.txns.open(producer_id);
  auto known = s.table.epoch_of(producer_id);
  if (number == 0) {
    // A marker stamped E ends a transaction of an epoch below E; one at E or later is the next transaction, which
    // a late (re-sent, delayed) marker must not close.
    if (open && open->epoch >= epoch) return {};
    if (!open && known && *known >= epoch) return {};  // seen already
  } else {
    // Numbered: it ends the transaction at its own epoch, once.
    if (known && *known > epoch) return {};                        // a newer session's init ended what was open
    if (s.table.marker_number_of(producer_id) >= number) return {};  // seen already: a late copy
  }
  // A coordinator that was replaced (a newer one wrote a marker for this producer here) writes no more.
  if (const auto newest = s.table.coordinator_epoch_of(producer_id); coordinator_epoch < newest)
    return {errc::conflict, name_of(tp) + ": coordinator epoch " + std::to_string(coordinator_epoch) +
                                " is fenced by " + std::to_string(newest)};
  // A commit marker commits only the transaction it ends (the epoch right below its own). An older one still open
  // here was orphaned (its end never reached this partition): it is aborted, never committed by someone else's end.
  const bool commits = commit && (!open || (number != 0 ? open->epoch == epoch : open->epoch + 1 == epoch));
  auto marker = control(producer_id, epoch, commits ? txn::marker_commit : txn::marker_abort, coordinator_epoch, number);
  auto w = write(tp, s, storage::encode_records({marker}));
  if (!w) return w.err();
  return {};
}

result<producer_states::committed_view> producer_states::committed(const topic_partition& tp, std::uint64_t from,
                                                                   bool never_wait) {
  slot& s = slot_of(tp);
  std::unique_lock lock(s.mu, std::defer_lock);
  if (auto l = lock_slot(tp, s, lock, never_wait); !l) return l.err();
  // Without waiting, the table has read the log as far as it ended when locked: no catch-up read (which may wait).
  if (!never_wait)
    if (auto c = catch_up(tp, s); !c) return c.err();
  committed_view v;
  v.last_stable_offset = s.txns.last_stable_offset(s.table.applied());
  v.aborted = s.txns.aborted_between(from, v.last_stable_offset);
  v.open = s.txns.open_transactions();
  return v;
}

result<producer_states::committed_view> producer_states::whole_log(const topic_partition& tp) {
  slot& s = slot_of(tp);
  std::lock_guard lock(s.mu);
  if (auto c = catch_up(tp, s); !c) return c.err();
  committed_view v;
  v.last_stable_offset = s.txns.last_stable_offset(s.table.applied());
  v.aborted = s.txns.aborted_between(0, UINT64_MAX);
  v.open = s.txns.open_transactions();
  return v;
}

bool producer_states::has_open_transactions(const topic_partition& tp) {
  std::lock_guard lock(mu_);
  auto it = slots_.find(tp);
  return it != slots_.end() && it->second->any_open.load(std::memory_order_relaxed);
}

result<std::map<std::uint64_t, txn::producer_table::producer>> producer_states::producers(const topic_partition& tp) {
  slot& s = slot_of(tp);
  std::lock_guard lock(s.mu);
  if (auto c = catch_up(tp, s); !c) return c.err();
  return s.table.producers();
}

}  // namespace moonmq::cluster
