// The runtime seam: the system runtime's jobs tick every period, at once when woken, never after stop and never two
// at a time; the manual runtime runs what is due in time order on the clock it is moved to, and a coroutine's
// sleep_on waits for that clock.
#include <catch2/catch.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "moonmq/core/runtime_sleep.hpp"
#include "moonmq/core/system_runtime.hpp"
#include "support/eventually.hpp"
#include "support/manual_runtime.hpp"

using namespace std::chrono_literals;
using moonmq::test::eventually;

namespace {

/// A reactor on a thread of its own, as the broker's.
struct running_reactor {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread{[this] { io.run(); }};
  ~running_reactor() {
    work.reset();
    io.stop();
    thread.join();
  }
};

}  // namespace

TEST_CASE("system runtime: a job ticks every period, at once when woken, and never after stop", "[runtime]") {
  running_reactor reactor;
  moonmq::system_runtime rt(reactor.io);
  std::atomic<int> ticks{0};
  SECTION("every period") {
    auto job = rt.every(5ms, [&] { ++ticks; });
    CHECK(eventually([&] { return ticks >= 3; }, 5s, 1ms));
  }
  SECTION("woken: the next tick comes now, not after the hour") {
    auto job = rt.every(std::chrono::hours(1), [&] { ++ticks; });
    job->wake();
    CHECK(eventually([&] { return ticks == 1; }, 5s, 1ms));
  }
  SECTION("woken during a tick: another follows at once") {
    std::atomic<bool> in_tick{false}, release{false};
    auto job = rt.every(0ms, std::chrono::hours(1), [&] {
      in_tick = true;
      while (!release) std::this_thread::sleep_for(1ms);
      ++ticks;
    });
    REQUIRE(eventually([&] { return in_tick.load(); }, 5s, 1ms));
    job->wake();
    release = true;
    CHECK(eventually([&] { return ticks == 2; }, 5s, 1ms));
  }
  SECTION("stop waits for a tick under way, and none follows") {
    std::atomic<bool> in_tick{false};
    auto job = rt.every(1ms, [&] {
      in_tick = true;
      std::this_thread::sleep_for(20ms);  // a slow tick
      ++ticks;
    });
    REQUIRE(eventually([&] { return in_tick.load(); }, 5s, 1ms));
    job->stop();
    const int at_stop = ticks;
    CHECK(at_stop >= 1);  // the tick under way ended before stop() returned
    job->wake();
    CHECK_FALSE(eventually([&] { return ticks > at_stop; }, 50ms, 5ms));
  }
  SECTION("a job's ticks never overlap, and a slow one holds up only its own job") {
    std::atomic<int> inside{0}, most{0}, other{0};
    auto slow = rt.every(1ms, [&] {
      most = std::max(most.load(), ++inside);
      std::this_thread::sleep_for(30ms);
      --inside;
      ++ticks;
    });
    auto quick = rt.every(1ms, [&] { ++other; });
    REQUIRE(eventually([&] { return ticks >= 3; }, 5s, 1ms));
    CHECK(most == 1);
    CHECK(other > ticks);
  }
  SECTION("after: a callback on the reactor once its delay has passed") {
    const auto start = std::chrono::steady_clock::now();
    std::atomic<bool> called{false};
    std::thread::id on;
    rt.after(20ms, [&] {
      on = std::this_thread::get_id();
      called = true;
    });
    REQUIRE(eventually([&] { return called.load(); }, 5s, 1ms));
    CHECK(std::chrono::steady_clock::now() - start >= 20ms);
    CHECK(on == reactor.thread.get_id());
  }
}

TEST_CASE("manual runtime: what is due runs in time order, on its own time, and only when time is moved", "[runtime]") {
  moonmq::test::manual_runtime rt;
  const auto t0 = rt.now;
  std::vector<std::string> seen;
  auto a = rt.every(100ms, [&] { seen.push_back("a@" + std::to_string(rt.now - t0)); });
  auto b = rt.every(50ms, 150ms, [&] { seen.push_back("b@" + std::to_string(rt.now - t0)); });
  rt.after(120ms, [&] { seen.push_back("after@" + std::to_string(rt.steady_ms() - t0)); });
  CHECK(seen.empty());
  rt.advance(250ms);
  // At 200 both are due: b's tick was queued first (at 50, a's at 100).
  CHECK(seen == std::vector<std::string>{"b@50", "a@100", "after@120", "b@200", "a@200"});
  CHECK(rt.now == t0 + 250);

  seen.clear();
  b->wake();  // runs at the next advance, at the present time, and its schedule starts again from there
  rt.advance(0ms);
  CHECK(seen == std::vector<std::string>{"b@250"});
  seen.clear();
  a->stop();
  rt.advance(160ms);
  CHECK(seen == std::vector<std::string>{"b@400"});

  rt.block_for(30ms);  // the clock moves; nothing runs
  CHECK(rt.now == t0 + 440);
  CHECK(seen.size() == 1);
}

TEST_CASE("sleep_on: a coroutine waits for the runtime's clock, not the machine's", "[runtime]") {
  moonmq::test::manual_runtime rt;
  asio::io_context io;
  bool woke = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await moonmq::sleep_on(rt, std::chrono::milliseconds(20));
        woke = true;
      },
      asio::detached);
  io.poll();
  io.restart();
  REQUIRE(rt.next_due() == rt.now + 20);
  rt.advance(19ms);
  io.poll();
  io.restart();
  CHECK_FALSE(woke);
  rt.advance(1ms);
  io.poll();
  CHECK(woke);
}

TEST_CASE("system runtime: a job stopped from its own tick ends there, without waiting for itself", "[runtime]") {
  running_reactor reactor;
  moonmq::system_runtime rt(reactor.io);
  std::atomic<int> ticks{0};
  std::unique_ptr<moonmq::scheduled_job> job;
  std::atomic<bool> made{false};
  job = rt.every(1ms, [&] {
    while (!made) std::this_thread::sleep_for(1ms);
    ++ticks;
    job->stop();  // would wait for this very tick if it did not know it is inside it
  });
  made = true;
  REQUIRE(eventually([&] { return ticks == 1; }, 5s, 1ms));
  CHECK_FALSE(eventually([&] { return ticks > 1; }, 50ms, 5ms));
}

TEST_CASE("cancellable_sleep: cut short, then waited again for what is left, on the runtime's clock", "[runtime]") {
  moonmq::test::manual_runtime rt;
  asio::io_context io;
  std::vector<bool> results;
  moonmq::cancellable_sleep* live = nullptr;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        moonmq::cancellable_sleep sleep(rt, io.get_executor(), std::chrono::milliseconds(100));
        live = &sleep;
        results.push_back(co_await sleep.wait());  // cut short
        results.push_back(co_await sleep.wait());  // waits out the rest
        live = nullptr;
      },
      asio::detached);
  io.poll();
  io.restart();
  REQUIRE(live);
  live->cancel();
  io.poll();
  io.restart();
  REQUIRE(results == std::vector<bool>{false});
  rt.advance(99ms);
  io.poll();
  io.restart();
  CHECK(results.size() == 1);
  rt.advance(1ms);
  io.poll();
  CHECK(results == std::vector<bool>{false, true});
}
