// With Raft on: the ownership table as a replicated state machine, and the controller fence as the Raft term.
//
// `raft_ownership_table` keeps two layers. The replicated layer is the applied log: every `owner` entry (one
// partition's new owner, proposed by a move's cutover through transfer()) and the latest `controller` entry. The
// local layer is this broker's own sidecar (cluster-assignments.json) for what only it needs to know: a destination's
// reservation during a move (the source stays the owner here until confirm, so the destination serves nothing before
// its copy is whole) and the partitions it created on a peer's behalf. The local layer wins where it has an entry.
// The snapshot of the state machine is the replicated layer as JSON.
//
// `raft_fence`: the controller epoch is the Raft term and the controller its leader. claim() succeeds only on the
// leader; check() refuses (409) a claim from an older term, or from another broker in the current term.
// Thread safety: all members may be called concurrently; transfer() blocks until the entry is applied here and must
// not be called from the io_context's thread.
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "moonmq/cluster/controller_fence.hpp"
#include "moonmq/cluster/ownership_table.hpp"
#include "moonmq/raft/service.hpp"

namespace moonmq::cluster {

class raft_ownership_table final : public ownership_table, public raft::state_machine {
 public:
  raft_ownership_table(broker_id self, std::unique_ptr<ownership_table> local);

  /// Proposals go through `s` from now on. REQUIRES: before any transfer().
  void attach(raft::service& s) { service_ = &s; }

  std::optional<broker_id> owner(const topic_partition& tp) const override;
  status set_owner(const topic_partition& tp, const broker_id& owner) override;
  status set_owners(const std::vector<ownership_entry>& changes) override { return local_->set_owners(changes); }
  status transfer(const topic_partition& tp, const broker_id& to) override;
  std::vector<ownership_entry> entries() const override;

  /// The replicated layer only: what every broker agrees on.
  std::vector<ownership_entry> replicated_entries() const;
  /// The latest controller entry applied: its term and broker.
  controller_claim controller() const;

  void apply(const raft::entry& e) override;
  void restore(const std::string& snapshot) override;
  std::string snapshot() const override;

 private:
  broker_id self_;
  std::unique_ptr<ownership_table> local_;
  raft::service* service_ = nullptr;
  mutable std::mutex mu_;
  std::map<topic_partition, broker_id> replicated_;
  controller_claim controller_;
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
