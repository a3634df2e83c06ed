// The metric families the Raft service reports through its `metrics_sink`.
// Thread safety: constants.
#pragma once

#include <array>

#include "moonmq/core/metrics_sink.hpp"

namespace moonmq::raft::metrics {

inline constexpr std::array<double, 10> append_seconds{0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1};

inline constexpr metric_family term{"moonmq_raft_term", "The current Raft term", metric_kind::gauge};
inline constexpr metric_family is_leader{"moonmq_raft_is_leader", "1 while this broker is the Raft leader",
                                         metric_kind::gauge};
inline constexpr metric_family commit_index{"moonmq_raft_commit_index", "Highest log index known committed",
                                            metric_kind::gauge};
inline constexpr metric_family applied_index{"moonmq_raft_applied_index", "Highest log index applied here",
                                             metric_kind::gauge};
inline constexpr metric_family elections{"moonmq_raft_elections_total", "Elections this broker won",
                                         metric_kind::counter};
inline constexpr metric_family append_latency{"moonmq_raft_append_latency_seconds",
                                              "Time to make a batch of log entries durable (write and fsync)",
                                              metric_kind::histogram, append_seconds};

}  // namespace moonmq::raft::metrics
