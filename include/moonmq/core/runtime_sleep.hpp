// Waiting in a coroutine on a runtime's clock (core/runtime.hpp): on moonmqd's, a timer on the reactor; on a manual
// one, until the test or the simulation moves its time past the wake-up. The coroutine resumes on its own executor.
// sleep_on waits out its delay; a cancellable_sleep can be cut short.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
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

namespace moonmq {

/// A wait of `delay` on a runtime's clock, from its construction, that its owner may cut short (a loop told to stop
/// or to go on now, a proposal whose entry was applied). wait() may be called again after a cut: it then waits out
/// what is left. The runtime's callback, when it comes after the sleep is gone, only touches its own timer.
/// Thread safety: wait() and cancel() on the executor `ex`.
class cancellable_sleep {
 public:
  cancellable_sleep(runtime& rt, const asio::any_io_executor& ex, std::chrono::milliseconds delay)
      : timer_(std::make_shared<asio::steady_timer>(ex, asio::steady_timer::time_point::max())),
        due_(std::make_shared<bool>(false)) {
    rt.after(delay, [timer = timer_, due = due_] {
      asio::post(timer->get_executor(), [timer, due] {
        *due = true;
        timer->cancel();
      });
    });
  }

  /// True when the delay has passed; false when cancel() came first.
  asio::awaitable<bool> wait() {
    if (*due_) co_return true;
    asio::error_code ec;
    co_await timer_->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    co_return *due_;
  }

  bool due() const { return *due_; }
  /// Ends a wait under way (one not under way is not affected).
  void cancel() { timer_->cancel(); }

 private:
  std::shared_ptr<asio::steady_timer> timer_;
  std::shared_ptr<bool> due_;
};

}  // namespace moonmq
