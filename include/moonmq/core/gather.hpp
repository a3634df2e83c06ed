// Awaiting several coroutines at once: `gather` starts every one of them on the caller's executor and resumes when
// all have finished, with their values in the order given. The balance loop asks every peer at the same time this
// way, so one unreachable peer costs a pass one PeerTimeout, not one per peer.
// Thread safety: REQUIRES the caller's executor to run its handlers one at a time (an io_context run by one thread,
// or a strand).
#pragma once

#include <asio/co_spawn.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <exception>
#include <vector>

namespace moonmq {

/// Runs every awaitable concurrently; a default-constructed T stands for one that ended with an exception.
/// REQUIRES: T is default-constructible.
template <typename T>
asio::awaitable<std::vector<T>> gather(std::vector<asio::awaitable<T>> work) {
  auto ex = co_await asio::this_coro::executor;
  std::vector<T> out(work.size());
  std::size_t left = work.size();
  asio::steady_timer all_done(ex, asio::steady_timer::time_point::max());
  for (std::size_t i = 0; i < work.size(); ++i)
    asio::co_spawn(ex, std::move(work[i]), [&out, &left, &all_done, i](std::exception_ptr e, T value) {
      if (!e) out[i] = std::move(value);
      if (--left == 0) all_done.cancel();
    });
  if (left > 0) {
    asio::error_code ignored;
    co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
  co_return out;
}

}  // namespace moonmq
