// Waiting in a coroutine on a runtime's clock (core/runtime.hpp): on moonmqd's, a timer on the reactor; on a manual
// one, until the test or the simulation moves its time past the wake-up. The coroutine resumes on its own executor.
#pragma once

#include <asio/async_result.hpp>
#include <asio/post.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <memory>

#include "moonmq/core/runtime.hpp"

namespace moonmq {

inline asio::awaitable<void> sleep_on(runtime& rt, std::chrono::milliseconds delay) {
  auto executor = co_await asio::this_coro::executor;
  co_await asio::async_initiate<const asio::use_awaitable_t<>, void()>(
      [&rt, delay, executor](auto handler) {
        auto held = std::make_shared<decltype(handler)>(std::move(handler));
        rt.after(delay, [held, executor] { asio::post(executor, std::move(*held)); });
      },
      asio::use_awaitable);
}

}  // namespace moonmq
