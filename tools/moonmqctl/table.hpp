// moonmqctl's human output: aligned text tables, byte counts and durations a person reads at a glance.
// Thread safety: plain values.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace moonmq::ctl {

class table {
 public:
  explicit table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.size() == 1; }

  std::string render() const {
    std::vector<std::size_t> width;
    for (const auto& r : rows_)
      for (std::size_t i = 0; i < r.size(); ++i) {
        if (width.size() <= i) width.push_back(0);
        width[i] = std::max(width[i], r[i].size());
      }
    std::string out;
    for (const auto& r : rows_) {
      std::string line;
      for (std::size_t i = 0; i < r.size(); ++i) {
        line += r[i];
        if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
      }
      out += line + "\n";
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

/// 1536 -> "1.5 KiB".
inline std::string human_bytes(double n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (n >= 1024 && u < 4) {
    n /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", n, units[u]);
  return buf;
}

/// 75 -> "1m15s"; negative: "?".
inline std::string human_seconds(double s) {
  if (s < 0) return "?";
  const auto t = static_cast<long>(s + 0.5);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
  else if (t >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", t);
  return buf;
}

/// "[#########-----------]  45%".
inline std::string progress_bar(double done, double total, int width = 20) {
  const double f = total > 0 ? std::clamp(done / total, 0.0, 1.0) : 0.0;
  const int filled = static_cast<int>(f * width + 0.5);
  char pct[8];
  std::snprintf(pct, sizeof pct, "%3d%%", static_cast<int>(f * 100 + 0.5));
  return "[" + std::string(static_cast<std::size_t>(filled), '#') +
         std::string(static_cast<std::size_t>(width - filled), '-') + "] " + pct;
}

}  // namespace moonmq::ctl
