// The library's logging seam. An embedding broker passes its own `logger`; the daemon passes one that writes
// structured lines. Nothing in the library logs through a global.
// Thread safety: implementations must accept concurrent calls.
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <string_view>

namespace moonmq {

enum class log_level { debug, info, warn, error };

constexpr const char* log_level_name(log_level l) noexcept {
  switch (l) {
    case log_level::debug:
      return "debug";
    case log_level::info:
      return "info";
    case log_level::warn:
      return "warn";
    case log_level::error:
      return "error";
  }
  return "?";
}

class logger {
 public:
  virtual ~logger() = default;
  /// One event. `component` names the part of the library ("partition_log", "reassigner", ...).
  virtual void log(log_level level, std::string_view component, std::string_view message) = 0;

  void info(std::string_view c, std::string_view m) { log(log_level::info, c, m); }
  void warn(std::string_view c, std::string_view m) { log(log_level::warn, c, m); }
  void error(std::string_view c, std::string_view m) { log(log_level::error, c, m); }
};

/// Discards everything.
class null_logger final : public logger {
 public:
  void log(log_level, std::string_view, std::string_view) override {}
};

/// Writes "level component: message" lines to stderr.
class stderr_logger final : public logger {
 public:
  void log(log_level level, std::string_view component, std::string_view message) override {
    std::lock_guard lock(mu_);
    std::fprintf(stderr, "%s %.*s: %.*s\n", log_level_name(level), static_cast<int>(component.size()), component.data(),
                 static_cast<int>(message.size()), message.data());
  }

 private:
  std::mutex mu_;
};

/// A shared do-nothing logger for defaults.
inline std::shared_ptr<logger> default_logger() {
  static auto l = std::make_shared<null_logger>();
  return l;
}

}  // namespace moonmq
