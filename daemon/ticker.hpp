// A job the daemon runs on a schedule: `tick` every `period` on a thread of its own (the first after `first`), from
// construction until stop() or destruction, which wait for a tick under way. wake() runs the next tick now (a drain
// that was just asked for). Each job has its own, so that a slow tick (a peer that does not answer within its
// timeout) delays only that job: the groups' expiry never waits for a drain's peer calls.
// Thread safety: wake() and stop() may be called from any thread, but not from `tick`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace moonmq::daemon {

class ticker {
 public:
  ticker(std::chrono::milliseconds period, std::function<void()> tick)
      : ticker(period, period, std::move(tick)) {}
  ticker(std::chrono::milliseconds first, std::chrono::milliseconds period, std::function<void()> tick)
      : thread_([this, first, period, tick = std::move(tick)] {
          std::unique_lock lock(mu_);
          for (auto wait = first; !stopping_; wait = period) {
            wake_.wait_for(lock, wait, [this] { return stopping_ || woken_; });
            if (stopping_) break;
            woken_ = false;
            lock.unlock();
            tick();
            lock.lock();
          }
        }) {}
  ticker(const ticker&) = delete;
  ticker& operator=(const ticker&) = delete;
  ~ticker() { stop(); }

  void wake() {
    {
      std::lock_guard lock(mu_);
      woken_ = true;
    }
    wake_.notify_all();
  }

  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool woken_ = false;
  std::thread thread_;  ///< last: it starts once the members it uses exist
};

}  // namespace moonmq::daemon
