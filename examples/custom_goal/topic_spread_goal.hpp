// TOPIC_SPREAD: a custom goal that keeps each topic's partitions spread over the brokers, so that losing one broker
// never takes out most of a topic. A broker may hold at most ceil(partitions of the topic / active brokers) of it.
//
// It shows the two functions a goal overrides: `optimize()` proposes moves through the context (which refuses any
// that a higher-priority goal rejects), and `accepts()` stops lower-priority goals from piling a topic back up.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "moonmq/autobalancer/goals/goal.hpp"

namespace example {

using namespace moonmq::autobalancer;

class topic_spread_goal final : public goal {
 public:
  std::string_view name() const override { return "TOPIC_SPREAD"; }

  void prepare(const snapshot& s) override {
    active_ = 0;
    for (broker_index b = 0; b < s.broker_count(); ++b) active_ += s.active(b) ? 1 : 0;
    per_topic_.assign(s.topic_count(), 0);
    for (partition_index p = 0; p < s.partition_count(); ++p) ++per_topic_[s.topic_id(p)];
  }

  void optimize(optimization& ctx) override {
    const snapshot& s = ctx.snap();
    for (broker_index b = 0; b < s.broker_count() && !ctx.exhausted(); ++b) {
      // Copy: moving partitions away changes the broker's list.
      std::vector<partition_index> held = s.partitions_on(b);
      std::sort(held.begin(), held.end());
      for (partition_index p : held) {
        if (ctx.exhausted()) return;
        std::uint32_t t = s.topic_id(p);
        if (s.owner(p) != b || count_on(s, b, t) <= limit(t)) continue;
        // The receiving broker with the fewest partitions of this topic (lowest index on ties).
        broker_index best = no_index;
        std::uint32_t best_count = 0;
        for (broker_index d = 0; d < s.broker_count(); ++d) {
          if (d == b || !s.can_receive(d)) continue;
          std::uint32_t c = count_on(s, d, t);
          if (c < limit(t) && (best == no_index || c < best_count)) best = d, best_count = c;
        }
        if (best != no_index) (void)ctx.try_apply(action::move(p, b, best));
      }
    }
  }

  bool accepts(const snapshot& s, const action& a) const override {
    std::uint32_t moving = s.topic_id(a.partition);
    if (a.type == action_type::move) return !over_limit_with_one_more(s, a.dest, moving);
    std::uint32_t coming_back = s.topic_id(a.swap_partition);
    if (moving == coming_back) return true;  // a trade within one topic changes no count
    return !over_limit_with_one_more(s, a.dest, moving) && !over_limit_with_one_more(s, a.src, coming_back);
  }

  bool satisfied(const snapshot& s) const override {
    for (broker_index b = 0; b < s.broker_count(); ++b)
      for (std::uint32_t t = 0; t < per_topic_.size(); ++t)
        if (s.active(b) && count_on(s, b, t) > limit(t)) return false;
    return true;
  }

 private:
  std::uint32_t limit(std::uint32_t topic) const {
    return active_ ? (per_topic_[topic] + active_ - 1) / active_ : per_topic_[topic];
  }

  static std::uint32_t count_on(const snapshot& s, broker_index b, std::uint32_t topic) {
    std::uint32_t n = 0;
    for (partition_index p : s.partitions_on(b)) n += s.topic_id(p) == topic ? 1 : 0;
    return n;
  }

  bool over_limit_with_one_more(const snapshot& s, broker_index b, std::uint32_t topic) const {
    return count_on(s, b, topic) + 1 > limit(topic);
  }

  std::uint32_t active_ = 0;
  std::vector<std::uint32_t> per_topic_;
};

}  // namespace example
