// Who owns which partition: the seam the router, the serving rules and the reassigner consult.
//
// The table is sparse. A partition with no entry is owned, at version 0, by the broker that holds it locally (that is
// how every partition starts); an entry names the broker that owns it, the ownership *version*, and whether that
// owner is still in `handover` (named at a move's cutover, not serving until the move is confirmed).
//
// Versions only grow, and every change of a partition's ownership makes a new one, so "at version v the owner is X"
// is a fact that never changes its meaning. A broker serves a partition only at the newest version it knows of, and
// steps aside when it learns a newer one. A move of a partition at version v uses v+1 (cutover, then confirm, both
// at v+1) and, if it is rolled back, v+2; docs/cluster.md says why no timing of faults makes two servers or none.
//
// Two implementations stand behind this seam: the local JSON table (`cluster-assignments.json`,
// local_ownership_table.hpp) and, with Raft on, the replicated one. The rest of the cluster layer does not know which
// it has, except for `replicated()`: whether decide() is a cluster-wide decision (the Raft log) or a local record.
// Thread safety: implementations allow concurrent calls; a change is durable before it returns ok.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "moonmq/core/ids.hpp"
#include "moonmq/core/result.hpp"

namespace moonmq::cluster {

/// One entry of the table.
struct ownership_entry {
  topic_partition partition;
  broker_id owner;
  std::uint64_t version = 0;  ///< grows with every change of owner; no entry is version 0
  bool handover = false;      ///< `owner` was named at a cutover and does not serve until the move is confirmed
  bool operator==(const ownership_entry&) const = default;
};

/// Orders two facts about one partition: a higher version is newer; at the same version a confirmed owner is newer
/// than the same owner in handover.
inline bool newer_than(const ownership_entry& a, const ownership_entry& b) {
  if (a.version != b.version) return a.version > b.version;
  return !a.handover && b.handover;
}

/// A point in a partition's ownership history, for a compare-and-set: "nothing newer than `version` (in handover, when
/// `handover`) has happened". A move from version v uses {v, false} for its cutover; its confirm and its rollback both
/// use {v+1, true}, so whichever is recorded first makes the other fail.
struct ownership_point {
  std::uint64_t version = 0;
  bool handover = false;
  bool operator==(const ownership_point&) const = default;
};

/// Whether `current` (nullopt: no entry, version 0) is at or before `p`.
inline bool at_most(const std::optional<ownership_entry>& current, ownership_point p) {
  if (!current) return true;
  if (current->version != p.version) return current->version < p.version;
  return !p.handover || current->handover;
}

/// The rule of record() and decide(), for every table to share: whether `e` replaces `current`, is already there,
/// or is refused.
enum class record_verdict { apply, already, refuse };
inline record_verdict judge_record(const std::optional<ownership_entry>& current, const ownership_entry& e,
                                   std::optional<ownership_point> expect) {
  if (current && *current == e) return record_verdict::already;
  if (expect) return at_most(current, *expect) ? record_verdict::apply : record_verdict::refuse;
  return !current || newer_than(e, *current) ? record_verdict::apply : record_verdict::refuse;
}

/// The conflict error of a refused record: names the partition, what was asked and what stood in the way.
inline error ownership_refusal(const ownership_entry& asked, const std::optional<ownership_entry>& current) {
  auto text = [](const ownership_entry& e) {
    return e.owner.value() + " at version " + std::to_string(e.version) + (e.handover ? " (in handover)" : "");
  };
  return error{errc::conflict, "ownership of " + asked.partition.topic + "-" + std::to_string(asked.partition.partition) +
                                   ": " + text(asked) + " refused, this broker knows " +
                                   (current ? text(*current) : std::string("no entry"))};
}

class ownership_table {
 public:
  virtual ~ownership_table() = default;

  /// The newest entry this broker knows of, or nullopt when there is none (owned by whoever holds it locally).
  virtual std::optional<ownership_entry> entry(const topic_partition& tp) const = 0;

  /// Records `e` durably, in this broker's own table only. With `expect`, a compare-and-set: applied when what is
  /// here is at most that point (at_most()). Without it, applied when `e` is newer than what is here. Recording what is already there is ok and writes nothing. Otherwise errc::conflict naming the entry that
  /// stood in the way, and nothing changed (entry() tells the caller what it is).
  virtual status record(const ownership_entry& e, std::optional<ownership_point> expect = {}) = 0;

  /// Several record() (without expectation) in one durable write where the table can. A change that is not newer
  /// than the entry it meets is skipped, not refused.
  virtual status record_all(const std::vector<ownership_entry>& changes) {
    for (const auto& c : changes)
      if (auto s = record(c); !s && s.code() != errc::conflict) return s;
    return {};
  }

  /// A move's decision (cutover, confirm under Raft, rollback): the same compare-and-set as record(), made where the
  /// cluster agrees on it. The local table records it here; the Raft-backed one appends it to the log and returns
  /// once it is applied here, ok only if it took effect; errc::unavailable when its outcome is not known (it may
  /// still take effect later: the caller must treat the partition as in doubt).
  virtual status decide(const ownership_entry& e, ownership_point expect) { return record(e, expect); }

  /// Whether decide() is a decision of the whole cluster (Raft) rather than a record in this broker's table.
  virtual bool replicated() const noexcept { return false; }

  /// Whether this broker knows enough to serve anything (under Raft: its state machine has caught up with what the
  /// cluster had committed when it started). A broker that is not ready serves nothing.
  virtual bool ready() const noexcept { return true; }

  /// Every entry, sorted by partition.
  virtual std::vector<ownership_entry> entries() const = 0;

  /// Drops every entry of `topic`, durably: the topic was deleted, and a topic made later under the name starts with
  /// no history (its partitions at version 0). Under Raft this is applied at the delete's place in the log, on every
  /// broker (topic_directory).
  virtual status forget_topic(const std::string& topic) = 0;

  /// The broker recorded as owner, or nullopt when there is no entry.
  std::optional<broker_id> owner(const topic_partition& tp) const {
    auto e = entry(tp);
    if (!e) return std::nullopt;
    return e->owner;
  }

  /// Strays: partitions whose logs here this broker never serves, whatever the entries say, because the cluster's
  /// topic catalog did not make them here (a namesake made before topics were cluster metadata, or by hand). The
  /// topic directory sets them (replacing the whole set); they are kept on disk untouched and reported, never
  /// reclaimed. Not durable: recomputed from the catalog and the logs at every start.
  void withhold(std::set<topic_partition> strays) {
    std::lock_guard lock(withheld_mu_);
    withheld_ = std::move(strays);
    any_withheld_.store(!withheld_.empty(), std::memory_order_release);
  }
  bool withheld(const topic_partition& tp) const {
    if (!any_withheld_.load(std::memory_order_acquire)) return false;  // the produce path's usual case: no lock
    std::lock_guard lock(withheld_mu_);
    return withheld_.count(tp) > 0;
  }
  std::set<topic_partition> withheld_all() const {
    std::lock_guard lock(withheld_mu_);
    return withheld_;
  }

 private:
  mutable std::mutex withheld_mu_;
  std::set<topic_partition> withheld_;
  std::atomic<bool> any_withheld_{false};
};

/// The entry of `tp` as broker `self` sees it: the recorded one, or `self` at version 0 when there is none.
inline ownership_entry entry_as_seen_by(const ownership_table& table, const topic_partition& tp, const broker_id& self) {
  auto e = table.entry(tp);
  return e ? *e : ownership_entry{tp, self, 0, false};
}

/// The broker that owns `tp` as seen by broker `self` (which may be `self` in handover: see serves()).
inline broker_id owner_as_seen_by(const ownership_table& table, const topic_partition& tp, const broker_id& self) {
  return entry_as_seen_by(table, tp, self).owner;
}

/// Whether broker `self` serves `tp` (the spec's serves_partition): the table is ready, the partition's log here is
/// no stray (ownership_table::withhold), and the newest entry names `self` out of handover (or there is none).
inline bool serves(const ownership_table& table, const topic_partition& tp, const broker_id& self) {
  if (!table.ready() || table.withheld(tp)) return false;
  auto e = table.entry(tp);
  return !e || (e->owner == self && !e->handover);
}

}  // namespace moonmq::cluster
