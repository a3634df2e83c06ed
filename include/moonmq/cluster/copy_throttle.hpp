// The cluster-wide copy throttle as one broker applies it: every byte its moves copy (the copy and the drained tail)
// passes one token bucket. Changing the rate applies at once, also to a copy already waiting: waits are short
// slices that ask the bucket again.
// Pure: time is passed in. Thread safety: all members may be called from any thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>

namespace moonmq::cluster {

class copy_throttle {
 public:
  using clock = std::chrono::steady_clock;

  explicit copy_throttle(std::uint64_t bytes_per_sec = 0) : rate_(bytes_per_sec) {}

  /// 0 = unlimited. A lower rate takes effect for the next bytes asked for; debt already taken is kept, so a
  /// burst cannot be bought by lowering and raising the rate.
  void set_rate(std::uint64_t bytes_per_sec) {
    std::lock_guard lock(mu_);
    rate_ = bytes_per_sec;
    if (rate_ == 0) tokens_ = 0;
    tokens_ = std::min(tokens_, burst());
  }

  std::uint64_t rate() const {
    std::lock_guard lock(mu_);
    return rate_;
  }

  /// Asks to send `bytes` at `now`. Zero: go (the bytes are taken from the bucket, which may go into debt: a batch
  /// larger than a second's worth still goes, and the next waits for it). Otherwise: how long to wait before asking
  /// again; callers wait at most `max_slice` of it, so that a rate change reaches them soon.
  clock::duration take(std::uint64_t bytes, clock::time_point now,
                       clock::duration max_slice = std::chrono::milliseconds(100)) {
    std::lock_guard lock(mu_);
    if (rate_ == 0) return clock::duration::zero();
    refill(now);
    if (tokens_ >= 0) {
      tokens_ -= static_cast<double>(bytes);
      return clock::duration::zero();
    }
    auto wait = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(-tokens_ / rate_));
    return std::clamp<clock::duration>(wait, std::chrono::milliseconds(1), max_slice);
  }

  /// Counts `bytes` sent at `now` without waiting (a copy that must not wait: the later ones wait for it).
  void spend(std::uint64_t bytes, clock::time_point now) {
    std::lock_guard lock(mu_);
    if (rate_ == 0) return;
    refill(now);
    tokens_ -= static_cast<double>(bytes);
  }

 private:
  double burst() const { return static_cast<double>(rate_) / 4; }  // a quarter second's worth may go at once

  void refill(clock::time_point now) {
    if (last_ == clock::time_point{}) last_ = now;
    const double dt = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    if (dt > 0) tokens_ = std::min(burst(), tokens_ + dt * static_cast<double>(rate_));
  }

  mutable std::mutex mu_;
  std::uint64_t rate_;
  double tokens_ = 0;
  clock::time_point last_{};
};

}  // namespace moonmq::cluster
