// This broker's copy of the topic catalog (topic_catalog.hpp), how changes to it are decided, and what a decided
// topic means for this broker's own storage.
//
// Two ways to decide, as for ownership:
// - With Raft, a change is a log entry (raft::entry_kind::topic). decide() proposes it and returns once it is applied
//   here; every broker applies every entry in the log's order (apply_entry), so of two changes made against one
//   version exactly one applies, everywhere. The catalog rides the Raft snapshot (write_snapshot / restore).
// - Without Raft, each topic has one coordinator (coordinator_of: fnv1a of the name over the sorted broker ids, as
//   for groups). decide() is called on it alone: it applies the change to its catalog and writes the catalog to
//   DataDir/topics.json before it returns. The other brokers learn() the record from it.
//
// Whatever decided a record, `carry_out` makes the topic's current record true of this broker's storage: for a
// live topic of which this broker is the first owner of some partition (or already holds a copy), the logs exist, and
// each partition whose first owner is another broker is recorded in the ownership table as that broker's before its
// log exists (so that no produce lands in it here); for a deleted topic, the logs are removed under every partition's
// gate and the topic's ownership entries here are dropped. It reads the current record itself, so that it can run
// late, twice, or after a later change (a restart replaying the Raft log; learns arriving out of order) and still
// reach the same state.
//
// Incarnations. A topic made again under a deleted name is a new incarnation (topic_record::created). The logs a
// broker holds are stamped with the incarnation they belong to (DataDir/topic-logs.json, written before the logs are
// made), so that a replayed delete never removes a later incarnation's logs and a later incarnation never starts from
// an earlier one's records: logs of an older incarnation are removed before the new one's are made. Logs here of a
// listed topic that no record stamped (made before topics were cluster metadata, or by hand) are strays: never served
// (withheld), reported, left untouched.
// Thread safety: all members may be called concurrently. decide() under Raft blocks until the entry is applied and
// carried out here and must not be called from the io_context's thread, nor while holding a partition gate.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "moonmq/cluster/ownership_table.hpp"
#include "moonmq/cluster/partition_gates.hpp"
#include "moonmq/cluster/topic_catalog.hpp"
#include "moonmq/core/logger.hpp"
#include "moonmq/raft/message.hpp"
#include "moonmq/storage/partition_store.hpp"
#include "moonmq/storage/state_file.hpp"

namespace moonmq::cluster {

class topic_directory {
 public:
  /// Appends an entry to the replicated log and returns its index once it is applied here (raft::service's
  /// propose_blocking).
  using proposer = std::function<result<raft::index_t>(raft::entry_kind, std::string)>;

  struct parts {
    broker_id self;
    std::vector<broker_id> brokers;  ///< every broker of the cluster, this one included
    storage::partition_store& store;
    ownership_table& ownership;
    partition_gates& gates;
    logger& log;
    /// With Raft: runs carry_out work in order, off the thread that applies the log (empty: at once). Carrying out
    /// takes partition gates, and a move's cutover holds its partition's gate while it waits for the log to apply
    /// its entry: on the applying thread, the two would wait for each other.
    std::function<void(std::function<void()>)> run_later = {};
    /// Forgets every group's committed offsets of a topic (storage::offset_store::forget_topic), called where a
    /// deleted topic's logs and entries go: a later topic of the name never resumes a group at the old one's offsets.
    std::function<status(const std::string&)> forget_offsets = {};
    /// Forgets what a deleted topic's logs said about producers and transactions (producer_states::forget_topic),
    /// called once its logs are gone: a later topic of the name is read from its own start.
    std::function<void(const std::string&)> forget_producers = {};
  };

  /// Without Raft: the catalog in `file` (DataDir/topics.json), read now, and carried out; `stamps` is
  /// DataDir/topic-logs.json. A corrupt file is an error naming it.
  static result<std::unique_ptr<topic_directory>> open(parts p, std::unique_ptr<storage::state_file> file,
                                                       std::unique_ptr<storage::state_file> stamps);
  /// With Raft: the catalog is what the log says; changes go through `propose` (attach it before any decide()).
  static result<std::unique_ptr<topic_directory>> replicated(parts p, std::unique_ptr<storage::state_file> stamps);

  void attach(proposer p) { propose_ = std::move(p); }
  bool replicated() const noexcept { return !file_; }

  /// The broker that decides `topic` without Raft.
  broker_id coordinator_of(std::string_view topic) const;

  /// Decides `c`: with Raft through the log, without it in this broker's catalog (call it on the coordinator only).
  /// Returns the topic as it now is; the catalog's refusal (topic_catalog::check) otherwise, or errc::unavailable
  /// when its outcome is not known. The decided record is carried out here before this returns.
  result<topic_record> decide(const topic_change& c);

  /// Without Raft: a record this broker was told by the topic's coordinator; taken (durably) and carried out when
  /// newer than what it knows.
  status learn(const topic_record& r);

  /// With Raft: an entry of kind topic, applied in the log's order. Returns the record it made, when it applied.
  std::optional<topic_record> apply_entry(const raft::entry& e);
  /// With Raft: the catalog of a snapshot (its "topics"; none in one written before topics were metadata), replacing
  /// this one; every topic is carried out.
  void restore(std::string_view snapshot);
  /// With Raft: the catalog as JSON (`{"topics":[...]}`), for the snapshot.
  std::string snapshot() const;

  /// For /cluster/ensure (a move's destination): makes `partitions` of a topic the catalog lists, as carry_out does
  /// for its first owners. `theirs`: the source's record of the topic, when its catalog lists it; without Raft it is
  /// learned, with Raft a catalog behind it answers errc::unavailable (the move fails before anything moved). nullopt
  /// when neither lists the topic (made before topics were cluster metadata: the caller's own rules apply);
  /// not_found for a deleted topic; a count past the catalog's is cut to it (a source with strays past the count asks
  /// for its store's); conflict when a stray of it is here.
  std::optional<result<std::int32_t>> ensure_listed(const std::string& topic, std::int32_t partitions,
                                                    const std::optional<topic_record>& theirs = std::nullopt);

  /// Adoption of a topic the catalog does not list (made before topics were cluster metadata): before its create is
  /// decided at version `created`, this broker's logs of `name` are stamped as that incarnation's, made up to
  /// `partitions`, except the `disowned` partitions (a duplicate of a partition another broker's log was chosen for),
  /// which are strays once the catalog lists the topic. conflict when the catalog lists the name; nothing when this
  /// broker holds no log of it. A claim whose create is never decided is taken by the next adoption of the name.
  status claim(const std::string& name, std::uint64_t created, std::int32_t partitions,
               std::set<std::int32_t> disowned);

  /// Grows a topic the catalog does not list (made before topics were cluster metadata) on this broker alone.
  result<std::int32_t> grow_unlisted(const std::string& topic, std::int32_t partitions);

  /// Empties the stray log of `tp` here through `empty` (producer_states::discard), an operator's decision
  /// (stray_reconciler). conflict when `tp` is no stray here. When every log of an unstamped topic here is empty, the
  /// logs become the catalog's (see adopt_if_empty_locked).
  status drop_stray(const topic_partition& tp, const std::function<status(const topic_partition&)>& empty);

  /// Runs `work` once everything applied so far has been carried out here (with Raft; without it, at once).
  void after_carried_out(std::function<void()> work);

  std::optional<topic_record> find(std::string_view topic) const;
  /// Whether the catalog rules out that any broker serves `topic` (or its `partition`): it holds the topic as
  /// deleted, or lists it with no such partition (logs past a record's count are strays, never served). A name it
  /// does not list at all may be a topic made before topics were metadata: not ruled out.
  bool rules_out(std::string_view topic, std::optional<std::int32_t> partition) const;
  /// Topics that exist now, by name.
  std::vector<topic_record> live() const;
  topic_catalog catalog() const;

 private:
  explicit topic_directory(parts p) : p_(std::move(p)) {}
  status load_stamps();

  /// Makes the current record of `name` true of this broker's storage (see the file comment); `make_here`: the logs
  /// are made even where this broker owns none of its partitions (a move's destination). Errors are logged (and
  /// returned): the record stands, and a restart carries it out again. REQUIRES: partition_gates::topics() held.
  status carry_out_locked(const std::string& name, bool make_here = false);
  void carry_out(const std::string& name);
  /// Removes this broker's logs and ownership entries of `name`, and its stamp. REQUIRES: topics() held.
  status remove_here(const std::string& name, std::int32_t partitions);
  status write_stamps_locked() const;  ///< REQUIRES: topics() held
  /// Finds the strays among this broker's logs (logs of a topic the catalog lists that no carry-out made here: no
  /// stamp, or a partition past the record's count; logs of a deleted topic that were never stamped) and withholds
  /// them (ownership_table::withhold); each partition of a live topic is routed to its first owner unless an entry
  /// already names one. REQUIRES: topics() held.
  void withhold_strays_locked();
  /// Logs of `r`'s name here that no record stamped, all of them empty (emptied by an operator, or never written),
  /// hold nothing of another history: they are stamped as the catalog's and carried out, each partition another
  /// broker owns recorded as that broker's first (a deleted topic's are removed). Whether it adopted them.
  /// REQUIRES: topics() held.
  bool adopt_if_empty_locked(const topic_record& r);
  status persist_locked() const;
  /// Runs `work` through parts::run_later, or at once.
  void later(std::function<void()> work);

  parts p_;
  std::unique_ptr<storage::state_file> file_;  ///< null under Raft
  std::unique_ptr<storage::state_file> stamps_file_;
  /// The incarnation of each topic's logs here; guarded by partition_gates::topics(), which every carry-out holds (so
  /// that its file is written without holding mu_, which the thread applying the Raft log takes).
  std::map<std::string, std::uint64_t> stamps_;
  /// How many partitions of each stamped topic carry-outs made here (a log past it is a stray); guarded likewise.
  std::map<std::string, std::int32_t> made_;
  /// Partitions of an adopted topic whose logs here were not chosen (strays); guarded likewise.
  std::map<std::string, std::set<std::int32_t>> disowned_;
  proposer propose_;
  mutable std::mutex mu_;  // guards catalog_, outcomes_
  topic_catalog catalog_;
  std::map<raft::index_t, bool> outcomes_;  ///< recent topic entries by log index: did the change apply
  raft::index_t carried_ = 0;               ///< with Raft: topic entries carried out here up to this index
  std::condition_variable carried_cv_;
  std::mutex decide_mu_;                    ///< one decision at a time (without Raft: on the coordinator)
};

}  // namespace moonmq::cluster
