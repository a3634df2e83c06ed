#include <catch2/catch.hpp>

#include <array>

#include "moonmq/core/metrics_registry.hpp"

using namespace moonmq;

namespace {
constexpr std::array<double, 2> bounds{0.1, 1};
constexpr metric_family requests{"demo_requests_total", "Requests {route}", metric_kind::counter};
constexpr metric_family temperature{"demo_temperature", "A gauge", metric_kind::gauge};
constexpr metric_family latency{"demo_latency_seconds", "Latency", metric_kind::histogram, bounds};
}  // namespace

TEST_CASE("metrics registry renders counters, gauges and histograms in the text format", "[metrics]") {
  metrics_registry r;
  r.add(requests, {{"route", "/a"}}, 2);
  r.add(requests, {{"route", "/a"}}, 1);
  r.add(requests, {{"route", "/b"}}, 0);  // exists at zero
  r.set(temperature, -3.5);
  r.observe(latency, 0.05);
  r.observe(latency, 0.5);
  r.observe(latency, 7);
  const std::string text = r.render();
  CHECK(text ==
        "# HELP demo_latency_seconds Latency\n"
        "# TYPE demo_latency_seconds histogram\n"
        "demo_latency_seconds_bucket{le=\"0.1\"} 1\n"
        "demo_latency_seconds_bucket{le=\"1\"} 2\n"
        "demo_latency_seconds_bucket{le=\"+Inf\"} 3\n"
        "demo_latency_seconds_sum 7.55\n"
        "demo_latency_seconds_count 3\n"
        "# HELP demo_requests_total Requests {route}\n"
        "# TYPE demo_requests_total counter\n"
        "demo_requests_total{route=\"/a\"} 3\n"
        "demo_requests_total{route=\"/b\"} 0\n"
        "# HELP demo_temperature A gauge\n"
        "# TYPE demo_temperature gauge\n"
        "demo_temperature -3.5\n");
  CHECK(r.value("demo_requests_total", {{"route", "/a"}}) == 3);
  CHECK(r.value("demo_requests_total", {{"route", "/c"}}) == 0);
}

TEST_CASE("metrics registry escapes label values and help text, and clear drops a family's series", "[metrics]") {
  metrics_registry r;
  constexpr metric_family odd{"demo_odd", "line one\nback\\slash", metric_kind::gauge};
  r.set(odd, {{"name", "a\"b\\c\nd"}}, 1);
  CHECK(r.render() ==
        "# HELP demo_odd line one\\nback\\\\slash\n"
        "# TYPE demo_odd gauge\n"
        "demo_odd{name=\"a\\\"b\\\\c\\nd\"} 1\n");
  r.clear(odd);
  CHECK(r.render() == "# HELP demo_odd line one\\nback\\\\slash\n# TYPE demo_odd gauge\n");
}
