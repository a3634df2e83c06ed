// Reconciling a stray (a log of a partition that the topic catalog did not make on this broker: topic_directory.hpp)
// with the partition's log, by an operator's decision (docs/cluster.md, "Strays"). Three steps, each run on the broker
// whose log it changes; the admin API strings them together:
//
// - append (on the stray's holder): the stray's records are produced to the partition's owner, as new records. This
//   is the move kind that copies records rather than bytes: they get the owner's next offsets, and the step says which
//   (runs of stray offsets and the offsets they were given). What a read_committed reader of the stray would not see is
//   not copied: control records, records of aborted transactions, records of a transaction never ended.
//   Every record is stamped by one idempotent producer whose id is derived from the holder, the partition and the
//   stray's size, with the record's index in the stray as its sequence. A step cut short (a timeout, a restart of
//   either broker) and run again from the start therefore appends nothing twice: the owner answers what it already
//   has as a duplicate. Steps are bounded (`budget_bytes` read) and resumed with `from`.
// - discard (on the stray's holder): the stray is emptied (topic_directory::drop_stray), never served again.
// - clear (on the owner, to keep a stray instead of the served log): the served log is emptied, so that appending the
//   stray then gives its records the offsets they had. Refused while a move or a transaction runs on the partition.
//
// Thread safety: all members may be called concurrently; they block (a produce to a peer) and must not run on the
// io_context's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "moonmq/cluster/ownership_table.hpp"
#include "moonmq/cluster/partition_gates.hpp"
#include "moonmq/cluster/producer_states.hpp"
#include "moonmq/cluster/router.hpp"
#include "moonmq/cluster/topic_directory.hpp"
#include "moonmq/core/logger.hpp"
#include "moonmq/storage/partition_store.hpp"

namespace moonmq::cluster {

/// Records of a stray that were given consecutive records of the partition's log: stray offsets [stray_first,
/// stray_last] became [first, last] (offsets of the first and last record of the run on each side).
struct appended_run {
  std::uint64_t stray_first = 0, stray_last = 0;
  std::uint64_t first = 0, last = 0;
};

/// What one append step did.
struct append_step {
  broker_id owner;              ///< whose log took the records
  std::uint64_t next = 0;       ///< the stray offset to resume from
  bool done = false;            ///< the whole stray is appended
  std::uint64_t copied = 0;     ///< records written now
  std::uint64_t already = 0;    ///< records an earlier run had written (the owner said duplicate)
  std::uint64_t skipped = 0;    ///< records not copied (control, aborted, never-ended transaction)
  std::vector<appended_run> runs;  ///< where the records written now (and the duplicates whose offsets are known) are
};

/// Whether a stray's record is copied: what a read_committed reader of the stray would see, except that records
/// after an open transaction's start that are not part of it are copied too (the stray is never written again, so
/// the open transaction will never end).
bool copied_from_stray(const storage::record_view& v, const producer_states::committed_view& view);

/// The producer id of the append of a stray: stable for the same holder, partition and stray, in [1, 2^63).
std::uint64_t stray_producer_id(const broker_id& holder, const topic_partition& tp, std::uint64_t stray_bytes);

class stray_reconciler {
 public:
  struct parts {
    broker_id self;
    storage::partition_store& store;
    ownership_table& ownership;
    producer_states& producers;
    partition_gates& gates;
    router& route;
    topic_directory& topics;
    logger& log;
    /// Whether a move of the partition runs, is journaled or is being recovered here.
    std::function<bool(const topic_partition&)> moving;
  };
  explicit stray_reconciler(parts p) : p_(std::move(p)) {}

  /// Appends the stray of `tp` here to the partition's owner, from stray offset `from` (a record boundary; 0 at the
  /// start), reading at most about `budget_bytes` of it. conflict when `tp` has no stray here, or when this broker is
  /// the owner; not_found when the partition is past the topic's count (nothing to append to: keep or discard it).
  result<append_step> append(const topic_partition& tp, std::uint64_t from, std::size_t budget_bytes = 8u << 20);

  /// Empties the stray of `tp` here (topic_directory::drop_stray).
  status discard(const topic_partition& tp);

  /// On the owner: empties the log of `tp` it serves (the step before a stray is kept in its place).
  status clear(const topic_partition& tp);

 private:
  /// Where each stray's last step ended, so that the next one need not recount the records before it.
  struct resume_point {
    std::uint64_t next = 0, sequence = 0, stray_bytes = 0;
  };
  parts p_;
  std::mutex mu_;
  std::map<topic_partition, resume_point> resume_;
};

}  // namespace moonmq::cluster
