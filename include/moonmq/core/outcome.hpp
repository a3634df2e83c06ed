// What a client operation answers (a front end, a coordinator's typed call): a value, or a refusal that carries what
// a client needs to act on it beyond the error code (the broker that serves the partition, the log's end, whether
// the coordinator refused or did not answer). Each client protocol encodes a refusal its own way: HTTP as 421 with
// the owner, 416 with the bounds or 503 coordinator_unavailable, Kafka as NOT_LEADER_OR_FOLLOWER,
// OFFSET_OUT_OF_RANGE or COORDINATOR_NOT_AVAILABLE.
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <variant>

#include "moonmq/core/ids.hpp"
#include "moonmq/core/result.hpp"

namespace moonmq {

struct refusal {
  error err;
  /// errc::not_owner: the broker that serves the partition (absent when no broker is known to).
  std::optional<broker_id> owner;
  /// errc::offset_out_of_range: the partition's end offset (a log starts at offset 0).
  std::optional<std::uint64_t> end_offset;
  /// The refusal is a coordinator's (a fenced member, or a coordinator that did not answer), not the partition's.
  bool by_coordinator = false;

  /// A coordinator that did not answer.
  static refusal coordinator_silent(std::string message) {
    return refusal{{errc::unavailable, std::move(message)}, std::nullopt, std::nullopt, true};
  }

  errc code() const noexcept { return err.code; }
  const std::string& message() const noexcept { return err.message; }
};

template <typename T>
class [[nodiscard]] outcome {
 public:
  outcome(T value) : v_(std::move(value)) {}              // NOLINT: implicit by design, as result<T>
  outcome(refusal r) : v_(std::move(r)) {}                // NOLINT
  outcome(error e) : v_(refusal{std::move(e), {}, {}}) {}  // NOLINT

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T* operator->() { return &std::get<T>(v_); }
  const T* operator->() const { return &std::get<T>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const refusal& refused() const { return std::get<refusal>(v_); }
  errc code() const noexcept { return ok() ? errc::ok : std::get<refusal>(v_).code(); }
  const std::string& message() const { return refused().message(); }
  const error& err() const { return refused().err; }

 private:
  std::variant<T, refusal> v_;
};

/// Nothing to return but success (a commit).
struct done {};

}  // namespace moonmq
