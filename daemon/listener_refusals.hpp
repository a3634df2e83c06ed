// What moonmqd's two listeners turned away before any route saw it: counted per reason (the cluster endpoint in
// moonmq_cluster_listener_refusals_total, the client API in moonmq_http_refusals_total) and logged at most one line
// per listener and reason every 10 s (a client retrying with a wrong certificate, or a flood of connections that
// never authenticate, would otherwise fill the log).
// Thread safety: refused() is called on listener threads, concurrently.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "moonmq/core/logger.hpp"
#include "moonmq/core/metrics_sink.hpp"
#include "moonmq/transport/http_transport.hpp"

namespace moonmq::daemon {

enum class listener { cluster, client };

class listener_refusals {
 public:
  listener_refusals(logger& log, metrics_sink& metrics) : log_(log), metrics_(metrics) {}

  void refused(listener which, transport::refusal_reason why, const std::string& client, const std::string& detail);

 private:
  logger& log_;
  metrics_sink& metrics_;
  std::mutex mu_;
  std::map<std::pair<listener, transport::refusal_reason>, std::pair<std::chrono::steady_clock::time_point, std::size_t>>
      last_;  ///< when each was last logged, and how many were left out since
};

}  // namespace moonmq::daemon
