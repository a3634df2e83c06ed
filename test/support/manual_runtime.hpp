// A runtime (core/runtime.hpp) whose time moves only when the test or the simulation moves it: advance_to() runs,
// in time order, every tick and callback due by then, each with the clock at its own time (ties in the order they
// were scheduled), on the calling thread. Both clocks read `now`. A seed replays, whatever the machine's speed.
// Thread safety: one thread, the one that advances it. Call drop_pending() (or destroy it) before the executors its
// sleepers resume on go: a waiting coroutine's handler, destroyed, hands its frame back to its executor.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "moonmq/core/runtime.hpp"

namespace moonmq::test {

class manual_runtime final : public runtime {
 public:
  time_ms now = 1'000'000;

  time_ms steady_ms() override { return now; }
  time_ms wall_ms() override { return now; }

  std::unique_ptr<scheduled_job> every(std::chrono::milliseconds first, std::chrono::milliseconds period,
                                       std::function<void()> tick) override {
    auto j = std::make_shared<job_state>(job_state{period.count(), std::move(tick)});
    queue_tick(j, now + first.count());
    return std::make_unique<job>(*this, j);
  }
  using runtime::every;

  void block_for(std::chrono::milliseconds delay) override { now += delay.count(); }

  void after(std::chrono::milliseconds delay, std::function<void()> fn) override {
    due_.emplace(key{now + delay.count(), seq_++}, std::move(fn));
  }

  /// When the next tick or callback is due; nullopt: nothing is scheduled.
  std::optional<time_ms> next_due() const {
    if (due_.empty()) return std::nullopt;
    return due_.begin()->first.at;
  }

  /// Runs everything due by `until` (what those schedule meanwhile included), then leaves the clock at `until`.
  void advance_to(time_ms until) {
    while (!due_.empty() && due_.begin()->first.at <= until) {
      auto first = due_.begin();
      now = std::max(now, first->first.at);
      auto fn = std::move(first->second);
      due_.erase(first);
      fn();
    }
    now = std::max(now, until);
  }
  void advance(std::chrono::milliseconds by) { advance_to(now + by.count()); }

  /// Forgets everything scheduled, uncalled.
  void drop_pending() { due_.clear(); }

 private:
  struct key {
    time_ms at;
    std::uint64_t seq;
    bool operator<(const key& o) const { return at != o.at ? at < o.at : seq < o.seq; }
  };
  struct job_state {
    std::int64_t period;
    std::function<void()> tick;
    bool stopped = false;
    std::uint64_t generation = 0;  ///< a wake queues a tick now and voids the one queued before
  };

  void queue_tick(const std::shared_ptr<job_state>& j, time_ms at) {
    const std::uint64_t generation = ++j->generation;
    due_.emplace(key{at, seq_++}, [this, j, generation] {
      if (j->stopped || j->generation != generation) return;
      j->tick();
      if (!j->stopped && j->generation == generation) queue_tick(j, now + j->period);
    });
  }

  class job final : public scheduled_job {
   public:
    job(manual_runtime& rt, std::shared_ptr<job_state> s) : rt_(rt), s_(std::move(s)) {}
    ~job() override { stop(); }
    void wake() override {
      if (!s_->stopped) rt_.queue_tick(s_, rt_.now);
    }
    void stop() override { s_->stopped = true; }

   private:
    manual_runtime& rt_;
    std::shared_ptr<job_state> s_;
  };

  std::map<key, std::function<void()>> due_;
  std::uint64_t seq_ = 0;
};

/// A runtime whose steady clock is `steady` and which leaves the rest to `base`: a component whose decisions follow a
/// clock the test moves while everything it waits on runs in real time (the balance loop's tests).
class steady_override final : public runtime {
 public:
  steady_override(runtime& base, std::function<time_ms()> steady) : base_(base), steady_(std::move(steady)) {}
  time_ms steady_ms() override { return steady_(); }
  time_ms wall_ms() override { return base_.wall_ms(); }
  std::unique_ptr<scheduled_job> every(std::chrono::milliseconds first, std::chrono::milliseconds period,
                                       std::function<void()> tick) override {
    return base_.every(first, period, std::move(tick));
  }
  using runtime::every;
  void block_for(std::chrono::milliseconds delay) override { base_.block_for(delay); }
  void after(std::chrono::milliseconds delay, std::function<void()> fn) override {
    base_.after(delay, std::move(fn));
  }

 private:
  runtime& base_;
  std::function<time_ms()> steady_;
};

}  // namespace moonmq::test
