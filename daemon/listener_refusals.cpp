#include "listener_refusals.hpp"

#include "broker_metrics.hpp"
#include "moonmq/cluster/cluster_metrics.hpp"

namespace moonmq::daemon {

void listener_refusals::refused(listener which, transport::refusal_reason why, const std::string& client,
                                const std::string& detail) {
  metrics_.add(which == listener::cluster ? cluster::metrics::listener_refusals : metrics::client_refusals,
               {{"reason", transport::to_string(why)}}, 1);
  const auto now = std::chrono::steady_clock::now();
  std::size_t left_out = 0;
  {
    std::lock_guard lock(mu_);
    auto& [last, quiet] = last_[{which, why}];
    if (last.time_since_epoch().count() != 0 && now - last < std::chrono::seconds(10)) {
      ++quiet;
      return;
    }
    left_out = std::exchange(quiet, 0);
    last = now;
  }
  log_.warn("moonmqd", std::string(which == listener::cluster ? "cluster listener" : "client API") + " refused " +
                           client + " (" + transport::to_string(why) + "): " + detail +
                           (left_out ? "; and " + std::to_string(left_out) + " more like it since the last report"
                                     : std::string()));
}

}  // namespace moonmq::daemon
