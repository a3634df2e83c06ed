// The metric families the cluster layer reports through its `metrics_sink` (see core/metrics_sink.hpp), in one place
// so that an operator can read every name, unit and label here. Base units (seconds, bytes); counters end in
// `_total`.
// Thread safety: constants.
#pragma once

#include <array>

#include "moonmq/core/metrics_sink.hpp"

namespace moonmq::cluster::metrics {

inline constexpr std::array<double, 10> short_seconds{0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                      0.025,  0.05,  0.1,    0.25,  1};
inline constexpr std::array<double, 10> move_seconds{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};

// ---- the balance loop (labels in braces) -------------------------------------------------------------------------
inline constexpr metric_family ab_enabled{"moonmq_autobalancer_enabled", "1 when the balance loop runs on this broker",
                                          metric_kind::gauge};
inline constexpr metric_family ab_dry_run{"moonmq_autobalancer_dry_run", "1 when plans are only logged",
                                          metric_kind::gauge};
inline constexpr metric_family ab_is_controller{
    "moonmq_autobalancer_is_controller", "1 while this broker holds the newest controller claim and acts",
    metric_kind::gauge};
inline constexpr metric_family ab_controller_epoch{"moonmq_autobalancer_controller_epoch",
                                                   "The controller epoch this broker claimed (0 before its first pass)",
                                                   metric_kind::gauge};
inline constexpr metric_family ab_passes{"moonmq_autobalancer_passes_total",
                                         "Balance passes by result {result: ok, superseded, standby, error}",
                                         metric_kind::counter};
inline constexpr metric_family ab_last_pass{"moonmq_autobalancer_last_pass_timestamp_seconds",
                                            "Unix time at which the last pass ended", metric_kind::gauge};
inline constexpr metric_family ab_detect_duration{"moonmq_autobalancer_detect_duration_seconds",
                                                  "Time the detector took to plan (freeze, goals, chaining)",
                                                  metric_kind::histogram, short_seconds};
inline constexpr metric_family ab_plan_actions{"moonmq_autobalancer_plan_actions",
                                               "Actions in the last pass's plan", metric_kind::gauge};
inline constexpr metric_family ab_actions{"moonmq_autobalancer_actions_total",
                                          "Planned actions by outcome {type: MOVE, SWAP; result: started, "
                                          "succeeded, failed, deferred, dry_run}",
                                          metric_kind::counter};
inline constexpr metric_family ab_broker_load{
    "moonmq_autobalancer_broker_load",
    "Each broker's load as the model sees it {broker; resource: nw_in and nw_out in bytes per second, disk in "
    "bytes, partitions as a count}",
    metric_kind::gauge};
inline constexpr metric_family ab_brokers{"moonmq_autobalancer_brokers", "Brokers in the model {state: active, inactive}",
                                          metric_kind::gauge};
inline constexpr metric_family ab_imbalance{"moonmq_autobalancer_imbalance_ratio",
                                            "Most loaded active broker over the mean of active brokers, 1 when the mean is 0 {resource}",
                                            metric_kind::gauge};

// ---- moves, routing, peers, fence ---------------------------------------------------------------------------------
inline constexpr metric_family moves_in_progress{"moonmq_cluster_moves_in_progress",
                                                 "Moves this broker is running as their source", metric_kind::gauge};
inline constexpr metric_family moves{"moonmq_cluster_moves_total", "Finished moves {result: succeeded, failed, cancelled}",
                                     metric_kind::counter};
inline constexpr metric_family move_bytes{"moonmq_cluster_move_bytes_total",
                                          "Partition bytes copied to destinations by moves", metric_kind::counter};
inline constexpr metric_family move_duration{"moonmq_cluster_move_duration_seconds",
                                             "Wall time of finished moves, start to confirm or failure",
                                             metric_kind::histogram, move_seconds};
inline constexpr metric_family forwarded_records{"moonmq_cluster_forwarded_records_total",
                                                 "Produced records forwarded to the partition's owner",
                                                 metric_kind::counter};
inline constexpr metric_family fence_rejections{"moonmq_cluster_fence_rejections_total",
                                                "Control-plane requests refused with 409 for a superseded controller",
                                                metric_kind::counter};
inline constexpr metric_family listener_refusals{
    "moonmq_cluster_listener_refusals_total",
    "Connections or requests the cluster listener turned away before any route {reason: tls, malformed, too_large, "
    "busy}",
    metric_kind::counter};
inline constexpr metric_family build_info{"moonmq_build_info", "Always 1 {version}", metric_kind::gauge};

}  // namespace moonmq::cluster::metrics
