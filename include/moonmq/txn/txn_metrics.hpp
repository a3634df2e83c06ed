// The metric families of transactions and producers (labels in braces), in one place.
// Thread safety: constants.
#pragma once

#include "moonmq/core/metrics_sink.hpp"

namespace moonmq::txn::metrics {

inline constexpr metric_family open{"moonmq_txn_open", "Transactions open or being completed on this coordinator",
                                    metric_kind::gauge};
inline constexpr metric_family committed{"moonmq_txn_committed_total", "Transactions committed by this coordinator",
                                         metric_kind::counter};
inline constexpr metric_family aborted{"moonmq_txn_aborted_total",
                                       "Transactions aborted by this coordinator {reason: client, timeout, fenced}",
                                       metric_kind::counter};
inline constexpr metric_family timeouts{"moonmq_txn_timeout_total",
                                        "Transactions this coordinator aborted for passing the timeout",
                                        metric_kind::counter};
inline constexpr metric_family producer_fenced{
    "moonmq_producer_fenced_total", "Produces, enrolments and transaction calls refused for a stale producer epoch",
    metric_kind::counter};
inline constexpr metric_family lso_lag{
    "moonmq_txn_lso_lag_bytes", "How far a partition's last stable offset trails its end, at its last fetch {topic, partition}",
    metric_kind::gauge};

}  // namespace moonmq::txn::metrics
