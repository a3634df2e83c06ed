#include "moonmq/core/system_runtime.hpp"

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/thread_pool.hpp>
#include <condition_variable>
#include <thread>

namespace moonmq {

namespace {

/// One job: its timer waits on the reactor, its tick runs on the pool, and the timer is set again (on the reactor,
/// which alone touches it) once the tick has ended.
class timed_job final : public scheduled_job {
 public:
  struct state {
    state(asio::io_context& r, asio::thread_pool& p, std::chrono::milliseconds every, std::function<void()> fn)
        : reactor(r), pool(p), timer(r), period(every), tick(std::move(fn)) {}
    asio::io_context& reactor;
    asio::thread_pool& pool;
    asio::steady_timer timer;  ///< the reactor's only
    const std::chrono::milliseconds period;
    const std::function<void()> tick;
    std::mutex mu;
    std::condition_variable idle;
    bool stopped = false, running = false, woken = false;
    std::thread::id ticking;  ///< the thread of the tick under way
  };

  explicit timed_job(std::shared_ptr<state> s) : s_(std::move(s)) {}
  ~timed_job() override { stop(); }

  /// On the reactor: the next tick after `delay`, or at once if woken meanwhile.
  static void arm(const std::shared_ptr<state>& s, std::chrono::milliseconds delay) {
    {
      std::lock_guard lock(s->mu);
      if (s->stopped) return;
      if (s->woken) delay = std::chrono::milliseconds(0);
    }
    s->timer.expires_after(delay);
    s->timer.async_wait([s](const std::error_code&) {  // cancelled: woken or stopped
      std::lock_guard lock(s->mu);  // held while posting: a job is stopped before its runtime (and pool) go
      if (!s->stopped) asio::post(s->pool, [s] { run(s); });
    });
  }

  static void run(const std::shared_ptr<state>& s) {
    {
      std::lock_guard lock(s->mu);
      if (s->stopped) return;
      s->running = true;
      s->woken = false;
      s->ticking = std::this_thread::get_id();
    }
    s->tick();
    {
      std::lock_guard lock(s->mu);
      s->running = false;
      s->idle.notify_all();
      if (s->stopped) return;
    }
    asio::post(s->reactor, [s] { arm(s, s->period); });
  }

  void wake() override {
    {
      std::lock_guard lock(s_->mu);
      if (s_->stopped) return;
      s_->woken = true;
    }
    // The cancel runs later, on the reactor: by then a tick may have started and taken the wake (it clears the flag),
    // and the timer cancelled would be the next period's, a tick too early. Cancelled only while the wake is pending.
    asio::post(s_->reactor, [s = s_] {
      std::lock_guard lock(s->mu);
      if (s->woken) s->timer.cancel();
    });
  }

  void stop() override {
    std::unique_lock lock(s_->mu);
    if (!s_->stopped) {
      s_->stopped = true;
      asio::post(s_->reactor, [s = s_] { s->timer.cancel(); });
    }
    // From the job's own tick (an owner stopping it from inside): no tick starts after this one, which cannot be
    // waited for from within.
    if (s_->running && s_->ticking == std::this_thread::get_id()) return;
    s_->idle.wait(lock, [this] { return !s_->running; });
  }

 private:
  std::shared_ptr<state> s_;
};

}  // namespace

system_runtime::system_runtime(asio::io_context& reactor, std::size_t tick_threads)
    : reactor_(reactor), tick_threads_(tick_threads == 0 ? 1 : tick_threads) {}

system_runtime::~system_runtime() {
  std::lock_guard lock(mu_);
  if (ticks_) ticks_->join();
}

asio::thread_pool& system_runtime::ticks() {
  std::lock_guard lock(mu_);
  if (!ticks_) ticks_ = std::make_unique<asio::thread_pool>(tick_threads_);
  return *ticks_;
}

std::unique_ptr<scheduled_job> system_runtime::every(std::chrono::milliseconds first, std::chrono::milliseconds period,
                                                     std::function<void()> tick) {
  auto s = std::make_shared<timed_job::state>(reactor_, ticks(), period, std::move(tick));
  asio::post(reactor_, [s, first] { timed_job::arm(s, first); });
  return std::make_unique<timed_job>(std::move(s));
}

void system_runtime::block_for(std::chrono::milliseconds delay) { std::this_thread::sleep_for(delay); }

void system_runtime::after(std::chrono::milliseconds delay, std::function<void()> fn) {
  auto timer = std::make_shared<asio::steady_timer>(reactor_, delay);
  timer->async_wait([timer, fn = std::move(fn)](const std::error_code&) { fn(); });
}

}  // namespace moonmq
