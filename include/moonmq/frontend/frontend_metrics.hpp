// What the client front ends count, whichever protocol carried the request: records and bytes produced and fetched,
// per topic (key and value bytes, so that the figures compare across protocols).
#pragma once

#include "moonmq/core/metrics_sink.hpp"

namespace moonmq::frontend::metrics {

inline constexpr metric_family produced_records{"moonmq_broker_produced_records_total",
                                                "Records appended by produce requests answered here {topic}",
                                                metric_kind::counter};
inline constexpr metric_family produced_bytes{"moonmq_broker_produced_bytes_total",
                                              "Key and value bytes of the records counted in produced_records {topic}",
                                              metric_kind::counter};
inline constexpr metric_family fetched_records{"moonmq_broker_fetched_records_total",
                                               "Records returned by fetches served here {topic}",
                                               metric_kind::counter};
inline constexpr metric_family fetched_bytes{"moonmq_broker_fetched_bytes_total",
                                             "Key and value bytes of the records counted in fetched_records {topic}",
                                             metric_kind::counter};

}  // namespace moonmq::frontend::metrics
