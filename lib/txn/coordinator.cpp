#include "moonmq/txn/coordinator.hpp"

#include <algorithm>

namespace moonmq::txn {

namespace {
constexpr std::pair<txn_phase, const char*> phase_names[] = {
    {txn_phase::empty, "empty"},
    {txn_phase::ongoing, "ongoing"},
    {txn_phase::prepare_commit, "prepare_commit"},
    {txn_phase::prepare_abort, "prepare_abort"},
    {txn_phase::complete_commit, "complete_commit"},
    {txn_phase::complete_abort, "complete_abort"},
};

/// Every transaction needs one epoch above its own for its markers: a session at this epoch gets a new id instead.
constexpr std::uint32_t max_epoch = UINT32_MAX - 2;

/// A session that keeps its epoch is a Kafka client's, whose epochs are 16-bit: the last one leaves room for a bump
/// by the coordinator (a timeout).
constexpr std::uint32_t max_kept_epoch = INT16_MAX - 2;

/// Partitions one transaction spans, and group offsets it commits: what a client may make a coordinator hold.
constexpr std::size_t max_entries = 10000;

bool preparing(txn_phase p) { return p == txn_phase::prepare_commit || p == txn_phase::prepare_abort; }
bool complete(txn_phase p) { return p == txn_phase::complete_commit || p == txn_phase::complete_abort; }
}  // namespace

const char* to_string(txn_phase p) {
  for (const auto& [phase, name] : phase_names)
    if (phase == p) return name;
  return "unknown";
}

std::optional<txn_phase> phase_from_string(std::string_view s) {
  for (const auto& [phase, name] : phase_names)
    if (s == name) return phase;
  return std::nullopt;
}

result<transaction> coordinator::init(const std::string& id, std::uint64_t fresh_producer_id, time_ms now,
                                      const session_options& options) {
  auto it = txns_.find(id);
  if (it == txns_.end()) {
    if (txns_.size() >= max_ids_)
      return error{errc::resource_exhausted, "this coordinator holds " + std::to_string(max_ids_) + " transactional ids"};
    transaction t;
    t.id = id;
    t.producer_id = fresh_producer_id;
    t.started_ms = now;
    t.keeps_epoch = options.keeps_epoch;
    t.timeout_ms = options.timeout_ms;
    return txns_[id] = std::move(t);
  }
  transaction& t = it->second;
  if (preparing(t.phase))
    return error{errc::unavailable, "transaction " + id + " is being completed (" + to_string(t.phase) + "); retry"};
  if (t.phase == txn_phase::ongoing) {
    prepare(t, false, "fenced by a new producer session");
    return t;
  }
  if (t.epoch >= (options.keeps_epoch ? max_kept_epoch : max_epoch)) {  // spent: a new producer id starts over
    t.producer_id = fresh_producer_id;
    t.epoch = 0;
  } else {
    ++t.epoch;
  }
  t.phase = txn_phase::empty;
  t.partitions.clear();
  t.offsets.clear();
  t.offset_owners.clear();
  t.reason.clear();
  t.keeps_epoch = options.keeps_epoch;
  t.timeout_ms = options.timeout_ms;
  t.marker_number = 0;
  return t;
}

result<transaction*> coordinator::session(const std::string& id, std::uint64_t producer_id, std::uint32_t epoch) {
  auto it = txns_.find(id);
  if (it == txns_.end())
    return error{errc::not_found, "no transactional id " + id + " on its coordinator; POST /v1/producers first"};
  transaction& t = it->second;
  if (producer_id != t.producer_id || epoch < t.epoch)
    return error{errc::producer_fenced, "producer " + std::to_string(producer_id) + " epoch " + std::to_string(epoch) +
                                            " is fenced: transactional id " + id + " is at producer " +
                                            std::to_string(t.producer_id) + " epoch " + std::to_string(t.epoch)};
  if (epoch > t.epoch)
    return error{errc::invalid_argument, "epoch " + std::to_string(epoch) + " was never given to " + id};
  return &t;
}

result<transaction> coordinator::add_partitions(const std::string& id, std::uint64_t producer_id, std::uint32_t epoch,
                                                const std::map<topic_partition, broker_id>& partitions, time_ms now,
                                                bool replace_owners) {
  auto s = session(id, producer_id, epoch);
  if (!s) return s.err();
  transaction& t = **s;
  if (preparing(t.phase))
    return error{errc::unavailable, "the previous transaction of " + id + " is being completed; retry"};
  if (t.phase != txn_phase::ongoing && t.epoch >= max_epoch)
    return error{errc::conflict, "producer " + std::to_string(producer_id) +
                                     " has used its epochs; POST /v1/producers again for a new id"};
  if (t.phase != txn_phase::ongoing) {  // the first call of a new transaction
    t.phase = txn_phase::ongoing;
    t.started_ms = now;
    t.partitions.clear();
    t.offsets.clear();
    t.offset_owners.clear();
    t.markers_pending.clear();
    t.offsets_pending = false;
    t.reason.clear();
  }
  std::size_t fresh = 0;
  for (const auto& [tp, owner] : partitions) fresh += t.partitions.count(tp) ? 0 : 1;
  if (t.partitions.size() + fresh > max_entries)
    return error{errc::resource_exhausted, "a transaction spans at most " + std::to_string(max_entries) + " partitions"};
  for (const auto& [tp, owner] : partitions)
    if (replace_owners || !t.partitions.count(tp)) t.partitions[tp] = owner;
  return t;
}

result<transaction> coordinator::add_offsets(const std::string& id, std::uint64_t producer_id, std::uint32_t epoch,
                                             const std::vector<txn_offset>& offsets,
                                             const std::map<topic_partition, broker_id>& owners, time_ms now) {
  auto t = add_partitions(id, producer_id, epoch, {}, now);
  if (!t) return t;
  transaction& mine = txns_[id];
  std::set<std::pair<std::string, topic_partition>> fresh;
  for (const auto& o : offsets)
    if (std::none_of(mine.offsets.begin(), mine.offsets.end(), [&](const txn_offset& x) {
          return x.group == o.group && x.partition == o.partition;
        }))
      fresh.insert({o.group, o.partition});
  if (mine.offsets.size() + fresh.size() > max_entries)
    return error{errc::resource_exhausted,
                 "a transaction commits at most " + std::to_string(max_entries) + " group offsets"};
  for (const auto& o : offsets) {
    auto same = std::find_if(mine.offsets.begin(), mine.offsets.end(), [&](const txn_offset& x) {
      return x.group == o.group && x.partition == o.partition;
    });
    if (same != mine.offsets.end())
      same->offset = o.offset;
    else
      mine.offsets.push_back(o);
  }
  for (const auto& [tp, owner] : owners) mine.offset_owners[tp] = owner;
  return mine;
}

result<transaction> coordinator::end(const std::string& id, std::uint64_t producer_id, std::uint32_t epoch,
                                     bool commit, time_ms now) {
  auto it = txns_.find(id);
  if (it == txns_.end()) return error{errc::not_found, "no transactional id " + id + " on its coordinator"};
  transaction& t = it->second;
  const bool wanted_commit = commit;
  // A repeat of an end already taken: the same transaction, one epoch on. Not when the coordinator ended it (a
  // timeout, a new session): that producer is fenced and must not learn the new epoch.
  // For a session that keeps its epoch: an end at the epoch it has, of a transaction its producer ended (numbered),
  // with nothing added since.
  const bool repeat = t.keeps_epoch && t.reason.empty() ? epoch == t.epoch && t.marker_number != 0
                                                        : t.epoch > 0 && epoch == t.epoch - 1;
  if (producer_id == t.producer_id && repeat && (preparing(t.phase) || complete(t.phase))) {
    if (!t.reason.empty())
      return error{errc::producer_fenced, "transaction " + id + " was aborted by its coordinator (" + t.reason +
                                              "); producer " + std::to_string(producer_id) + " epoch " +
                                              std::to_string(epoch) + " is fenced"};
    const bool committed = t.phase == txn_phase::prepare_commit || t.phase == txn_phase::complete_commit;
    if (committed == wanted_commit) return t;
    // A session that keeps its epoch cannot tell a retry from the end of an empty transaction: the other decision
    // on a complete one is the latter, ended at once below.
    if (!t.keeps_epoch || preparing(t.phase))
      return error{errc::conflict, "transaction " + id + " was " + (committed ? "committed" : "aborted") +
                                       (t.reason.empty() ? std::string() : " (" + t.reason + ")")};
  }
  auto s = session(id, producer_id, epoch);
  if (!s) return s.err();
  if (t.epoch >= max_epoch) return error{errc::conflict, "producer " + std::to_string(producer_id) +
                                                     " has used its epochs; POST /v1/producers again for a new id"};
  if (t.phase == txn_phase::empty || complete(t.phase)) {
    // Nothing was added: ended at once (the epoch still moves on, or the number, like any end).
    t.partitions.clear();
    t.offsets.clear();
    t.offset_owners.clear();
    t.started_ms = now;
  } else if (preparing(t.phase)) {
    return error{errc::unavailable, "transaction " + id + " is being completed; retry"};
  }
  prepare(t, commit, "", t.keeps_epoch);
  return t;
}

void coordinator::prepare(transaction& t, bool commit, std::string reason, bool keep_epoch) {
  if (keep_epoch && t.ends < UINT32_MAX) {
    t.marker_number = ++t.ends;
  } else {
    ++t.epoch;
    t.marker_number = 0;
  }
  t.phase = commit ? txn_phase::prepare_commit : txn_phase::prepare_abort;
  t.reason = std::move(reason);
  t.markers_pending.clear();
  for (const auto& [tp, owner] : t.partitions) t.markers_pending.insert(tp);
  t.offsets_pending = commit && !t.offsets.empty();
  maybe_complete(t);
}

void coordinator::maybe_complete(transaction& t) {
  if (!preparing(t.phase) || !t.markers_pending.empty() || t.offsets_pending) return;
  t.phase = t.phase == txn_phase::prepare_commit ? txn_phase::complete_commit : txn_phase::complete_abort;
}

void coordinator::marker_written(const std::string& id, std::uint32_t epoch, const topic_partition& tp) {
  auto it = txns_.find(id);
  if (it == txns_.end() || it->second.epoch != epoch || !preparing(it->second.phase)) return;
  it->second.markers_pending.erase(tp);
  maybe_complete(it->second);
}

void coordinator::owner_moved(const std::string& id, const topic_partition& tp, const broker_id& owner) {
  auto it = txns_.find(id);
  if (it == txns_.end()) return;
  if (auto p = it->second.partitions.find(tp); p != it->second.partitions.end()) p->second = owner;
  if (auto p = it->second.offset_owners.find(tp); p != it->second.offset_owners.end()) p->second = owner;
}

void coordinator::offsets_written(const std::string& id, std::uint32_t epoch) {
  auto it = txns_.find(id);
  if (it == txns_.end() || it->second.epoch != epoch || it->second.phase != txn_phase::prepare_commit) return;
  it->second.offsets_pending = false;
  maybe_complete(it->second);
}

std::vector<std::string> coordinator::expire(time_ms now, time_ms timeout_ms) {
  std::vector<std::string> out;
  for (auto& [id, t] : txns_)
    if (t.phase == txn_phase::ongoing && now - t.started_ms > (t.timeout_ms > 0 ? t.timeout_ms : timeout_ms)) {
      prepare(t, false, "timeout");
      out.push_back(id);
    }
  return out;
}

const transaction* coordinator::find(const std::string& id) const {
  auto it = txns_.find(id);
  return it == txns_.end() ? nullptr : &it->second;
}

std::vector<transaction> coordinator::unfinished() const {
  std::vector<transaction> out;
  for (const auto& [id, t] : txns_)
    if (preparing(t.phase)) out.push_back(t);
  return out;
}

}  // namespace moonmq::txn
