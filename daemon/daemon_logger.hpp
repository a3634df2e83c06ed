// moonmqd's log lines on stderr, through spdlog (one sink, flushed at every line):
//   text: "2026-11-29T16:40:00.123Z info reassigner: move orders-0 b1->b2: step copy"
//   json: {"time":"2026-11-29T16:40:00.123Z","level":"info","component":"reassigner","message":"..."}
// Lines below the configured level (Server.Logging.Level) are not written.
// Thread safety: log() may be called from any thread.
#pragma once

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "json/writer.hpp"
#include "moonmq/core/logger.hpp"

namespace moonmq::daemon {

/// The level a Server.Logging.Level names (validated by the settings loader); info for anything else.
inline log_level parse_log_level(const std::string& name) {
  if (name == "debug") return log_level::debug;
  if (name == "warn") return log_level::warn;
  if (name == "error") return log_level::error;
  return log_level::info;
}

class daemon_logger final : public logger {
 public:
  explicit daemon_logger(log_level least = log_level::info, bool json = false)
      : least_(least), json_(json), out_(std::make_shared<spdlog::logger>(
                                        "moonmqd", std::make_shared<spdlog::sinks::stderr_sink_mt>())) {
    const char* pattern = json ? R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ",%v})" : "%Y-%m-%dT%H:%M:%S.%eZ %v";
    out_->set_formatter(std::make_unique<spdlog::pattern_formatter>(pattern, spdlog::pattern_time_type::utc));
    out_->set_level(spdlog::level::trace);  // the filter is least_
    out_->flush_on(spdlog::level::trace);
  }

  void log(log_level level, std::string_view component, std::string_view message) override {
    if (level < least_) return;
    if (json_) {
      // The members after "time", as one escaped JSON fragment (the pattern writes the braces).
      std::string doc = json::object([&](json::writer& w) {
        json::put(w, "level", log_level_name(level));
        json::put(w, "component", std::string(component));
        json::put(w, "message", std::string(message));
      });
      out_->log(spdlog::level::info, std::string_view(doc).substr(1, doc.size() - 2));
    } else {
      out_->log(spdlog::level::info, "{} {}: {}", log_level_name(level), component, message);
    }
  }

 private:
  log_level least_;
  bool json_;
  std::shared_ptr<spdlog::logger> out_;
};

}  // namespace moonmq::daemon
