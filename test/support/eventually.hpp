// Waiting on a condition in tests that run real processes: ask again until it holds or the time is up, never a fixed
// sleep. The one poll loop of the e2e tests.
#pragma once

#include <chrono>
#include <thread>

namespace moonmq::test {

/// Calls `holds` until it returns true or `within` has passed, pausing `every` between calls. Returns whether it held
/// (its last answer): `REQUIRE(eventually(...))`, then read what it waited for.
template <typename F>
bool eventually(F&& holds, std::chrono::milliseconds within = std::chrono::seconds(10),
                std::chrono::milliseconds every = std::chrono::milliseconds(50)) {
  const auto until = std::chrono::steady_clock::now() + within;
  for (;;) {
    if (holds()) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(every);
  }
}

}  // namespace moonmq::test
