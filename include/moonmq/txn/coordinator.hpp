// The transaction coordinator's rules for the transactional ids it owns, as a pure state machine with time passed
// in. Each id maps to one producer id whose epoch only grows:
//
//   init      a producer session starts: the epoch is bumped, fencing every older session; an open transaction of
//             the id is aborted first (prepare_abort, markers, then the bump).
//   add       partitions (with the broker believed to own each) and, for consume-transform-produce, group offsets
//             join the open transaction (one starts when none is open).
//   end       commit or abort: the epoch is bumped again and the transaction enters prepare_commit/prepare_abort,
//             the commit point once written durably. Markers stamped with that bumped epoch go to every partition,
//             then (for a commit) the offsets to their owners; when all are acknowledged, complete.
//   expire    an open transaction older than the timeout is aborted the same way.
//
// Every end bumps the epoch (as KIP-890 does), so a produce or enrolment delayed from an ended transaction carries
// an epoch that every partition that saw the marker refuses, and cannot join the next transaction.
//
// A session that keeps its epoch (a Kafka client's: EndTxn v0-1 tells it no new epoch, and its sequences run on
// across transactions) is the exception: its own ends leave the epoch alone and give the transaction a number
// instead (the session's count of such ends), which its markers carry. A partition ends the open transaction at
// that epoch with it, and takes no marker of a number it has seen already, so a late copy of one cannot close the
// next transaction. Whatever the coordinator aborts on its own (a timeout, a new session) still bumps the epoch.
// Thread safety: none (the service holds its lock).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "moonmq/core/clock.hpp"
#include "moonmq/core/ids.hpp"
#include "moonmq/core/result.hpp"

namespace moonmq::txn {

using moonmq::time_ms;

enum class txn_phase { empty, ongoing, prepare_commit, prepare_abort, complete_commit, complete_abort };
const char* to_string(txn_phase p);
std::optional<txn_phase> phase_from_string(std::string_view s);

struct txn_offset {
  std::string group;
  topic_partition partition;
  std::uint64_t offset = 0;
  bool operator==(const txn_offset&) const = default;
};

struct transaction {
  std::string id;
  std::uint64_t producer_id = 0;
  std::uint32_t epoch = 0;
  txn_phase phase = txn_phase::empty;
  std::map<topic_partition, broker_id> partitions;  ///< with the broker last believed to own each
  std::vector<txn_offset> offsets;                  ///< group offsets committed if and only if it commits
  std::map<topic_partition, broker_id> offset_owners;
  time_ms started_ms = 0;
  std::set<topic_partition> markers_pending;  ///< in prepare: partitions whose marker is not acknowledged yet
  bool offsets_pending = false;               ///< in prepare_commit: offsets not yet written
  std::string reason;                         ///< why it was aborted, when the coordinator aborted it
  bool keeps_epoch = false;       ///< the session keeps its epoch across its own ends (see above)
  std::uint32_t ends = 0;         ///< ends of this id that kept the epoch, so far
  std::uint32_t marker_number = 0;  ///< in prepare: the number its markers carry (0: their epoch is above its own)
  time_ms timeout_ms = 0;         ///< the session's own transaction timeout (0: the coordinator's)
  bool operator==(const transaction&) const = default;
};

/// What a producer session asks for at init.
struct session_options {
  bool keeps_epoch = false;
  time_ms timeout_ms = 0;  ///< 0: the coordinator's
};

class coordinator {
 public:
  explicit coordinator(std::size_t max_ids = 100000) : max_ids_(max_ids) {}

  /// Starts a producer session for `id` (`fresh_producer_id` is used for an id seen for the first time). With a
  /// transaction open, it is aborted first: the answer is then in prepare_abort, and init must be called again once
  /// it completes. unavailable while a transaction of `id` is being completed.
  result<transaction> init(const std::string& id, std::uint64_t fresh_producer_id, time_ms now,
                           const session_options& options = {});

  /// Adds `partitions` to the open transaction (opening one if none is). A partition already in it keeps the owner
  /// it has, unless `replace_owners`: an owner learned from where records landed corrects a stale one, while a
  /// repeated add (a retry, another broker's join) must not undo that correction.
  result<transaction> add_partitions(const std::string& id, std::uint64_t producer_id, std::uint32_t epoch,
                                     const std::map<topic_partition, broker_id>& partitions, time_ms now,
                                     bool replace_owners = false);
  result<transaction> add_offsets(const std::string& id, std::uint64_t producer_id, std::uint32_t epoch,
                                  const std::vector<txn_offset>& offsets,
                                  const std::map<topic_partition, broker_id>& owners, time_ms now);

  /// Commit or abort. A repeated end of the same transaction answers its state again.
  result<transaction> end(const std::string& id, std::uint64_t producer_id, std::uint32_t epoch, bool commit,
                          time_ms now);

  /// A partition acknowledged the marker stamped `epoch`; the owner a partition is now believed to be on.
  void marker_written(const std::string& id, std::uint32_t epoch, const topic_partition& tp);
  void owner_moved(const std::string& id, const topic_partition& tp, const broker_id& owner);
  void offsets_written(const std::string& id, std::uint32_t epoch);

  /// Aborts open transactions older than their session's timeout, or `timeout_ms` without one; their ids.
  std::vector<std::string> expire(time_ms now, time_ms timeout_ms);

  const transaction* find(const std::string& id) const;
  /// Transactions in prepare (their markers or offsets are still to be delivered).
  std::vector<transaction> unfinished() const;
  const std::map<std::string, transaction>& all() const noexcept { return txns_; }
  void restore(transaction t) { txns_[t.id] = std::move(t); }
  void forget(const std::string& id) { txns_.erase(id); }

 private:
  result<transaction*> session(const std::string& id, std::uint64_t producer_id, std::uint32_t epoch);
  /// Decides `t`: its epoch is bumped, unless `keep_epoch` (then it is numbered).
  void prepare(transaction& t, bool commit, std::string reason, bool keep_epoch = false);
  static void maybe_complete(transaction& t);

  std::size_t max_ids_;
  std::map<std::string, transaction> txns_;
};

}  // namespace moonmq::txn
