// Ring buffers of load samples, and the load figure taken from them.
//
// The figure is the `percentile` of the samples in the window (nearest rank), so that one burst does not move a
// partition and one quiet minute does not hide a hot one. Samples are stored as float (bytes per second need no
// more than 7 significant digits to be balanced): a 60-sample window is 240 bytes.
//
// `load_window` is one buffer that owns its samples. `load_window_set` holds many windows of the same capacity in
// one contiguous slab, which is what the cluster model uses for a million partitions: no allocation per window, and
// computing every partition's figure is a sequential scan rather than a pointer chase. Both cache the figure until
// the next sample arrives, and a full window whose figure is among its 16 largest samples keeps those samples
// current as samples arrive (O(k) per sample), so that after a new sample the figure is usually known at once: it
// must be searched for again only when the sample leaving the window was one of them (about k/n of the time).
// Thread safety: none; each is owned by one cluster_model (or user).
#pragma once

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

namespace moonmq::autobalancer {

/// The most samples keep_largest() keeps.
inline constexpr std::uint32_t largest_kept = 16;

/// Puts `v` into `top`, which holds `held` values largest first, at its place: in a new slot when held < k, in
/// place of the smallest otherwise. REQUIRES: held == k implies v > top[k - 1].
inline void insert_largest(float* top, std::uint32_t& held, std::uint32_t k, float v) {
  std::uint32_t j = held < k ? held++ : k - 1;
  while (j > 0 && top[j - 1] < v) {
    top[j] = top[j - 1];
    --j;
  }
  top[j] = v;
}

/// Writes the `k` largest of `n` samples to `top`, largest first. REQUIRES: 1 <= k <= min(n, largest_kept).
inline void keep_largest(const float* samples, std::uint32_t n, std::uint32_t k, float* top) {
  std::uint32_t held = 0;
  for (std::uint32_t i = 0; i < n; ++i)
    if (held < k || samples[i] > top[k - 1]) insert_largest(top, held, k, samples[i]);
}

/// The nearest-rank `p`-percentile of `n` samples is their k-th largest: k (0 when n is 0).
inline std::uint32_t largest_rank(std::uint32_t n, double p) {
  if (n == 0) return 0;
  const auto rank = std::clamp<std::uint32_t>(static_cast<std::uint32_t>(std::ceil(p * n)), 1, n);
  return n - rank + 1;
}

/// The nearest-rank `p`-percentile (0 < p <= 1) of `n` samples (in any order); 0 when n is 0.
inline float sample_percentile(const float* samples, std::uint32_t n, double p) {
  if (n == 0) return 0.0f;
  const std::uint32_t k = largest_rank(n, p);  // the figure is the k-th largest sample
  if (k <= largest_kept) {
    // One pass keeping the k largest seen, sorted, in a small array: for the usual p90 of 60 samples (k = 7) this
    // is several times faster than a selection over a copy.
    float top[largest_kept];
    keep_largest(samples, n, k, top);
    return top[k - 1];
  }
  std::vector<float> buf(samples, samples + n);
  std::nth_element(buf.begin(), buf.begin() + (n - k), buf.end());  // the (n-k+1)-th smallest: the k-th largest
  return buf[n - k];
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
    const float v = static_cast<float>(value > 0 ? value : 0.0);
    float& slot = samples_[i * capacity_ + st.next];
    if (st.top_k && st.size == capacity_) {
      // The k largest stay known unless the sample leaving may be one of them.
      if (slot >= st.top[st.top_k - 1]) {
        st.top_k = 0;
      } else if (v > st.top[st.top_k - 1]) {
        std::uint32_t held = st.top_k;
        insert_largest(st.top, held, st.top_k, v);
      }
    } else {
      st.top_k = 0;  // still filling: the rank of the figure moves with the size
    }
    slot = v;
    st.next = static_cast<std::uint16_t>((st.next + 1) % capacity_);
    if (st.size < capacity_) ++st.size;
    st.cached = -1.0f;
  }

  std::uint32_t size(std::size_t i) const { return state_[i].size; }

  /// The nearest-rank `p`-percentile of window `i`; 0 when empty. Cached until the window's next sample; for a full
  /// window whose figure is among its 16 largest samples (p90 of 60 is the 7th), those samples are kept current as
  /// samples arrive, so that the figure is usually known without looking at the window again.
  double percentile(std::size_t i, double p) const {
    auto& st = state_[i];
    if (st.cached >= 0.0f && st.cached_p == static_cast<float>(p)) return st.cached;
    const std::uint32_t k = largest_rank(st.size, p);
    if (st.size == capacity_ && k >= 1 && k <= largest_kept) {
      if (st.top_k != k || st.top_p != static_cast<float>(p)) {
        keep_largest(samples_.data() + i * capacity_, st.size, k, st.top);
        st.top_k = static_cast<std::uint8_t>(k);
        st.top_p = static_cast<float>(p);
      }
      st.cached = st.top[k - 1];
    } else {
      st.cached = sample_percentile(samples_.data() + i * capacity_, st.size, p);
    }
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
    mutable std::uint8_t top_k = 0;  // 0: `top` not current; else it holds the window's top_k largest, descending
    mutable float top_p = 0.0f;      // the percentile `top` was kept for
    mutable float top[largest_kept] = {};
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
