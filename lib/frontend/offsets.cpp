#include "moonmq/frontend/offsets.hpp"

#include <mutex>
#include <shared_mutex>

#include "moonmq/frontend/fetch.hpp"
#include "moonmq/groups/group_metrics.hpp"
#include "moonmq/groups/group_routes.hpp"
#include "moonmq/groups/group_service.hpp"

namespace moonmq::frontend {

namespace {

refusal no_partition(const topic_partition& tp) {
  return {{errc::not_found, "topic '" + tp.topic + "' has no partition " + std::to_string(tp.partition)}, {}, {}};
}

bool exists(storage::partition_store& store, const topic_partition& tp) {
  auto count = store.partition_count(tp.topic);
  return count && tp.partition >= 0 && tp.partition < *count;
}

}  // namespace

offsets_frontend::offsets_frontend(offsets_parts parts) : p_(std::move(parts)) {
  if (!p_.fence)
    p_.fence = [routes = p_.group_routes](const std::string& group, const std::string& member_id,
                                          std::uint64_t member_epoch, const topic_partition& tp,
                                          const std::function<status()>& write) {
      return routes->fenced_commit(group, member_id, member_epoch, tp, write);
    };
}

outcome<done> offsets_frontend::commit(const commit_request& req) {
  const auto& tp = req.tp;
  // Where the partition is not served or does not exist, say so before asking the coordinator anything.
  if (!cluster::serves(*p_.ownership, tp, p_.self)) return not_served(*p_.ownership, tp, p_.self);
  if (!exists(*p_.store, tp)) return no_partition(tp);
  if (auto end = p_.store->end_offset(tp); !end)
    return end.err();
  else if (req.offset > *end)
    return refusal{{errc::offset_out_of_range, name_of(tp) + ": offset " + std::to_string(req.offset) +
                                                   " is past the end offset " + std::to_string(*end)},
                   {},
                   *end};
  bool not_now = false, missing = false;
  auto written = p_.fence(req.group, req.member_id, req.member_epoch, tp, [&]() -> status {
    std::shared_lock gate(p_.gates->gate(tp));
    if (!cluster::serves(*p_.ownership, tp, p_.self)) {
      not_now = true;
      return {};
    }
    if (!exists(*p_.store, tp)) {
      missing = true;
      return {};
    }
    return p_.offsets->commit(req.group, tp, req.offset);
  });
  if (!written) {
    if (written.code() == errc::conflict && p_.metrics &&
        ((p_.groups && p_.groups->has_members(req.group)) ||
         (p_.group_routes && p_.group_routes->coordinator_of(req.group) != p_.self)))
      p_.metrics->add(groups::metrics::fenced_commits, {{"group", req.group}}, 1);
    const bool fenced_or_away = written.code() == errc::conflict || written.code() == errc::unavailable;
    return refusal{written.err(), {}, {}, fenced_or_away};
  }
  if (not_now) return not_served(*p_.ownership, tp, p_.self);
  if (missing) return no_partition(tp);
  return done{};
}

outcome<std::optional<std::uint64_t>> offsets_frontend::committed(const std::string& group,
                                                                   const topic_partition& tp) const {
  // Like a commit: a broker that moved the partition away answers with its owner, never a stale offset.
  if (!cluster::serves(*p_.ownership, tp, p_.self)) return not_served(*p_.ownership, tp, p_.self);
  return p_.offsets->committed(group, tp);
}

}  // namespace moonmq::frontend
