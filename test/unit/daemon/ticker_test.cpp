// The daemon's scheduled jobs: a tick every period, one at once on wake(), none after stop().
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "support/eventually.hpp"
#include "ticker.hpp"

using namespace std::chrono_literals;
using moonmq::daemon::ticker;
using moonmq::test::eventually;

TEST_CASE("ticker: ticks every period, at once when woken, and never after stop", "[ticker]") {
  std::atomic<int> ticks{0};
  SECTION("every period") {
    ticker t(5ms, [&] { ++ticks; });
    CHECK(eventually([&] { return ticks >= 3; }, 5s, 1ms));
  }
  SECTION("woken: the next tick comes now, not after the hour") {
    ticker t(std::chrono::hours(1), [&] { ++ticks; });
    t.wake();
    CHECK(eventually([&] { return ticks == 1; }, 5s, 1ms));
  }
  SECTION("stop waits for a tick under way, and none follows") {
    std::atomic<bool> in_tick{false};
    ticker t(1ms, [&] {
      in_tick = true;
      std::this_thread::sleep_for(20ms);  // a slow tick
      ++ticks;
    });
    REQUIRE(eventually([&] { return in_tick.load(); }, 5s, 1ms));
    t.stop();
    const int at_stop = ticks;
    CHECK(at_stop >= 1);  // the tick under way ended before stop() returned
    t.wake();
    CHECK_FALSE(eventually([&] { return ticks > at_stop; }, 50ms, 5ms));
  }
}
