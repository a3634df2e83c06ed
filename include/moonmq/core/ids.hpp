// Identifiers of the cluster's domain, as strong types so that a broker id cannot be passed where a topic name is
// expected, nor an epoch where a byte offset is.
// Thread safety: plain values.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace moonmq {

/// A value of type T that only converts to and from T explicitly. Tag makes each use a distinct type.
template <typename T, typename Tag>
class strong {
 public:
  using value_type = T;
  constexpr strong() = default;
  constexpr explicit strong(T v) : v_(std::move(v)) {}
  constexpr const T& value() const noexcept { return v_; }
  constexpr auto operator<=>(const strong&) const = default;
  constexpr bool operator==(const strong&) const = default;

 private:
  T v_{};
};

/// A broker's stable cluster identity (`Server.Cluster.BrokerId`), e.g. "b1".
using broker_id = strong<std::string, struct broker_id_tag>;
/// A controller epoch, or the Raft term where Raft is on.
using epoch = strong<std::uint64_t, struct epoch_tag>;
/// A position in a partition log: byte offset of a record's frame.
using byte_offset = strong<std::uint64_t, struct byte_offset_tag>;

/// One partition of one topic.
struct topic_partition {
  std::string topic;
  std::int32_t partition = 0;

  auto operator<=>(const topic_partition&) const = default;
  bool operator==(const topic_partition&) const = default;
};

/// The one way a partition is named to a person: "orders-3".
inline std::string name_of(const topic_partition& tp) { return tp.topic + "-" + std::to_string(tp.partition); }

/// Internal topics (name starting with "__") never move between brokers.
inline bool is_internal_topic(std::string_view topic) noexcept { return topic.starts_with("__"); }

}  // namespace moonmq

template <typename T, typename Tag>
struct std::hash<moonmq::strong<T, Tag>> {
  std::size_t operator()(const moonmq::strong<T, Tag>& s) const noexcept { return std::hash<T>{}(s.value()); }
};

template <>
struct std::hash<moonmq::topic_partition> {
  std::size_t operator()(const moonmq::topic_partition& tp) const noexcept {
    std::size_t h = std::hash<std::string>{}(tp.topic);
    return h ^ (std::hash<std::int32_t>{}(tp.partition) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  }
};
