// The runtime moonmqd runs on (core/runtime.hpp): the system's clocks; timers on the broker's reactor; ticks on a
// pool of `tick_threads` threads of its own, started at the first job, so that a tick that waits on a peer holds
// neither the reactor nor the listeners' workers. moonmqd runs five jobs on the default eight threads, so each has a
// thread when its tick is due and a slow tick delays only its own job; with more jobs than threads, a tick would wait
// for a thread while every one is held by a slow tick.
// Thread safety: all functions from any thread. Stop every job before the runtime goes; the reactor must outlive it
// (its `after` timers are on the reactor and fire there, the runtime gone or not).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>

#include "moonmq/core/runtime.hpp"

namespace asio {
class io_context;
class thread_pool;
}  // namespace asio

namespace moonmq {

class system_runtime final : public runtime {
 public:
  explicit system_runtime(asio::io_context& reactor, std::size_t tick_threads = 8);
  ~system_runtime() override;
  system_runtime(const system_runtime&) = delete;
  system_runtime& operator=(const system_runtime&) = delete;

  time_ms steady_ms() override { return steady_now_ms(); }
  time_ms wall_ms() override { return wall_now_ms(); }
  std::unique_ptr<scheduled_job> every(std::chrono::milliseconds first, std::chrono::milliseconds period,
                                       std::function<void()> tick) override;
  using runtime::every;
  void block_for(std::chrono::milliseconds delay) override;
  void after(std::chrono::milliseconds delay, std::function<void()> fn) override;

 private:
  asio::thread_pool& ticks();

  asio::io_context& reactor_;
  const std::size_t tick_threads_;
  std::mutex mu_;
  std::unique_ptr<asio::thread_pool> ticks_;  ///< started at the first job
};

}  // namespace moonmq
