// Reconciling a stray (a log of a partition that the topic catalog did not make on this broker: topic_directory.hpp)
// with the partition's served log, by an operator's decision (docs/cluster.md, "Reconciling a stray"). Each step runs
// on the broker whose log it changes; the admin API strings them together:
//
// - check (on the stray's holder): whether the stray can be appended (a stray here, of a partition the catalog lists,
//   served by another broker), and the producer its copies are stamped with.
// - append (on the stray's holder): the stray's records are produced to the partition's owner as new records. This is
//   the move kind that copies records rather than bytes: they get the owner's next offsets, and the step says which
//   (runs of stray offsets and the offsets they were given). What a read_committed reader of the stray would not see is
//   not copied: control records, records of aborted transactions, records of a transaction the stray never ended.
//   Every copy is stamped by one idempotent producer whose id is derived from the holder, the partition and the
//   stray's size and checksum, with the record's index among the copies as its sequence. A step cut short (a timeout, a
//   restart of either broker) and run again from the start therefore writes nothing twice: the owner answers what it
//   has as a duplicate. Steps are bounded (bytes read and time) and resumed with `from`.
// - discard (on the stray's holder): the stray is emptied (topic_directory::drop_stray), never served again. After an
//   append, only once an append of this very stray reached its end here.
// - clear (on the owner, to keep a stray instead of the served log): the served log is emptied, so that the stray's
//   records follow from offset 0. A log that already starts with the stray's copies (a request run again) is left as
//   it is. Refused while a move or a transaction runs on the partition.
//
// Thread safety: all members may be called concurrently (one append or discard of a partition at a time); they block
// (a produce to a peer) and must not run on the io_context's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
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

/// What check() found.
struct stray_info {
  broker_id owner;                ///< the broker that serves the partition (where the copies go)
  std::uint64_t producer_id = 0;  ///< the producer the copies are stamped with
  std::uint64_t size_bytes = 0;
};

/// What one append step did.
struct append_step {
  broker_id owner;                 ///< whose log took the records
  std::uint64_t next = 0;          ///< the stray offset to resume from
  bool done = false;               ///< the whole stray is on the owner's log
  std::uint64_t copied = 0;        ///< records the owner holds from this step, with known offsets (written now, or by
                                   ///< an earlier run and answered as duplicates)
  std::uint64_t already = 0;       ///< records an earlier run wrote whose offsets the owner no longer keeps
  std::uint64_t skipped = 0;       ///< records not copied (control, aborted, never-ended transaction)
  std::vector<appended_run> runs;  ///< where the `copied` records are
};

/// Whether a stray's record is copied, by the stray's whole-log view (producer_states::whole_log): no control record,
/// nothing of an aborted transaction, nothing of a transaction the stray never ended; every other record.
bool copied_from_stray(const storage::record_view& v, const producer_states::committed_view& view);

/// The producer id of the append of a stray: stable for the same holder, partition and stray (size and checksum),
/// in [1, 2^63).
std::uint64_t stray_producer_id(const broker_id& holder, const topic_partition& tp, std::uint64_t stray_bytes,
                                std::uint32_t stray_crc);

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

  /// conflict when `tp` has no stray here, or this broker is the owner; not_found when the catalog does not list the
  /// partition (nothing to append to).
  result<stray_info> check(const topic_partition& tp);

  /// Appends the stray of `tp` here to the partition's owner, from stray offset `from` (a record boundary, at most the
  /// stray's size; 0 at the start), for about `budget_bytes` of the stray or `budget_time`, whichever ends first.
  /// Errors as check(); unavailable when a batch was not answered (run it again); conflict while another append or a
  /// discard of it runs here.
  result<append_step> append(const topic_partition& tp, std::uint64_t from, std::size_t budget_bytes = 8u << 20,
                             std::chrono::milliseconds budget_time = std::chrono::milliseconds(1000));

  /// Empties the stray of `tp` here (topic_directory::drop_stray). With `appended`, only when an append of this stray
  /// (at its present size) reached its end here since this broker started (conflict otherwise: append it again).
  status discard(const topic_partition& tp, bool appended);

  /// On the owner: empties the log of `tp` it serves, unless it already starts with a record of `producer_id` (a
  /// stray's copies: an earlier run cleared it) or was emptied for that producer since this broker started (clients
  /// produced to it before the copies began: their records are kept). With `resumed`, a log that does not start so is refused (the request
  /// resumes an append whose start would be missing). Returns whether it emptied the log.
  result<bool> clear(const topic_partition& tp, std::uint64_t producer_id, bool resumed);

 private:
  struct resume_point {
    std::uint64_t next = 0, sequence = 0, stray_bytes = 0;
    bool done = false;
  };
  /// The stray's checksum at `size` (cached: a step need not read the whole stray again).
  result<std::uint32_t> checksum(const topic_partition& tp, std::uint64_t size);
  /// Marks `tp` busy here (an append or discard); false when it already is.
  bool begin(const topic_partition& tp);
  void end(const topic_partition& tp);

  parts p_;
  std::mutex mu_;  // guards the members below
  std::map<topic_partition, resume_point> resume_;  ///< where each stray's last step ended
  std::map<topic_partition, std::pair<std::uint64_t, std::uint32_t>> crc_;  ///< size, checksum
  std::set<topic_partition> busy_;
  /// On the owner: the stray producer each log was last emptied for (since this broker started).
  std::map<topic_partition, std::uint64_t> cleared_;
};

}  // namespace moonmq::cluster
