// Expected failures as values.
//
// Everything that can fail for a reason outside the programmer's control (bad input, a peer that does not answer,
// a fence that refuses, a partition this broker does not own) returns a `status` or a `result<T>` carrying an
// `errc` and a message that names the thing at fault. Exceptions are kept for programmer errors and start-up.
// Thread safety: plain values; no shared state.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace moonmq {

/// The domain's error codes. Each maps to one outcome a caller can act on.
enum class errc {
  ok = 0,
  invalid_argument,  ///< malformed input: bad JSON, wrong type, unknown key, out-of-range value
  not_found,         ///< the named thing does not exist
  already_exists,    ///< refused because the thing is already there (e.g. a non-empty destination)
  conflict,          ///< precondition failed (offset mismatch, stale epoch)
  not_owner,         ///< this broker does not serve the partition
  unavailable,       ///< a peer or resource cannot be reached now; retrying may help
  io_error,          ///< the operating system refused a file or socket operation
  corrupt,           ///< durable state failed its checksum or parse
  unauthorized,      ///< missing or wrong credentials
  resource_exhausted,  ///< a configured limit would be passed (partitions, connections, ...)
  producer_fenced,        ///< an idempotent/transactional producer's epoch is older than the one the owner knows
  out_of_order_sequence,  ///< a producer's sequence leaves a gap (or overlaps part of what was written)
  duplicate_sequence,     ///< a retried batch was written, but too long ago for its offsets to be kept
  offset_out_of_range,    ///< a fetch or commit position past the partition's end
  would_block,            ///< the caller asked not to wait, and the operation would have (nothing was done)
  internal,          ///< a bug: an invariant did not hold
};

/// A short stable name for an error code, for logs and JSON error bodies.
constexpr const char* errc_name(errc e) noexcept {
  switch (e) {
    case errc::ok:
      return "ok";
    case errc::invalid_argument:
      return "invalid_argument";
    case errc::not_found:
      return "not_found";
    case errc::already_exists:
      return "already_exists";
    case errc::conflict:
      return "conflict";
    case errc::not_owner:
      return "not_owner";
    case errc::unavailable:
      return "unavailable";
    case errc::io_error:
      return "io_error";
    case errc::corrupt:
      return "corrupt";
    case errc::unauthorized:
      return "unauthorized";
    case errc::producer_fenced:
      return "producer_fenced";
    case errc::out_of_order_sequence:
      return "out_of_order_sequence";
    case errc::duplicate_sequence:
      return "duplicate_sequence";
    case errc::offset_out_of_range:
      return "offset_out_of_range";
    case errc::resource_exhausted:
      return "resource_exhausted";
    case errc::would_block:
      return "would_block";
    case errc::internal:
      return "internal";
  }
  return "unknown";
}

/// The code errc_name() names, or nullopt (for answers relayed from a peer).
constexpr std::optional<errc> errc_from_name(std::string_view name) noexcept {
  for (int i = static_cast<int>(errc::ok); i <= static_cast<int>(errc::internal); ++i)
    if (name == errc_name(static_cast<errc>(i))) return static_cast<errc>(i);
  return std::nullopt;
}

/// An error code with a message that names what is at fault.
struct error {
  errc code = errc::internal;
  std::string message;
};

/// Success, or an error.
class [[nodiscard]] status {
 public:
  status() = default;
  status(error e) : error_(std::move(e)) {}  // NOLINT: implicit so that `return error{...};` reads well
  status(errc code, std::string message) : error_{code, std::move(message)} {}

  bool ok() const noexcept { return error_.code == errc::ok; }
  explicit operator bool() const noexcept { return ok(); }
  errc code() const noexcept { return error_.code; }
  const std::string& message() const noexcept { return error_.message; }
  const error& err() const noexcept { return error_; }

 private:
  error error_{errc::ok, {}};
};

/// A value, or an error.
template <typename T>
class [[nodiscard]] result {
 public:
  result(T value) : v_(std::move(value)) {}                                             // NOLINT: implicit by design
  result(error e) : v_(std::move(e)) { assert(std::get<error>(v_).code != errc::ok); }  // NOLINT
  result(errc code, std::string message) : v_(error{code, std::move(message)}) {}

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &std::get<T>(v_); }
  const T* operator->() const { return &std::get<T>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

  const error& err() const { return std::get<error>(v_); }
  errc code() const noexcept { return ok() ? errc::ok : std::get<error>(v_).code; }
  const std::string& message() const { return std::get<error>(v_).message; }
  status to_status() const { return ok() ? status{} : status{err()}; }

 private:
  std::variant<T, error> v_;
};

}  // namespace moonmq
