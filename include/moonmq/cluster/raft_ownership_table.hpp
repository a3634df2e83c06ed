// With Raft on: the ownership table as a replicated state machine, and the controller fence as the Raft term.
//
// `raft_ownership_table` keeps two layers. The replicated layer is the applied log: every `owner` entry (a move's
// decisions, proposed through decide(): cutover, confirm, rollback) and the latest `controller` entry. An owner entry
// is a compare-and-set on the replicated layer (applied only while the partition's entry there is at most the
// point it expects), so of two decisions racing for one version the log's order picks exactly one, and every broker learns
// which. The local layer is this broker's own sidecar (cluster-assignments.json) for what only it needs to know: a
// destination's reservation during a move, the partitions it created on a peer's behalf, and a source's handover
// marker written before its cutover is proposed (so that a cutover whose outcome is not known yet is served by
// nobody here). Of the two layers, the newer entry (ownership_table.hpp's newer_than) is the one that counts.
// The snapshot of the state machine is the replicated layer as JSON.
//
// The same log carries the topic catalog (entries of kind topic): they are handed to the attached topic_directory,
// and its catalog rides the snapshot as "topics" (a snapshot written before topics were metadata has none).
//
// The table is not ready() after a start until the Raft service says its state machine has caught up with what the
// cluster had committed (raft::state_machine::caught_up): until then the broker serves nothing.
//
// `raft_fence`: the controller epoch is the Raft term and the controller its leader. claim() succeeds only on the
// leader; check() refuses (409) a claim from an older term, or from another broker in the current term.
// Thread safety: all members may be called concurrently; transfer() blocks until the entry is applied here and must
// not be called from the io_context's thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "moonmq/cluster/controller_fence.hpp"
#include "moonmq/cluster/ownership_table.hpp"
#include "moonmq/cluster/topic_directory.hpp"
#include "moonmq/raft/service.hpp"

namespace moonmq::cluster {

class raft_ownership_table final : public ownership_table, public raft::state_machine {
 public:
  raft_ownership_table(broker_id self, std::unique_ptr<ownership_table> local);

  /// Appends an entry to the replicated log and returns its index once it is applied here (raft::service's
  /// propose_blocking); an error when that is not known to have happened.
  using proposer = std::function<result<raft::index_t>(raft::entry_kind, std::string)>;

  /// Proposals go through `s` from now on. REQUIRES: before any decide().
  void attach(raft::service& s) {
    attach([&s](raft::entry_kind k, std::string data) { return s.propose_blocking(k, std::move(data)); });
  }
  /// The same through any proposer (tests drive the table with a log of their own).
  void attach(proposer p) { propose_ = std::move(p); }
  /// Topic entries go to `topics` from now on. REQUIRES: before the Raft service starts.
  void attach_topics(topic_directory& topics) { topics_ = &topics; }

  std::optional<ownership_entry> entry(const topic_partition& tp) const override;
  status record(const ownership_entry& e, std::optional<ownership_point> expect = {}) override;
  status record_all(const std::vector<ownership_entry>& changes) override { return local_->record_all(changes); }
  status decide(const ownership_entry& e, ownership_point expect) override;
  bool replicated() const noexcept override { return true; }
  bool ready() const noexcept override { return ready_.load(std::memory_order_acquire); }
  std::vector<ownership_entry> entries() const override;
  /// The local layer only: the replicated entries of a deleted topic are dropped where its delete is applied, in the
  /// log's order (a later incarnation's replicated entries must never be touched by a delete carried out late).
  status forget_topic(const std::string& topic) override;

  /// The replicated layer only: what every broker agrees on.
  std::vector<ownership_entry> replicated_entries() const;
  /// The latest controller entry applied: its term and broker.
  controller_claim controller() const;

  void apply(const raft::entry& e) override;
  void restore(const std::string& snapshot) override;
  std::string snapshot() const override;
  /// Ready once, besides the log, what its topic entries make true of this broker's storage is done (logs of a
  /// deleted incarnation removed, new ones made): until then a log here may be one the catalog no longer lists.
  void caught_up() override {
    if (topics_)
      topics_->after_carried_out([this] { ready_.store(true, std::memory_order_release); });
    else
      ready_.store(true, std::memory_order_release);
  }

 private:
  broker_id self_;
  std::unique_ptr<ownership_table> local_;
  proposer propose_;
  mutable std::mutex mu_;
  std::map<topic_partition, ownership_entry> replicated_;
  controller_claim controller_;
  std::map<std::uint64_t, bool> outcomes_;  ///< recent owner entries by log index: did the compare-and-set apply
  std::atomic<bool> ready_{false};
  topic_directory* topics_ = nullptr;
};

class raft_fence final : public controller_fence {
 public:
  raft_fence(broker_id self, const raft::service& s) : self_(std::move(self)), service_(s) {}

  result<epoch> claim() override;
  result<bool> observe(const controller_claim&) override { return false; }
  status check(const controller_claim& c) override;
  controller_claim highest() const override;
  std::optional<controller_claim> own_claim() const override;
  bool by_consensus() const noexcept override { return true; }

 private:
  broker_id self_;
  const raft::service& service_;
};

}  // namespace moonmq::cluster
