// Turns successive reports of cumulative counters into rates (units per second).
//
// The first report of a key only primes a baseline. A counter that went down (its broker restarted) primes a fresh
// baseline too: a rate is never negative and never computed across a reset. A report no later than the previous
// one gives no rate and keeps the previous baseline.
// Thread safety: none; the balance loop owns its rate tracker.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace moonmq::cluster {

template <typename Key>
class counter_rate {
 public:
  /// Records `value` for `key` at time `now_seconds`; returns the rate since the previous report, if there is one.
  std::optional<double> update(const Key& key, std::uint64_t value, double now_seconds) {
    auto it = last_.find(key);
    if (it == last_.end()) {
      last_.emplace(key, sample{value, now_seconds});
      return std::nullopt;
    }
    sample& prev = it->second;
    if (value < prev.value) {  // reset: start over from this report
      prev = {value, now_seconds};
      return std::nullopt;
    }
    double dt = now_seconds - prev.at;
    if (dt <= 0) return std::nullopt;
    double rate = static_cast<double>(value - prev.value) / dt;
    prev = {value, now_seconds};
    return rate;
  }

  /// Forgets a key (its partition is gone): its next report primes again.
  void forget(const Key& key) { last_.erase(key); }
  std::size_t size() const noexcept { return last_.size(); }

 private:
  struct sample {
    std::uint64_t value;
    double at;
  };
  std::map<Key, sample> last_;
};

}  // namespace moonmq::cluster
