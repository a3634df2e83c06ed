// The committed-offsets front end: a consumer group's commit and read of a partition's position, whichever protocol
// carried them.
//
// Both run on the partition's owner only (a broker that does not serve it refuses, naming the owner): the owner holds
// the group's offsets of its partitions, and a move carries them along. A commit is fenced by the group's
// coordinator: only the member that holds the partition, at an epoch it held it, commits; without a member, only
// while the group has none. The check and the durable write happen under the (group, partition) commit gate, which a
// clearance passes before the partition is handed to its next holder; under it, the write is refused where the
// partition is no longer served (what a move pushed is then complete) or no longer exists (nobody may make a broker
// keep offsets of topics it does not have). A position past the log's end is refused: the group's consumer would be
// stuck there (the end only grows, so the check holds when the commit is written).
//
// A protocol whose clients commit at the group's coordinator rather than at each partition's owner (Kafka) calls
// `commit_at_owner` and `committed_at_owner`: where this broker does not serve the partition, the call is relayed
// once to the broker the refusal names, over /cluster/admin/offsets (`handle_cluster` there), never chased further.
// Thread safety: every method may be called concurrently.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "moonmq/cluster/ownership_table.hpp"
#include "moonmq/cluster/partition_gates.hpp"
#include "moonmq/core/metrics_sink.hpp"
#include "moonmq/frontend/outcome.hpp"
#include "moonmq/frontend/placement.hpp"
#include "moonmq/storage/offset_store.hpp"
#include "moonmq/storage/partition_store.hpp"
#include "moonmq/transport/message.hpp"

namespace moonmq::transport {
class peer_client;
}  // namespace moonmq::transport

namespace moonmq::groups {
class group_routes;
class group_service;
}  // namespace moonmq::groups

namespace moonmq::frontend {

struct commit_request {
  std::string group;
  topic_partition tp;
  std::uint64_t offset = 0;
  std::string member_id;          ///< empty: a commit from outside the group (allowed while it has no members)
  std::uint64_t member_epoch = 0;
  std::string metadata{};  ///< kept with the offset (at most storage::max_commit_metadata bytes of UTF-8)
};

/// Asks the group's coordinator whether a member may commit a partition and runs `write` if so, under the commit
/// gate (groups::group_routes::fenced_commit): errc::conflict when fenced, errc::unavailable when the coordinator
/// does not answer.
using commit_fence = std::function<status(const std::string& group, const std::string& member_id,
                                          std::uint64_t member_epoch, const topic_partition& tp,
                                          const std::function<status()>& write)>;

struct offsets_parts {
  broker_id self;
  storage::partition_store* store = nullptr;
  storage::offset_store* offsets = nullptr;
  cluster::ownership_table* ownership = nullptr;
  cluster::partition_gates* gates = nullptr;
  groups::group_routes* group_routes = nullptr;
  groups::group_service* groups = nullptr;
  metrics_sink* metrics = nullptr;  ///< null: nothing counted
  /// The fence; empty: group_routes' own. A test that must show the fence matters passes one that admits anything.
  commit_fence fence;
  /// Where a commit or read is relayed to the partition's owner (null: never; the caller is refused, naming it).
  transport::peer_client* peers = nullptr;
  /// Every other broker (asked by all_committed).
  std::vector<std::string> peer_ids = {};
  /// Where a partition of a topic this broker does not have is served (null: such a partition is not found).
  placement_source* placement = nullptr;
};

class offsets_frontend {
 public:
  explicit offsets_frontend(offsets_parts parts);

  /// errc::conflict: the member is fenced (stale epoch, unknown member, or a member-less commit to a group with
  /// members); errc::unavailable: the coordinator did not answer; errc::offset_out_of_range with the log's end.
  outcome<done> commit(const commit_request& req);

  /// The group's committed position of `tp`, with its metadata (nullopt: none committed).
  outcome<std::optional<storage::committed_offset>> committed(const std::string& group, const topic_partition& tp) const;

  /// commit() and committed() here, or once at the owner the refusal names. An owner that does not answer is
  /// errc::unavailable (not the coordinator's).
  outcome<done> commit_at_owner(const commit_request& req);
  outcome<std::optional<storage::committed_offset>> committed_at_owner(const std::string& group,
                                                                       const topic_partition& tp) const;

  /// A group's committed offsets of every partition, each from the broker that serves it (this one, then every peer
  /// asked in turn); errc::unavailable naming a peer that did not answer (its partitions would be missing).
  outcome<std::vector<std::pair<topic_partition, storage::committed_offset>>> all_committed(
      const std::string& group) const;

  /// POST /cluster/admin/offsets (a commit: {"group","topic","partition","offset","member_id","member_epoch",
  /// "metadata"}) and GET /cluster/admin/offsets?group=&topic=&partition= (the committed offset: {"offset": n or null,
  /// "metadata"}); without topic and partition, the group's offsets of every partition this broker serves:
  /// {"offsets":[{"topic","partition","offset","metadata"}]}.
  transport::response handle_cluster(const transport::request& req);

 private:
  offsets_parts p_;
};

}  // namespace moonmq::frontend
