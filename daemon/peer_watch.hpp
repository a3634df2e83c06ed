// Says in the log when a configured peer cannot be resolved or reached, so that a typo in an address shows at start
// instead of when a move fails: every peer is checked a few seconds after start and then every `every`; a problem is
// logged when it appears, again every `repeat` while it lasts, and its end once.
// Thread safety: owns one thread; destroy before the view.
#pragma once

#include <netdb.h>

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "cluster_view.hpp"
#include "moonmq/core/logger.hpp"
#include "moonmq/core/runtime.hpp"

namespace moonmq::daemon {

class peer_watch {
 public:
  peer_watch(cluster_view& view, logger& log, runtime& rt, std::chrono::seconds every = std::chrono::seconds(30),
             std::chrono::seconds repeat = std::chrono::minutes(5))
      : view_(view), log_(log), rt_(rt), every_(every), repeat_(repeat) {
    if (view_.peers().empty()) return;
    // The first check after 2 s: peers started at the same time come up first.
    job_ = rt.every(std::chrono::seconds(2), every_, [this] { check(); });
  }

  ~peer_watch() {
    if (job_) job_->stop();
  }

 private:
  struct trouble {
    std::string what;
    time_ms logged = 0;  ///< steady, on the runtime
  };

  void check() {
    auto answers = view_.ask_peers(transport::get_request("/cluster/moves"));
    for (std::size_t i = 0; i < answers.size(); ++i) {
      const auto& p = view_.peers()[i];
      const std::string where = p.host + ":" + std::to_string(p.port);
      std::string what;
      addrinfo hints{};
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* found = nullptr;
      if (int rc = ::getaddrinfo(p.host.c_str(), nullptr, &hints, &found); rc != 0)
        what = "peer " + p.id + "'s address " + where + " cannot be resolved (" + ::gai_strerror(rc) +
               "): check Server.Cluster.Peers";
      if (found) ::freeaddrinfo(found);
      const auto& r = answers[i].response;
      if (what.empty() && r.status == 0)
        what = "peer " + p.id + " at " + where + " does not answer: " + r.body;
      else if (what.empty() && (r.status == 401 || r.status == 400))
        what = "peer " + p.id + " at " + where + " refuses this broker (HTTP " + std::to_string(r.status) +
               "): " + r.body;
      const time_ms now = rt_.steady_ms();
      auto it = troubles_.find(p.id);
      if (what.empty()) {
        if (it != troubles_.end()) {
          log_.info("peers", "peer " + p.id + " at " + where + " answers again");
          troubles_.erase(it);
        }
        continue;
      }
      if (it == troubles_.end() || it->second.what != what || now - it->second.logged >= std::chrono::milliseconds(repeat_).count()) {
        log_.warn("peers", what);
        troubles_[p.id] = {what, now};
      }
    }
  }

  cluster_view& view_;
  logger& log_;
  runtime& rt_;
  std::chrono::seconds every_, repeat_;
  std::map<std::string, trouble> troubles_;  ///< the job's only
  std::unique_ptr<scheduled_job> job_;       ///< last: stopped before what its ticks use goes
};

}  // namespace moonmq::daemon
