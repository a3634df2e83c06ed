// The broker's two clocks, read in one place: steady milliseconds for deadlines, sessions and ages (never step back),
// wall milliseconds for what outlives the process or is shown to people (record timestamps, transaction deadlines
// kept on disk). Code that waits or stamps takes one of them as a function, so that tests and the simulation pass
// their own (docs/design.md, "Time").
#pragma once

#include <chrono>
#include <cstdint>

namespace moonmq {

/// Milliseconds, on whichever of the two clocks the name or comment says.
using time_ms = std::int64_t;

inline std::int64_t steady_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline std::int64_t wall_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace moonmq
