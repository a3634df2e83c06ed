#include "moonmq/core/metrics_registry.hpp"

#include <fmt/format.h>

#include <cmath>

namespace moonmq {

namespace {

/// A label value or help text escaped for the text format (`\\`, `\"` in label values only, `\n`).
std::string escaped(std::string_view s, bool quote_marks) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && quote_marks)
      out += "\\\"";
    else
      out += c;
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

/// `{a="x",b="y"}` with an optional extra label (the histogram's `le`); empty when there are no labels.
std::string label_text(const metric_labels& labels, const char* extra_name = nullptr, const std::string& extra = {}) {
  if (labels.empty() && !extra_name) return {};
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ",";
    first = false;
    out += k + "=\"" + escaped(v, true) + "\"";
  }
  if (extra_name) out += std::string(first ? "" : ",") + extra_name + "=\"" + extra + "\"";
  return out + "}";
}

const char* kind_name(metric_kind k) {
  switch (k) {
    case metric_kind::counter:
      return "counter";
    case metric_kind::gauge:
      return "gauge";
    case metric_kind::histogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

metrics_registry::family_state& metrics_registry::family(const metric_family& f) {
  auto it = families_.find(f.name);
  if (it == families_.end()) {
    family_state s;
    s.help = std::string(f.help);
    s.kind = f.kind;
    s.buckets.assign(f.buckets.begin(), f.buckets.end());
    it = families_.emplace(std::string(f.name), std::move(s)).first;
  }
  return it->second;
}

void metrics_registry::add(const metric_family& f, const metric_labels& labels, double delta) {
  std::lock_guard lock(mu_);
  if (delta > 0) family(f).by_labels[labels].value += delta;
  else family(f).by_labels.try_emplace(labels);  // a counter that exists at zero
}

void metrics_registry::set(const metric_family& f, const metric_labels& labels, double value) {
  std::lock_guard lock(mu_);
  family(f).by_labels[labels].value = value;
}

void metrics_registry::observe(const metric_family& f, const metric_labels& labels, double value) {
  std::lock_guard lock(mu_);
  family_state& fam = family(f);
  series& s = fam.by_labels[labels];
  if (s.counts.empty()) s.counts.assign(fam.buckets.size() + 1, 0);
  std::size_t i = 0;
  while (i < fam.buckets.size() && value > fam.buckets[i]) ++i;
  ++s.counts[i];
  s.sum += value;
  ++s.count;
}

void metrics_registry::clear(const metric_family& f) {
  std::lock_guard lock(mu_);
  family(f).by_labels.clear();
}

double metrics_registry::value(std::string_view name, const metric_labels& labels) const {
  std::lock_guard lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return 0;
  auto s = it->second.by_labels.find(labels);
  return s == it->second.by_labels.end() ? 0 : s->second.value;
}

std::string metrics_registry::render() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, fam] : families_) {
    out += "# HELP " + name + " " + escaped(fam.help, false) + "\n";
    out += "# TYPE " + name + " " + kind_name(fam.kind) + "\n";
    for (const auto& [labels, s] : fam.by_labels) {
      if (fam.kind != metric_kind::histogram) {
        out += name + label_text(labels) + " " + number(s.value) + "\n";
        continue;
      }
      std::uint64_t cumulative = 0;
      for (std::size_t i = 0; i <= fam.buckets.size(); ++i) {
        cumulative += s.counts.empty() ? 0 : s.counts[i];
        std::string le = i < fam.buckets.size() ? number(fam.buckets[i]) : "+Inf";
        out += name + "_bucket" + label_text(labels, "le", le) + " " + std::to_string(cumulative) + "\n";
      }
      out += name + "_sum" + label_text(labels) + " " + number(s.sum) + "\n";
      out += name + "_count" + label_text(labels) + " " + std::to_string(s.count) + "\n";
    }
  }
  return out;
}

}  // namespace moonmq
