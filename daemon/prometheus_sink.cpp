#include "prometheus_sink.hpp"

#include <prometheus/text_serializer.h>

namespace moonmq::daemon {

namespace {
std::map<std::string, std::string> label_map(const metric_labels& labels) {
  return {labels.begin(), labels.end()};
}
}  // namespace

prometheus_sink::family& prometheus_sink::family_of(const metric_family& f) {
  if (auto it = families_.find(f.name); it != families_.end()) return it->second;
  family fam{f.kind};
  const std::string name(f.name), help(f.help);
  switch (f.kind) {
    case metric_kind::counter:
      fam.counters = &prometheus::BuildCounter().Name(name).Help(help).Register(*registry_);
      break;
    case metric_kind::gauge:
      fam.gauges = &prometheus::BuildGauge().Name(name).Help(help).Register(*registry_);
      break;
    case metric_kind::histogram:
      fam.histograms = &prometheus::BuildHistogram().Name(name).Help(help).Register(*registry_);
      fam.buckets.assign(f.buckets.begin(), f.buckets.end());
      break;
  }
  return families_.emplace(name, std::move(fam)).first->second;
}

void prometheus_sink::add(const metric_family& f, const metric_labels& labels, double delta) {
  std::lock_guard lock(mu_);
  auto& fam = family_of(f);
  if (fam.counters) fam.counters->Add(label_map(labels)).Increment(delta);
}

void prometheus_sink::set(const metric_family& f, const metric_labels& labels, double value) {
  std::lock_guard lock(mu_);
  auto& fam = family_of(f);
  if (fam.gauges) fam.gauges->Add(label_map(labels)).Set(value);
}

void prometheus_sink::observe(const metric_family& f, const metric_labels& labels, double value) {
  std::lock_guard lock(mu_);
  auto& fam = family_of(f);
  if (fam.histograms) fam.histograms->Add(label_map(labels), fam.buckets).Observe(value);
}

void prometheus_sink::clear(const metric_family& f) {
  std::lock_guard lock(mu_);
  auto it = families_.find(f.name);
  if (it == families_.end() || !it->second.gauges) return;
  // prometheus-cpp removes one series at a time: collect them first.
  std::vector<prometheus::Gauge*> all;
  for (const auto& m : it->second.gauges->Collect())
    for (const auto& series : m.metric) {
      std::map<std::string, std::string> labels;
      for (const auto& l : series.label) labels[l.name] = l.value;
      all.push_back(&it->second.gauges->Add(labels));
    }
  for (auto* g : all) it->second.gauges->Remove(g);
}

std::string prometheus_sink::render() const {
  std::lock_guard lock(mu_);
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace moonmq::daemon
