// Ring buffers of load samples, and the load figure taken from them.
//
// The figure is the `percentile` of the samples in the window (nearest rank), so that one burst does not move a
// partition and one quiet minute does not hide a hot one. Samples are stored as float (bytes per second need no
// more than 7 significant digits to be balanced): a 60-sample window is 240 bytes.
//
// `load_window` is one buffer that owns its samples. `load_window_set` holds many windows of the same capacity in
// one contiguous slab, which is what the cluster model uses for a million partitions: no allocation per window, and
// computing every partition's figure is a sequential scan rather than a pointer chase. Both cache the figure until
// the next sample arrives.
// Thread safety: none; each is owned by one cluster_model (or user).
#pragma once

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

namespace moonmq::autobalancer {

/// The nearest-rank `p`-percentile (0 < p <= 1) of `n` samples (in any order); 0 when n is 0.
inline float sample_percentile(const float* samples, std::uint32_t n, double p) {
  if (n == 0) return 0.0f;
  auto rank = static_cast<std::uint32_t>(std::ceil(p * n));
  rank = std::clamp<std::uint32_t>(rank, 1, n);
  const std::uint32_t k = n - rank + 1;  // the figure is the k-th largest sample
  constexpr std::uint32_t small_k = 16;
  if (k <= small_k) {
    // One pass keeping the k largest seen, sorted, in a small array: for the usual p90 of 60 samples (k = 7) this
    // is several times faster than a selection over a copy.
    float top[small_k];
    std::uint32_t held = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      float v = samples[i];
      if (held == k && v <= top[k - 1]) continue;
      std::uint32_t j = held < k ? held++ : k - 1;
      while (j > 0 && top[j - 1] < v) {
        top[j] = top[j - 1];
        --j;
      }
      top[j] = v;
    }
    return top[k - 1];
  }
  std::vector<float> buf(samples, samples + n);
  std::nth_element(buf.begin(), buf.begin() + (rank - 1), buf.end());
  return buf[rank - 1];
}

/// Many ring buffers of one capacity, addressed by index, in one slab.
class load_window_set {
 public:
  /// REQUIRES: 1 <= capacity <= 65535.
  explicit load_window_set(std::uint32_t capacity = 60) : capacity_(capacity) {
    assert(capacity >= 1 && capacity <= 65535);
  }

  std::uint32_t capacity() const noexcept { return capacity_; }
  std::size_t count() const noexcept { return state_.size(); }

  /// Appends an empty window; returns its index.
  std::size_t add() {
    samples_.resize(samples_.size() + capacity_, 0.0f);
    state_.push_back({});
    return state_.size() - 1;
  }

  /// Removes window `i` by moving the last window into its place.
  void swap_remove(std::size_t i) {
    std::size_t last = state_.size() - 1;
    if (i != last) {
      std::copy_n(samples_.begin() + static_cast<std::ptrdiff_t>(last * capacity_), capacity_,
                  samples_.begin() + static_cast<std::ptrdiff_t>(i * capacity_));
      state_[i] = state_[last];
    }
    state_.pop_back();
    samples_.resize(state_.size() * capacity_);
  }

  /// Adds a sample to window `i`, evicting its oldest when full. Negative samples are clamped to zero.
  void record(std::size_t i, double value) {
    auto& st = state_[i];
    samples_[i * capacity_ + st.next] = static_cast<float>(value > 0 ? value : 0.0);
    st.next = static_cast<std::uint16_t>((st.next + 1) % capacity_);
    if (st.size < capacity_) ++st.size;
    st.cached = -1.0f;
  }

  std::uint32_t size(std::size_t i) const { return state_[i].size; }

  /// The nearest-rank `p`-percentile of window `i`; 0 when empty. Cached until the window's next sample.
  double percentile(std::size_t i, double p) const {
    auto& st = state_[i];
    if (st.cached >= 0.0f && st.cached_p == static_cast<float>(p)) return st.cached;
    st.cached = sample_percentile(samples_.data() + i * capacity_, st.size, p);
    st.cached_p = static_cast<float>(p);
    return st.cached;
  }

  /// The sample recorded last in window `i`; 0 when empty.
  double latest(std::size_t i) const {
    const auto& st = state_[i];
    if (st.size == 0) return 0.0;
    return samples_[i * capacity_ + (st.next + capacity_ - 1) % capacity_];
  }

 private:
  struct window_state {
    std::uint16_t size = 0;
    std::uint16_t next = 0;
    mutable float cached = -1.0f;  // < 0: not computed since the last sample
    mutable float cached_p = 0.0f;
  };

  std::uint32_t capacity_;
  std::vector<float> samples_;
  std::vector<window_state> state_;
};

/// One ring buffer that owns its samples.
class load_window {
 public:
  /// REQUIRES: 1 <= capacity <= 65535.
  explicit load_window(std::uint32_t capacity = 60) : set_(capacity) { set_.add(); }

  /// Adds a sample, evicting the oldest when the window is full. Negative samples are clamped to zero.
  void record(double value) { set_.record(0, value); }
  std::uint32_t size() const noexcept { return set_.size(0); }
  std::uint32_t capacity() const noexcept { return set_.capacity(); }
  /// The nearest-rank `p`-percentile (0 < p <= 1) of the samples held; 0 when empty.
  double percentile(double p) const { return set_.percentile(0, p); }
  /// The sample recorded last; 0 when empty.
  double latest() const { return set_.latest(0); }

 private:
  load_window_set set_;
};

}  // namespace moonmq::autobalancer
