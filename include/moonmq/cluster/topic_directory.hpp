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
// Whatever decided a record, `carry_out` makes it true of this broker's storage: for a live topic of which this
// broker is the first owner of some partition (or already holds a copy), the logs exist, and each partition whose
// first owner is another broker is recorded in the ownership table as that broker's, before its log exists (so that
// no produce lands in it here); for a deleted topic, the logs are removed under every partition's gate. It is
// idempotent: a record applied again, or at a restart, changes nothing more.
// Thread safety: all members may be called concurrently. decide() under Raft blocks until the entry is applied here
// and must not be called from the io_context's thread, nor while holding partition_gates::topics().
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
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
  };

  /// Without Raft: the catalog in `file` (DataDir/topics.json), read now; a corrupt file is an error naming it.
  static result<std::unique_ptr<topic_directory>> open(parts p, std::unique_ptr<storage::state_file> file);
  /// With Raft: the catalog is what the log says; changes go through `propose` (attach it before any decide()).
  static std::unique_ptr<topic_directory> replicated(parts p);

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

  /// With Raft: an entry of kind topic, applied in the log's order.
  void apply_entry(const raft::entry& e);
  /// With Raft: the catalog of a snapshot (its "topics"; none in one written before topics were metadata), replacing
  /// this one; every topic is carried out.
  void restore(std::string_view snapshot);
  /// With Raft: the catalog as JSON (`{"topics":[...]}`), for the snapshot.
  std::string snapshot() const;

  std::optional<topic_record> find(std::string_view topic) const;
  /// Topics that exist now, by name.
  std::vector<topic_record> live() const;
  topic_catalog catalog() const;

 private:
  explicit topic_directory(parts p) : p_(std::move(p)) {}

  /// Makes `r` true of this broker's storage (see the file comment). Errors are logged: the record stands, and a
  /// restart carries it out again.
  void carry_out(const topic_record& r);
  status persist_locked() const;

  parts p_;
  std::unique_ptr<storage::state_file> file_;  ///< null under Raft
  proposer propose_;
  mutable std::mutex mu_;  // guards catalog_, outcomes_
  topic_catalog catalog_;
  std::map<raft::index_t, bool> outcomes_;  ///< recent topic entries by log index: did the change apply
  std::mutex decide_mu_;                    ///< one decision at a time (without Raft: on the coordinator)
};

}  // namespace moonmq::cluster
