// The metric families of consumer groups (labels in braces), in one place: the coordinator sets the first four, a
// partition's owner counts fenced commits.
// Thread safety: constants.
#pragma once

#include "moonmq/core/metrics_sink.hpp"

namespace moonmq::groups::metrics {

inline constexpr metric_family members{"moonmq_group_members", "Members of a group on its coordinator {group}",
                                       metric_kind::gauge};
inline constexpr metric_family epoch{"moonmq_group_epoch", "A group's epoch on its coordinator {group}",
                                     metric_kind::gauge};
inline constexpr metric_family rebalances{"moonmq_group_rebalances_total",
                                          "Changes of a group's target assignment {group}", metric_kind::counter};
inline constexpr metric_family unassigned{
    "moonmq_group_unassigned_partitions",
    "Partitions of a group's topics no member can take (no member on their owner) {group}", metric_kind::gauge};
inline constexpr metric_family fenced_commits{
    "moonmq_group_fenced_commits_total",
    "Offset commits refused because the member does not hold the partition at that epoch {group}",
    metric_kind::counter};

}  // namespace moonmq::groups::metrics
