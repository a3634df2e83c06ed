// The library's counting seam. The cluster layer reports counters, gauges and histogram observations through a
// `metrics_sink`; an embedding broker passes its own (bridging to whatever it exposes), the daemon passes a
// `metrics_registry` that renders the Prometheus text format. Nothing in the library counts through a global.
//
// Every family is described once, by a `metric_family` constant (name in base units, `_total` for counters, help
// text, kind); the sink keys its series by the family's name and the label values.
// Thread safety: implementations must accept concurrent calls.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace moonmq {

enum class metric_kind { counter, gauge, histogram };

struct metric_family {
  std::string_view name;
  std::string_view help;
  metric_kind kind;
  std::span<const double> buckets = {};  ///< histogram upper bounds, ascending (the +Inf bucket is implied)
};

/// Label name/value pairs of one series, in the family's order.
using metric_labels = std::vector<std::pair<std::string, std::string>>;

class metrics_sink {
 public:
  virtual ~metrics_sink() = default;
  /// Adds `delta` (>= 0) to a counter.
  virtual void add(const metric_family& f, const metric_labels& labels, double delta) = 0;
  /// Sets a gauge.
  virtual void set(const metric_family& f, const metric_labels& labels, double value) = 0;
  /// Records one observation of a histogram.
  virtual void observe(const metric_family& f, const metric_labels& labels, double value) = 0;
  /// Drops every series of a gauge family (before re-setting the series that still exist, e.g. per broker).
  virtual void clear(const metric_family& f) = 0;

  void add(const metric_family& f, double delta = 1) { add(f, {}, delta); }
  void set(const metric_family& f, double value) { set(f, {}, value); }
  void observe(const metric_family& f, double value) { observe(f, {}, value); }
};

/// Discards everything.
class null_metrics_sink final : public metrics_sink {
 public:
  void add(const metric_family&, const metric_labels&, double) override {}
  void set(const metric_family&, const metric_labels&, double) override {}
  void observe(const metric_family&, const metric_labels&, double) override {}
  void clear(const metric_family&) override {}
};

/// A sink for code that was given none.
inline metrics_sink& no_metrics() {
  static null_metrics_sink sink;
  return sink;
}

}  // namespace moonmq
