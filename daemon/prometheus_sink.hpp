// moonmqd's metrics through prometheus-cpp: the library's metrics_sink seam (metric_family constants, label pairs)
// bridged onto one prometheus::Registry, rendered by prometheus-cpp's text serializer for GET /metrics.
// Thread safety: all members may be called from any thread.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "moonmq/core/metrics_sink.hpp"

namespace moonmq::daemon {

class prometheus_sink final : public metrics_sink {
 public:
  using metrics_sink::add;
  using metrics_sink::observe;
  using metrics_sink::set;
  void add(const metric_family& f, const metric_labels& labels, double delta) override;
  void set(const metric_family& f, const metric_labels& labels, double value) override;
  void observe(const metric_family& f, const metric_labels& labels, double value) override;
  void clear(const metric_family& f) override;

  /// Every series, in the Prometheus text exposition format.
  std::string render() const;

 private:
  struct family {
    metric_kind kind;
    prometheus::Family<prometheus::Counter>* counters = nullptr;
    prometheus::Family<prometheus::Gauge>* gauges = nullptr;
    prometheus::Family<prometheus::Histogram>* histograms = nullptr;
    std::vector<double> buckets;
  };

  /// The family `f` names, registered on first use. REQUIRES: mu_ held.
  family& family_of(const metric_family& f);

  mutable std::mutex mu_;
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  std::map<std::string, family, std::less<>> families_;
};

}  // namespace moonmq::daemon
