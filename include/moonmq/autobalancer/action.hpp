// The detector's output: MOVE and SWAP actions, and the plan that lists them.
//
// An `action` names partitions and brokers by their index in the snapshot it was planned against (cheap to store
// and compare while goals run); `describe()` in plan.hpp turns it into names for people and for the wire.
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <limits>

namespace moonmq::autobalancer {

using broker_index = std::uint32_t;
using partition_index = std::uint32_t;
inline constexpr std::uint32_t no_index = std::numeric_limits<std::uint32_t>::max();

enum class action_type : std::uint8_t {
  move,  ///< `partition` goes from `src` to `dest`
  swap,  ///< `partition` goes from `src` to `dest` and `swap_partition` goes from `dest` to `src`
};

constexpr const char* action_type_name(action_type t) noexcept { return t == action_type::move ? "MOVE" : "SWAP"; }

struct action {
  action_type type = action_type::move;
  partition_index partition = no_index;
  broker_index src = no_index;
  broker_index dest = no_index;
  partition_index swap_partition = no_index;  ///< only for swap

  static action move(partition_index p, broker_index src, broker_index dest) {
    return {action_type::move, p, src, dest, no_index};
  }
  static action swap(partition_index p, broker_index src, broker_index dest, partition_index q) {
    return {action_type::swap, p, src, dest, q};
  }
  /// The action that takes this one back.
  action reversed() const {
    return type == action_type::move ? move(partition, dest, src) : swap(partition, dest, src, swap_partition);
  }
  bool operator==(const action&) const = default;
};

}  // namespace moonmq::autobalancer
