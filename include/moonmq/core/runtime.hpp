// The broker's runtime seam (what leveldb calls its Env and Kafka its Time): the two clocks, jobs run on a schedule,
// and a callback after a delay. moonmqd runs on the system runtime (core/system_runtime.hpp): the real clocks, timers
// on the broker's reactor, ticks on a small pool of their own. Tests and the simulation pass a manual runtime
// (test/support/manual_runtime.hpp) whose time moves only when they move it, so that the schedule moonmqd runs is
// the schedule they run, and a seed replays. Waiting in a coroutine: core/runtime_sleep.hpp.
// Thread safety: an implementation's functions may be called from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "moonmq/core/clock.hpp"

namespace moonmq {

/// A job run on a schedule (runtime::every). Destroying it stops it.
class scheduled_job {
 public:
  virtual ~scheduled_job() = default;
  /// The next tick runs now, or as soon as the one under way ends (a drain that was just asked for).
  virtual void wake() = 0;
  /// No tick starts after this returns, and one under way has ended (called from the job's own tick: that tick
  /// is the last, and it is not waited for).
  virtual void stop() = 0;
};

class runtime {
 public:
  virtual ~runtime() = default;
  /// Steady milliseconds: deadlines, sessions and ages (never step back).
  virtual time_ms steady_ms() = 0;
  /// Wall milliseconds: what outlives the process or is shown to people.
  virtual time_ms wall_ms() = 0;
  /// Runs `tick` every `period`, the first after `first`. A job's ticks never overlap, and the next is due a period
  /// after the last ended; a slow tick (a peer that does not answer within its timeout) delays its own job.
  virtual std::unique_ptr<scheduled_job> every(std::chrono::milliseconds first, std::chrono::milliseconds period,
                                               std::function<void()> tick) = 0;
  std::unique_ptr<scheduled_job> every(std::chrono::milliseconds period, std::function<void()> tick) {
    return every(period, period, std::move(tick));
  }
  /// Blocks the calling thread for `delay` of this runtime's time (a listener's worker waiting out a handover). A
  /// manual runtime moves its clock on and runs nothing meanwhile: in a simulation nothing else runs while one waits.
  virtual void block_for(std::chrono::milliseconds delay) = 0;
  /// Calls `fn` once, `delay` from now, where the runtime runs its timers (moonmqd: the broker's reactor thread).
  /// `fn` must not block, and must hold what it touches (a timer of the system runtime fires on the reactor even
  /// after the runtime is gone; a manual runtime destroyed first drops it uncalled).
  virtual void after(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
};

}  // namespace moonmq
