// A `metrics_sink` that keeps every series in memory and renders them in the Prometheus text exposition format
// (version 0.0.4): one `# HELP` and `# TYPE` per family, families and series in name order, label values escaped,
// histograms as cumulative `_bucket{le=..}` series with `_sum` and `_count`. What the daemon serves on GET /metrics.
// Thread safety: all members may be called concurrently.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "moonmq/core/metrics_sink.hpp"

namespace moonmq {

class metrics_registry final : public metrics_sink {
 public:
  using metrics_sink::add;
  using metrics_sink::observe;
  using metrics_sink::set;

  void add(const metric_family& f, const metric_labels& labels, double delta) override;
  void set(const metric_family& f, const metric_labels& labels, double value) override;
  void observe(const metric_family& f, const metric_labels& labels, double value) override;
  void clear(const metric_family& f) override;

  /// Every family that has been touched, in the text format.
  std::string render() const;

  /// The current value of a counter or gauge series (0 when absent): for tests and status pages.
  double value(std::string_view family, const metric_labels& labels = {}) const;

 private:
  struct series {
    double value = 0;                  // counter or gauge
    std::vector<std::uint64_t> counts;  // histogram: per bucket (not cumulative), +Inf last
    double sum = 0;
    std::uint64_t count = 0;
  };
  struct family_state {
    std::string help;
    metric_kind kind = metric_kind::gauge;
    std::vector<double> buckets;
    std::map<metric_labels, series> by_labels;
  };

  family_state& family(const metric_family& f);

  mutable std::mutex mu_;
  std::map<std::string, family_state, std::less<>> families_;
};

}  // namespace moonmq
