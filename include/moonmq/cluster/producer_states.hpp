// The idempotent producers and the transactions of every partition on this broker, and the one way records are
// appended to a served partition: under the partition's producer lock, a batch stamped by a producer is judged by
// that partition's producer_table (duplicate: the original offsets; fenced or out of order: refused) before it is
// written. A transactional batch is taken only inside its producer's transaction at its epoch: the first one opens
// it (a begin record, unless an enrolment did), and a marker ends it and fences the epoch, so a delayed batch of an
// ended transaction cannot join the next one. A producer whose transactions share an epoch (a Kafka client's: see
// txn::coordinator) is told apart by its sequences, which run on across its transactions: a begin record whose
// sequence field is 1 says so, and keeps them where the record before left them (0: they restart at 0).
//
// The state is never stored on its own: it follows the log. Before judging, it reads whatever the log holds past the
// point it has seen (everything after a restart, the copied bytes after a move in, a log rewritten shorter: from
// zero), so a retry after a crash or a move is deduplicated against exactly what the log holds.
// Thread safety: all methods may be called concurrently; appends to one partition are serialised.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "moonmq/core/ids.hpp"
#include "moonmq/core/result.hpp"
#include "moonmq/storage/partition_store.hpp"
#include "moonmq/txn/partition_txns.hpp"
#include "moonmq/txn/producer_table.hpp"

namespace moonmq::cluster {

/// How a batch is appended: two rules for how a transactional batch meets its producer's transaction on the
/// partition, and one for whether the caller's thread may wait at all.
struct append_options {
  /// A batch that would open the transaction here is refused (not_found) instead: the caller skipped the
  /// coordinator's join because it found the transaction open, and must join after all.
  bool must_be_open = false;
  /// The producer's sequences run on across its transactions (a Kafka client's): the batch is judged before the
  /// transaction opens (a retry of a batch written in an earlier transaction is a duplicate, and opens nothing), and
  /// its begin record keeps the sequences.
  bool sequences_run_on = false;
  /// The caller's thread must not wait (the Kafka listener's reactor, which serves every connection): where the
  /// append would wait (the partition's gate held for a cutover, another append to it under way, or a producer table
  /// that must first read the log), it is refused with errc::would_block and nothing is written.
  bool never_wait = false;
};

class producer_states {
 public:
  explicit producer_states(storage::partition_store& store, std::size_t max_producers_per_partition = 10000)
      : store_(store), max_producers_(max_producers_per_partition) {}

  /// Appends `records` to `tp` (the caller holds the partition's gate and has checked that it serves `tp`). A batch
  /// with producer stamps must be one producer's, with consecutive sequences; a duplicate of what was written
  /// returns the offsets it was written at, and writes nothing. A transactional batch enrols first (see enroll()):
  /// the caller has had the coordinator record `tp` in the producer's transaction.
  result<std::vector<std::uint64_t>> append(const topic_partition& tp, const std::vector<storage::record>& records,
                                            const append_options& how = {});
  /// The same for records already encoded as frames (the Kafka listener's batch), appended as they are.
  result<std::vector<std::uint64_t>> append(const topic_partition& tp, const storage::encoded_records& records,
                                            const append_options& how = {});

  /// Opens `producer_id`'s transaction on `tp` at `epoch` by writing a begin record (nothing when it is open at that
  /// epoch already). producer_fenced for an older epoch than the partition knows; unavailable while a transaction
  /// of an older epoch is still open (its marker is on its way).
  status enroll(const topic_partition& tp, std::uint64_t producer_id, std::uint32_t epoch);

  /// Writes a commit or abort marker stamped `epoch` (the epoch the coordinator ended the transaction with, above
  /// the transaction's own): it closes the open transaction and fences every older epoch. Idempotent: a marker the
  /// partition has seen (its producer is at `epoch` or later, nothing open) writes nothing. `coordinator_epoch` is
  /// recorded in the marker; a marker from an older coordinator than one that wrote here before is refused
  /// (conflict).
  ///
  /// A `number` (not 0) marks the end of a session that keeps its epoch (txn::coordinator): the marker, stamped with
  /// the transaction's own epoch, ends the transaction open at it; a number the partition has seen already is a
  /// late copy and writes nothing, as does a marker of an epoch older than the partition knows. It is written even
  /// with nothing open (the partition was declared and not written), so that its number is known here. The number
  /// is kept in the marker's key.
  status end_transaction(const topic_partition& tp, std::uint64_t producer_id, std::uint32_t epoch, bool commit,
                         std::uint32_t coordinator_epoch = 0, std::uint32_t number = 0);

  /// What a read_committed fetch of [from, ...) needs: the last stable offset and the aborted ranges from `from` on.
  struct committed_view {
    std::uint64_t last_stable_offset = 0;
    std::vector<txn::aborted_range> aborted;
    std::map<std::uint64_t, txn::open_txn> open;

    /// Whether a read_committed reader gets `v`: below the LSO, not a control record, not an aborted one.
    bool visible(const storage::record_view& v) const {
      if (v.offset >= last_stable_offset || (v.attributes & storage::attr_control)) return false;
      if (!(v.attributes & storage::attr_transactional) || !v.producer) return true;
      for (const auto& a : aborted)
        if (a.producer_id == v.producer->id && a.first <= v.offset && v.offset <= a.last) return false;
      return true;
    }
  };
  /// `never_wait`: for a thread that must not wait (the Kafka listener's reactor): errc::would_block where it would,
  /// for the partition's producer lock (an append under way) or a log the table has not read yet.
  result<committed_view> committed(const topic_partition& tp, std::uint64_t from, bool never_wait = false);
  /// The same over the whole log, with every aborted range, those past the last stable offset too (a stray's records
  /// are judged by it, stray_reconciler: the stray is never written again, so its open transactions never end).
  result<committed_view> whole_log(const topic_partition& tp);

  /// Whether a transaction is open on `tp`, as far as this object has read its log. Never waits for a partition's
  /// producer lock (the balance loop and /cluster/loads ask from the reactor).
  bool has_open_transactions(const topic_partition& tp);

  /// Empties the log of `tp` (a copy this broker does not serve: see partition_store::discard) and forgets what it
  /// said about producers and transactions, so that a later copy onto it starts from nothing.
  status discard(const topic_partition& tp);

  /// Forgets what the logs of `topic` said about producers and transactions, for logs that are gone (the topic was
  /// removed here): a later topic of the name is read from its own first byte, never from where the old one's
  /// reading stopped.
  void forget_topic(const std::string& topic);

  /// Copies of the producers the log of `tp` shows (catching up first), for tests and describe.
  result<std::map<std::uint64_t, txn::producer_table::producer>> producers(const topic_partition& tp);

 private:
  struct slot {
    std::mutex mu;
    txn::producer_table table;
    txn::partition_txns txns;
    /// Whether txns has an open transaction, readable without `mu` (which a log read may hold for a while).
    std::atomic<bool> any_open{false};
    explicit slot(std::size_t max) : table(max) {}
  };
  slot& slot_of(const topic_partition& tp);
  /// Locks `lock` (on s.mu); with `never_wait`, only where that waits for nothing: the lock free, and the log read
  /// up to its end (otherwise errc::would_block; `lock` may then be held, and is released with it).
  status lock_slot(const topic_partition& tp, slot& s, std::unique_lock<std::mutex>& lock, bool never_wait);
  /// Reads the log of `tp` from where `s` stopped to its end. Under s.mu.
  status catch_up(const topic_partition& tp, slot& s);
  /// Appends and learns what was appended. Under s.mu, caught up.
  result<std::vector<std::uint64_t>> write(const topic_partition& tp, slot& s, const storage::encoded_records& records);
  /// enroll() under s.mu, caught up.
  /// `sequences_run_on`: the begin record keeps the producer's sequences where they are (see above).
  status enroll_locked(const topic_partition& tp, slot& s, std::uint64_t producer_id, std::uint32_t epoch,
                       bool sequences_run_on);
  static void learn(slot& s, const std::optional<storage::producer_stamp>& producer, std::uint8_t attributes,
                    const std::optional<std::string_view>& key, std::string_view value, std::uint64_t offset);

  storage::partition_store& store_;
  std::size_t max_producers_;
  std::mutex mu_;
  std::map<topic_partition, std::unique_ptr<slot>> slots_;
};

}  // namespace moonmq::cluster
