// moonmqd's log lines: "2026-11-29T16:40:00.123Z info reassigner: move orders-0 b1->b2: step copy", on stderr.
#pragma once

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "moonmq/core/logger.hpp"

namespace moonmq::daemon {

class daemon_logger final : public logger {
 public:
  void log(log_level level, std::string_view component, std::string_view message) override {
    auto now = std::chrono::system_clock::now();
    auto secs = std::chrono::system_clock::to_time_t(now);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char ts[32];
    std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    std::lock_guard lock(mu_);
    std::fprintf(stderr, "%s.%03lldZ %s %.*s: %.*s\n", ts, static_cast<long long>(ms), log_level_name(level),
                 static_cast<int>(component.size()), component.data(), static_cast<int>(message.size()),
                 message.data());
    std::fflush(stderr);
  }

 private:
  std::mutex mu_;
};

}  // namespace moonmq::daemon
