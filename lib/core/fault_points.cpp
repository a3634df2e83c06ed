#include "moonmq/core/fault_points.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

namespace moonmq::faults {

namespace {

enum class action { none, crash, pause, error };

struct point {
  action what = action::none;
  std::uint32_t pause_ms = 0;
  std::uint64_t only_hit = 0;  ///< 0: every hit
  std::atomic<std::uint64_t> hits{0};
};

std::array<point, names.size()> points;
std::atomic<bool> any{false};  ///< whether some point is set: the fast path of hit()

std::size_t index_of(std::string_view name) {
  return static_cast<std::size_t>(std::find(names.begin(), names.end(), name) - names.begin());
}

bool parse_number(std::string_view text, std::uint64_t& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

struct parsed {
  std::size_t index = 0;
  action what = action::none;
  std::uint32_t pause_ms = 0;
  std::uint64_t only_hit = 0;
};

result<parsed> parse_one(std::string_view item) {
  const auto eq = item.find('=');
  if (eq == std::string_view::npos)
    return error{errc::invalid_argument, "fault '" + std::string(item) + "': expected NAME=crash|pause=MS|error[@N]"};
  parsed p;
  const std::string_view name = item.substr(0, eq);
  p.index = index_of(name);
  if (p.index == names.size())
    return error{errc::invalid_argument, "unknown fault point '" + std::string(name) + "' (docs/fault-points.md lists them)"};
  std::string_view act = item.substr(eq + 1);
  if (const auto at = act.rfind('@'); at != std::string_view::npos) {
    if (!parse_number(act.substr(at + 1), p.only_hit) || p.only_hit == 0)
      return error{errc::invalid_argument, "fault '" + std::string(item) + "': @N needs a count from 1"};
    act = act.substr(0, at);
  }
  if (act == "crash") {
    p.what = action::crash;
  } else if (act == "error") {
    p.what = action::error;
  } else if (act.substr(0, 6) == "pause=") {
    std::uint64_t ms = 0;
    if (!parse_number(act.substr(6), ms) || ms > 3'600'000)
      return error{errc::invalid_argument, "fault '" + std::string(item) + "': pause=MS takes 0 to 3600000"};
    p.what = action::pause;
    p.pause_ms = static_cast<std::uint32_t>(ms);
  } else {
    return error{errc::invalid_argument,
                 "fault '" + std::string(item) + "': the action is crash, pause=MS or error"};
  }
  return p;
}

}  // namespace

bool compiled_in() noexcept {
#ifdef MOONMQ_FAULT_POINTS
  return true;
#else
  return false;
#endif
}

status configure(std::string_view spec) {
  std::vector<parsed> all;
  while (!spec.empty()) {
    const auto comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    if (item.empty()) continue;
    auto p = parse_one(item);
    if (!p) return p.err();
    all.push_back(*p);
  }
  if (!all.empty() && !compiled_in())
    return {errc::invalid_argument, "this build has no fault points (configure with -DMOONMQ_FAULT_POINTS=ON)"};
  clear();
  for (const auto& p : all) {
    points[p.index].what = p.what;
    points[p.index].pause_ms = p.pause_ms;
    points[p.index].only_hit = p.only_hit;
  }
  any.store(!all.empty(), std::memory_order_release);
  return {};
}

status configure_from_env() {
  const char* spec = std::getenv("MOONMQ_FAULTS");
  if (!spec) return {};
  auto s = configure(spec);
  if (!s) return {s.code(), "MOONMQ_FAULTS: " + s.message()};
  return s;
}

void clear() {
  any.store(false, std::memory_order_release);
  for (auto& p : points) {
    p.what = action::none;
    p.pause_ms = 0;
    p.only_hit = 0;
    p.hits.store(0, std::memory_order_relaxed);
  }
}

status hit(std::string_view name) {
  if (!any.load(std::memory_order_acquire)) return {};
  const std::size_t i = index_of(name);
  if (i == names.size()) return {errc::internal, "no fault point named '" + std::string(name) + "'"};
  point& p = points[i];
  const std::uint64_t n = p.hits.fetch_add(1, std::memory_order_relaxed) + 1;
  if (p.what == action::none || (p.only_hit != 0 && n != p.only_hit)) return {};
  switch (p.what) {
    case action::crash:
      ::kill(::getpid(), SIGKILL);
      std::abort();  // not reached
    case action::pause:
      std::this_thread::sleep_for(std::chrono::milliseconds(p.pause_ms));
      return {};
    case action::error:
      return {errc::io_error, "fault point " + std::string(name) + " failed on purpose"};
    case action::none:
      break;
  }
  return {};
}

std::uint64_t hits(std::string_view name) {
  const std::size_t i = index_of(name);
  return i == names.size() ? 0 : points[i].hits.load(std::memory_order_relaxed);
}

}  // namespace moonmq::faults
