// The threads that serve moonmqd's client connections. cpp-httplib serves each connection on one worker for as long as
// the connection stays open (a keep-alive client holds its worker while it is idle, up to the keep-alive timeout),
// and its own pool has a fixed eight workers: a ninth client waited up to 30 s behind eight idle ones. These workers
// are started as connections need them, up to Server.Limits.MaxClientConnections; a connection past that waits for
// a worker to finish one. A worker idle for a minute ends.
// Thread safety: every method may be called concurrently.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace moonmq::daemon {

class client_workers final : public httplib::TaskQueue {
 public:
  explicit client_workers(std::size_t max_workers) : max_(max_workers < 1 ? 1 : max_workers) {}
  ~client_workers() override { shutdown(); }
  client_workers(const client_workers&) = delete;
  client_workers& operator=(const client_workers&) = delete;

  void enqueue(std::function<void()> fn) override {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(fn));
    // A worker for every connection waiting beyond those the idle workers will take, up to the cap.
    if (jobs_.size() > idle_ && running_ < max_) {
      try {
        threads_.emplace_back([this] { work(); });
        ++running_;
      } catch (const std::system_error&) {
        // No thread now (the process is at its limit): the connection waits for a worker that exists to finish one.
        cv_.notify_one();
      }
    } else {
      cv_.notify_one();
    }
  }

  void shutdown() override {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      threads.swap(threads_);
    }
    cv_.notify_all();
    for (auto& t : threads) t.join();
    std::lock_guard lock(mu_);
    for (auto& t : ended_) t.join();
    ended_.clear();
  }

 private:
  static constexpr auto idle_limit = std::chrono::seconds(60);

  void work() {
    std::unique_lock lock(mu_);
    for (;;) {
      ++idle_;
      const bool woke = cv_.wait_for(lock, idle_limit, [&] { return !jobs_.empty() || stopping_; });
      --idle_;
      if (jobs_.empty()) {
        if (stopping_ || !woke) break;
        continue;
      }
      auto fn = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      fn();  // serves the connection until it closes
      lock.lock();
    }
    --running_;
    // Hand this thread to whoever joins next: a thread cannot join itself.
    for (auto it = threads_.begin(); it != threads_.end(); ++it)
      if (it->get_id() == std::this_thread::get_id()) {
        for (auto& t : ended_) t.join();  // ended before this one, so their joins are immediate
        ended_.clear();
        ended_.push_back(std::move(*it));
        threads_.erase(it);
        break;
      }
  }

  const std::size_t max_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  std::vector<std::thread> ended_;  ///< threads whose work ended, still to be joined
  std::size_t running_ = 0;
  std::size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace moonmq::daemon
