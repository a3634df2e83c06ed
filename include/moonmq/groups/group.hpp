// One consumer group's membership and assignment, as a pure state machine: calls and time in, answers out. No thread,
// clock, socket or file (the group service owns those and persists what `state()` returns).
//
// The protocol follows Kafka's consumer group protocol (KIP-848), reduced to what this broker needs:
// - A member joins with the topics it subscribes to and the broker its connection lives on (fetches are local, so it
//   can only consume partitions that broker owns). It heartbeats every `heartbeat_interval_ms`, reporting the
//   partitions it holds; a member silent for `session_timeout_ms` is removed.
// - The group keeps a *target assignment*, recomputed whenever members, subscriptions or the partitions' owners
//   change; each change bumps the group epoch. The target is balanced per owner broker (each owner's partitions are
//   shared among the members connected to it) and sticky (a partition stays with its member while that stays fair).
//   A partition whose owner has no connected subscriber is *unassigned*, with the reason.
// - Revoke before assign: a member is handed a partition of its target only once no other member reports holding
//   it (or that member is gone). So a partition is never held by two members.
// - Cleared before handed: a partition is handed to a member only after the partition's owner has confirmed, since
//   the partition was last held, that no commit of a former holder is still being written there
//   (`needing_clearance` / `cleared_by_owner`; the owner serializes each commit, check included, with that
//   confirmation). So a commit checked just before its member lost the partition can never land after the next
//   holder read the committed offset.
// - Every change of what a member is handed bumps that member's epoch. A commit by member M at epoch E for partition P
//   is accepted only while P is handed to M, and E lies between the epoch at which M was handed P and M's current
//   epoch. A member that was removed, or whose partition went elsewhere, is fenced.
// Members of Kafka's classic protocol (JoinGroup, SyncGroup, Heartbeat) live in the same groups, with the same rules
// (docs/kafka.md, "Consumer groups"): their generation is their member epoch; a join bumps it, and (eager members)
// gives up what they held; SyncGroup hands them what is free and cleared; Heartbeat tells them to rejoin when
// something must be revoked or is ready to be handed. They fetch from whichever broker owns a partition, so they may
// be handed any partition of their topics (`anywhere`), and a partition move changes nothing for them.
// Thread safety: none; the service serializes calls.
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

namespace moonmq::groups {

using moonmq::time_ms;

struct group_timing {
  time_ms session_timeout_ms = 10'000;
  time_ms heartbeat_interval_ms = 1'000;
};

/// A partition of a subscribed topic and the broker that owns it now.
struct placement {
  topic_partition partition;
  broker_id owner;
  bool operator==(const placement&) const = default;
};

struct member {
  std::string id;
  broker_id broker;                 ///< where its connection lives
  std::set<std::string> topics;     ///< subscription
  std::uint64_t epoch = 0;          ///< bumped whenever what it is handed changes
  std::uint64_t previous_epoch = 0;  ///< accepted in a heartbeat too (the answer that told the new one was lost)
  std::set<topic_partition> owned;  ///< what it last reported holding
  std::map<topic_partition, std::uint64_t> handed;  ///< what it may consume, with the member epoch it got each at
  time_ms last_seen = 0;
  bool anywhere = false;     ///< fetches from any broker (Kafka): may be handed partitions of every owner
  bool classic = false;      ///< Kafka's classic protocol (classic_join/sync/heartbeat)
  bool cooperative = false;  ///< classic, cooperative: keeps what it holds across a join and gives up only what it lost
  time_ms session_timeout_ms = 0;  ///< 0: the group's
  /// Classic, not durable: what it held before its join, which it may take back without a clearance (a commit of
  /// its own still in flight is its own), with the partition's handover count then: once anyone else was handed it
  /// since, it waits for a clearance like everyone.
  std::map<topic_partition, std::uint64_t> reclaim;
};

/// A classic member's JoinGroup.
struct classic_join {
  std::string member_id;
  broker_id broker;  ///< where its connection lives (shown; it may be handed any partition)
  std::set<std::string> topics;
  time_ms session_timeout_ms = 0;
  bool cooperative = false;
  std::vector<topic_partition> owned;  ///< cooperative: what it reports holding
};

/// What a classic member is told: its generation (= member epoch), and at SyncGroup its assignment; at Heartbeat
/// whether it must rejoin.
struct classic_answer {
  std::string member_id;
  std::uint64_t generation = 0;
  std::vector<topic_partition> assignment;
  bool rejoin = false;
};

struct unassigned {
  topic_partition partition;
  broker_id owner;
  std::string reason;
};

/// What a member is told: its epoch and the partitions to converge to.
struct member_answer {
  std::string member_id;
  std::uint64_t member_epoch = 0;
  std::vector<topic_partition> assignment;
  time_ms heartbeat_interval_ms = 0;
};

/// The durable part of a group (what survives a coordinator restart).
struct group_state {
  std::string id;
  std::uint64_t epoch = 0;
  std::map<std::string, member> members;
  std::map<topic_partition, std::string> target;  ///< partition -> member id
  std::set<topic_partition> cleared;  ///< held by nobody, and the owner confirmed no former holder's commit is in flight
};

class group {
 public:
  group(std::string id, group_timing timing) : timing_(timing) { s_.id = std::move(id); }
  /// A group restored from its durable state: members count as seen at `now` (they have a session to come back).
  group(group_state restored, group_timing timing, time_ms now);

  /// Joins `member_id` (a new id chosen by the caller, or a known one rejoining: it keeps its partitions), connected
  /// through `broker`, subscribing to `topics`.
  member_answer join(const std::string& member_id, const broker_id& broker, std::set<std::string> topics, time_ms now);

  /// A heartbeat reporting what the member holds. errc::not_found: unknown member (removed or never joined);
  /// errc::conflict: `member_epoch` is neither the member's epoch nor the one before (a zombie of an older
  /// incarnation, or an epoch it was never given): it must rejoin.
  result<member_answer> heartbeat(const std::string& member_id, std::uint64_t member_epoch,
                                  const std::vector<topic_partition>& owned, time_ms now);

  /// Kafka's JoinGroup: a new member, or a known one joining again (its generation bumps; eager members give up what
  /// they held, cooperative ones keep what they report holding).
  classic_answer join_classic(const classic_join& call, time_ms now);
  /// SyncGroup at `generation`: hands the member what is free and cleared of its target; its assignment.
  /// errc::not_found: unknown member; errc::conflict: another generation.
  result<classic_answer> sync_classic(const std::string& member_id, std::uint64_t generation, time_ms now);
  /// Heartbeat at `generation`: `rejoin` when something it holds is another's now, or something of its target is
  /// ready to be handed. Errors as sync_classic.
  result<classic_answer> heartbeat_classic(const std::string& member_id, std::uint64_t generation, time_ms now);

  /// The member leaves; its partitions go to others. errc::not_found when unknown.
  status leave(const std::string& member_id);

  /// Removes members silent for the session timeout; returns their ids.
  std::vector<std::string> expire(time_ms now);

  /// The partitions of the subscribed topics and their owners, as the cluster knows them now. Until the first call
  /// the target is left as it is (a group restored after a restart keeps its assignment until it knows the cluster).
  /// When some member fetches anywhere, a partition that no broker reports any more (a move's handover, when nobody
  /// serves it) stays in the placement, at its last owner, for the group's session timeout from `now`: taking it from
  /// its member would be a rebalance for a move.
  void set_placement(std::vector<placement> partitions, time_ms now = 0);

  /// Whether `member_id` at `member_epoch` may commit an offset for `tp` (errc::conflict naming why not).
  status check_commit(const std::string& member_id, std::uint64_t member_epoch, const topic_partition& tp) const;

  /// Partitions of the target that wait for their owner's clearance before they can be handed: held by nobody, not
  /// cleared since they were last held. With their owners.
  std::vector<placement> needing_clearance() const;

  /// The owner of `tp` confirmed that no commit of a former holder is in flight (ignored while someone holds it, and
  /// when `asked_at`, the partition's handover count when the owner was asked, is no longer its count: it was handed
  /// and given up since, and a commit of that holder may have come after the owner's answer).
  void cleared_by_owner(const topic_partition& tp, std::optional<std::uint64_t> asked_at = std::nullopt);
  /// How many times `tp` was handed to a member (not durable).
  std::uint64_t handovers(const topic_partition& tp) const {
    auto it = handovers_.find(tp);
    return it == handovers_.end() ? 0 : it->second;
  }

  /// Who may commit `tp` now, and from which member epoch on: nullopt when nobody holds it.
  std::optional<std::pair<std::string, std::uint64_t>> holder_of(const topic_partition& tp) const;

  const group_state& state() const noexcept { return s_; }
  const std::vector<unassigned>& unassigned_partitions() const noexcept { return unassigned_; }
  /// The topics some member subscribes to.
  std::set<std::string> subscribed_topics() const;
  /// How many times the target assignment changed.
  std::uint64_t rebalances() const noexcept { return rebalances_; }

 private:
  void rebalance();
  /// The target when some member fetches anywhere: over every subscribed partition at once.
  std::map<topic_partition, std::string> target_anywhere();
  /// A classic member at `generation` (the errors of sync_classic).
  result<member*> classic_member(const std::string& member_id, std::uint64_t generation);
  member_answer answer_for(member& m);
  /// Who else reports holding `tp`, if anyone.
  bool held_by_other(const topic_partition& tp, const std::string& member_id) const;

  group_timing timing_;
  group_state s_;
  std::vector<placement> placement_;
  bool placed_ = false;  ///< set_placement was called
  std::map<topic_partition, std::pair<broker_id, time_ms>> vanished_;  ///< kept though unreported: last owner, since
  std::map<topic_partition, std::uint64_t> handovers_;  ///< see handovers()
  std::vector<unassigned> unassigned_;
  std::uint64_t rebalances_ = 0;
};

}  // namespace moonmq::groups
