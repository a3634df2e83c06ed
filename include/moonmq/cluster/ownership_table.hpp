// Who owns which partition: the seam the router, the serving rules and the reassigner consult.
//
// The table is sparse. A partition with no entry is owned by the broker that holds it locally (that is how every
// partition starts); an entry names the broker that serves it now. Two implementations stand behind this seam: the
// local JSON table (`cluster-assignments.json`, last writer wins per broker, local_ownership_table.hpp) and, with
// Raft on, the replicated one. The rest of the cluster layer does not know which it has.
// Thread safety: implementations allow concurrent calls; a change is durable before set_owner returns.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "moonmq/core/ids.hpp"
#include "moonmq/core/result.hpp"

namespace moonmq::cluster {

/// One entry of the table.
struct ownership_entry {
  topic_partition partition;
  broker_id owner;
  bool operator==(const ownership_entry&) const = default;
};

class ownership_table {
 public:
  virtual ~ownership_table() = default;

  /// The broker recorded as owner, or nullopt when there is no entry (owned by whoever holds it locally).
  virtual std::optional<broker_id> owner(const topic_partition& tp) const = 0;

  /// Records `owner` for `tp`, durably, before returning ok. On error nothing changed.
  virtual status set_owner(const topic_partition& tp, const broker_id& owner) = 0;

  /// Every entry, sorted by partition.
  virtual std::vector<ownership_entry> entries() const = 0;

  /// Several set_owner() at once, durably in one write where the table can (the file table rewrites itself once,
  /// not once per partition). On error nothing changed.
  virtual status set_owners(const std::vector<ownership_entry>& changes) {
    for (const auto& c : changes)
      if (auto s = set_owner(c.partition, c.owner); !s) return s;
    return {};
  }

  /// The cluster-wide ownership change of a move's cutover (and of its rollback): `tp` is now `to`'s. The local
  /// table records it like set_owner; the Raft-backed one replicates it and returns once it is committed and
  /// applied here, so every broker learns the new owner from the log.
  virtual status transfer(const topic_partition& tp, const broker_id& to) { return set_owner(tp, to); }
};

/// The broker that serves `tp` as seen by broker `self`: the recorded owner, or `self` when there is no entry.
inline broker_id owner_as_seen_by(const ownership_table& table, const topic_partition& tp, const broker_id& self) {
  auto o = table.owner(tp);
  return o ? *o : self;
}

/// Whether broker `self` serves `tp` (the spec's serves_partition): no entry, or an entry naming `self`.
inline bool serves(const ownership_table& table, const topic_partition& tp, const broker_id& self) {
  auto o = table.owner(tp);
  return !o || *o == self;
}

}  // namespace moonmq::cluster
