// Running blocking work (file reads and writes, fsync) on a small pool and awaiting it, so that the reactor never
// blocks. The awaiting coroutine resumes on its own executor.
// Thread safety: as asio's thread_pool.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/co_spawn.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_awaitable.hpp>
#include <optional>
#include <type_traits>

namespace moonmq {

namespace detail {
/// A coroutine that calls `f` where it runs. A plain function, not a lambda: GCC 12 destroys the captures of a
/// capturing lambda coroutine twice (seen as a crash in moonmqd), while coroutine parameters are well-defined.
template <typename F, typename R = std::invoke_result_t<F&>>
asio::awaitable<std::optional<R>> invoke_here(F f) {
  co_return f();
}
}  // namespace detail

/// Awaits `w` and hands its value over in an optional: asio's futures and co_spawn results need a
/// default-constructible type, which result<T> is not.
template <typename T>
asio::awaitable<std::optional<T>> as_optional(asio::awaitable<T> w) {
  co_return co_await std::move(w);
}

/// Runs `f()` on `blocking` and returns its result. REQUIRES: f returns a non-void, movable value. `blocking` is a
/// pool's executor in a broker; a deterministic simulation passes its reactor's own, so that nothing runs beside it.
template <typename F>
auto offload(asio::any_io_executor blocking, F f) -> asio::awaitable<std::invoke_result_t<F&>> {
  // Carried in an optional: asio needs a default-constructible result type, and result<T> has no empty state.
  auto out = co_await asio::co_spawn(blocking, detail::invoke_here(std::move(f)), asio::use_awaitable);
  co_return std::move(*out);
}

/// Runs `f()` on `pool` and returns its result. REQUIRES: f returns a non-void, movable value.
template <typename F>
auto offload(asio::thread_pool& pool, F f) -> asio::awaitable<std::invoke_result_t<F&>> {
  return offload(asio::any_io_executor(pool.get_executor()), std::move(f));
}

}  // namespace moonmq
