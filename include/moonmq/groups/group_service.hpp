// The group coordinator on a broker: every group whose coordinator this broker is (fnv1a of the group id over the
// sorted ids of all configured brokers), as `group` state machines, with what they need around them: the partitions
// of the subscribed topics and their owners (from a callback), member ids, the clock, and durability. The group state
// (epochs, members, subscriptions, the target and what each member holds) is kept in a keyed log, one record per
// group keyed by its id: whenever a membership or an assignment changes (never for a heartbeat that changes nothing)
// the changed group's record is appended and synced, so a change costs one small write and one fdatasync however many
// groups there are, and the state survives a restart of the coordinator: members that keep heartbeating keep their
// ids and partitions, and epochs never go backwards.
//
// Forwarding join/heartbeat/leave from other brokers and fencing commits at partition owners are group_routes's job
// (group_routes.hpp); `coordinator_of` says where a group lives.
// Thread safety: all methods may be called concurrently (one mutex).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "moonmq/core/logger.hpp"
#include "moonmq/core/metrics_sink.hpp"
#include "moonmq/groups/group.hpp"
#include "moonmq/storage/keyed_log.hpp"
#include "moonmq/storage/state_file.hpp"

namespace moonmq::groups {

/// The coordinator of `group_id` among `brokers`: fnv1a(group id) modulo their number, over the ids sorted.
broker_id coordinator_of(const std::string& group_id, std::vector<broker_id> brokers);

/// Partitions of `topics` and their owners, as this broker knows them; nullopt while it does not know yet (then the
/// groups keep what they have).
using placement_source =
    std::function<std::optional<std::vector<placement>>(const std::set<std::string>& topics)>;

struct group_service_options {
  broker_id self;
  group_timing timing;
  /// A fresh member id per call (empty: 128 bits of the operating system's random source, in hex, not guessable).
  /// A deterministic simulation passes its own.
  std::function<std::string()> member_ids = {};
  /// The most members one group may have: a join of one more is errc::resource_exhausted (Kafka's
  /// GROUP_MAX_SIZE_REACHED). Every join recomputes the group's assignment, so a group's size bounds its cost.
  std::size_t max_members = 10000;
};

/// What GET /v1/groups/{g} shows.
struct group_description {
  std::string id;
  broker_id coordinator;
  std::uint64_t epoch = 0;
  std::vector<member> members;
  std::vector<unassigned> unassigned_partitions;
};

class group_service {
 public:

  /// Opens the service over `file` (which must outlive it; empty: no groups yet; a record that cannot be read: an
  /// error naming the log and the group). `legacy`: the single-document state file of an older version, whose
  /// groups are carried into the log (the caller renames it once this succeeds).
  static result<std::unique_ptr<group_service>> open(group_service_options options, storage::keyed_log& file,
                                                     placement_source placements, time_ms now,
                                                     logger& log = *default_logger(),
                                                     metrics_sink& metrics = no_metrics(),
                                                     const storage::state_file* legacy = nullptr);

  /// Joins (a new member when `member_id` is empty: the service picks its id).
  result<member_answer> join(const std::string& group_id, const std::string& member_id, const broker_id& broker,
                             std::set<std::string> topics, time_ms now);
  result<member_answer> heartbeat(const std::string& group_id, const std::string& member_id,
                                  std::uint64_t member_epoch, const std::vector<topic_partition>& owned, time_ms now);
  status leave(const std::string& group_id, const std::string& member_id);

  /// Kafka's classic protocol (group::join_classic and the rest). A join without a member id is a new member (the
  /// service picks its id); one with an id the group does not know is errc::not_found (Kafka's UNKNOWN_MEMBER_ID).
  result<classic_answer> join_classic(const std::string& group_id, classic_join call, time_ms now);
  result<classic_answer> sync_classic(const std::string& group_id, const std::string& member_id,
                                      std::uint64_t generation, time_ms now);
  result<classic_answer> heartbeat_classic(const std::string& group_id, const std::string& member_id,
                                           std::uint64_t generation, time_ms now);

  /// Expires silent members and follows the partitions' owners (call every few hundred milliseconds).
  void tick(time_ms now);

  /// Whether the member may commit `tp` (errc::conflict names why not). A group this broker does not coordinate, or
  /// that has no members, has no holders: any commit without a member passes, any with one is fenced.
  status check_commit(const std::string& group_id, const std::string& member_id, std::uint64_t member_epoch,
                      const topic_partition& tp) const;
  /// Whether the group has members (then every commit must name one).
  bool has_members(const std::string& group_id) const;

  /// Partitions waiting for their owner's clearance before they can be handed (group::needing_clearance), with the
  /// group and the owner to ask; and the owner's answer, which counts only for a partition the last
  /// pending_clearances() named and that was not handed since (callers ask, then report, one round at a time).
  std::vector<std::pair<std::string, placement>> pending_clearances() const;
  void clearance_done(const std::string& group_id, const topic_partition& tp);

  std::optional<group_description> describe(const std::string& group_id) const;
  /// The groups this broker coordinates, in byte order: those after `after`, at most `limit`.
  std::vector<std::string> groups(const std::string& after = {}, std::size_t limit = SIZE_MAX) const;

 private:
  group_service(group_service_options o, storage::keyed_log& f, placement_source p, logger& l, metrics_sink& m);
  group& group_locked(const std::string& id, time_ms now);
  void refresh_locked(group& g, time_ms now);
  /// Appends the state of each group (only those of `*only`, when given) that changed since it was written, then
  /// syncs once.
  status persist_locked(const std::vector<std::string>* only = nullptr);
  /// ok when `member_id` is in `g` already or `g` has room for one more member.
  status room_for_member(const group& g, const std::string& member_id) const;
  status persist_locked(const std::string& group_id) {
    const std::vector<std::string> one{group_id};
    return persist_locked(&one);
  }
  void publish_locked(const group& g);

  group_service_options opt_;
  storage::keyed_log& file_;
  placement_source placements_;
  logger& log_;
  metrics_sink& metrics_;
  mutable std::mutex mu_;
  std::map<std::string, group> groups_;
  std::map<std::string, std::string> written_;  ///< each group's record as the log holds it
  std::set<std::string> unwritten_;             ///< groups whose last write failed: written again at the next tick
  /// Each partition's handover count when pending_clearances() last named it (see clearance_done).
  mutable std::map<std::pair<std::string, topic_partition>, std::uint64_t> asked_;
};

}  // namespace moonmq::groups
