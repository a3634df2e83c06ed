// An in-memory network for in-process clusters: each broker registers its request handler, and gets a transport
// whose sends call the destination's handler directly (on the sender's executor), through configurable faults.
//
// Faults, per direction or for every link: drop the request (the handler never runs), lose the response (the
// handler ran, the sender hears nothing: the case that makes retries dangerous), duplicate (the handler runs
// twice), delay and jitter (which reorders concurrent requests), and partitions between brokers (no answer either
// way). A `hook` can inspect each request and decide its fate, to fail exactly one step of a protocol, or hold it
// until the test releases it (a delay measured in what happens meanwhile rather than in time, for a simulation that
// runs its reactor by hand). Random choices come from one seeded generator: a test run is reproducible from its
// seed. Synchronous sends (send_now, for callers that block) see every fault but the delay and the hold.
// Thread safety: configure faults and handlers from the thread that runs the executor; sends run on it too, except
// synchronous sends, which may come from other threads while that one waits for them (handlers must then be
// thread-safe, as the brokers' are).
#pragma once

#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>

#include "moonmq/transport/transport.hpp"

namespace moonmq::transport {

/// What happens to one request. `hold`: delivered when release_held() lets it go (by a hook; a synchronous send is
/// delivered at once).
enum class fate { deliver, drop, lose_response, duplicate, hold };

class loopback_network {
 public:
  using handler = std::function<response(const request&)>;
  /// Decides a request's fate (after partitions and probabilities); return deliver to leave it alone.
  using hook = std::function<fate(const std::string& from, const std::string& to, const request&)>;

  explicit loopback_network(std::uint64_t seed = 1) : rng_(seed) {}

  void attach(const std::string& broker, handler h) { handlers_[broker] = std::move(h); }
  void detach(const std::string& broker) { handlers_.erase(broker); }

  /// No answer between a and b, either way, until heal().
  void partition(const std::string& a, const std::string& b) {
    cut_.insert({a, b});
    cut_.insert({b, a});
  }
  void heal() { cut_.clear(); }

  void set_drop_probability(double p) { drop_ = p; }
  void set_lose_response_probability(double p) { lose_ = p; }
  void set_duplicate_probability(double p) { duplicate_ = p; }
  /// Every delivery waits `base` plus a uniform jitter up to `jitter`.
  void set_delay(std::chrono::milliseconds base, std::chrono::milliseconds jitter = {}) {
    delay_ = base;
    jitter_ = jitter;
  }
  void set_hook(hook h) { hook_ = std::move(h); }

  /// How many requests are held (see fate::hold).
  std::size_t held() const {
    std::lock_guard lock(deliveries_);
    return held_.size();
  }
  /// Lets the `n` longest-held requests go, in the order they were held; each is delivered when the reactor next
  /// runs its sender.
  void release_held(std::size_t n = SIZE_MAX) {
    std::lock_guard lock(deliveries_);
    for (; n > 0 && !held_.empty(); --n) {
      held_.front()->cancel();
      held_.pop_front();
    }
  }

  /// How many requests each route received (delivered to a handler), for tests.
  std::size_t delivered(const std::string& path) const {
    auto it = delivered_.find(path);
    return it == delivered_.end() ? 0 : it->second;
  }

  /// The transport broker `from` sends through.
  std::unique_ptr<transport> transport_for(const std::string& from);

 private:
  friend class loopback_transport;

  /// A request's fate and how long it waits, or the answer when it cannot be delivered at all.
  struct plan {
    std::optional<response> refused;
    fate f = fate::deliver;
    std::chrono::milliseconds wait{0};
  };

  plan decide(const std::string& from, const std::string& to, const request& req, std::chrono::milliseconds timeout) {
    plan p;
    hook h;
    {
      std::lock_guard lock(deliveries_);
      if (cut_.count({from, to})) return {no_answer(to, "partitioned")};
      if (!handlers_.count(to)) return {no_answer(to, "no such broker (down)")};
      std::uniform_real_distribution<double> u(0, 1);
      if (u(rng_) < drop_)
        p.f = fate::drop;
      else if (u(rng_) < lose_)
        p.f = fate::lose_response;
      else if (u(rng_) < duplicate_)
        p.f = fate::duplicate;
      p.wait = delay_;
      if (jitter_.count() > 0)
        p.wait += std::chrono::milliseconds(std::uniform_int_distribution<long>(0, jitter_.count())(rng_));
      if (p.wait > timeout) p.wait = timeout;
      h = hook_;
    }
    if (h) {  // outside the lock: a test's hook may itself send
      fate chosen = h(from, to, req);
      if (chosen != fate::deliver) p.f = chosen;
    }
    return p;
  }

  response deliver(const std::string& from, const std::string& to, request req, fate f) {
    if (f == fate::drop) return no_answer(to, "request dropped");
    handler h;
    {
      std::lock_guard lock(deliveries_);
      auto it = handlers_.find(to);  // it may have gone down while the request waited
      if (it == handlers_.end()) return no_answer(to, "no such broker (down)");
      h = it->second;
      delivered_[req.path] += f == fate::duplicate ? 2 : 1;
    }
    req.headers[header_from] = from;
    response r = h(req);
    if (f == fate::duplicate) (void)h(req);
    if (f == fate::lose_response) return no_answer(to, "response lost");
    return r;
  }

  asio::awaitable<response> carry(std::string from, std::string to, request req, std::chrono::milliseconds timeout) {
    auto exec = co_await asio::this_coro::executor;
    plan p = decide(from, to, req, timeout);
    if (p.refused) co_return std::move(*p.refused);
    if (p.wait.count() > 0) {
      asio::steady_timer t(exec, p.wait);
      co_await t.async_wait(asio::use_awaitable);
    }
    if (p.f == fate::hold) {
      asio::steady_timer gate(exec, asio::steady_timer::time_point::max());
      // Listed while it waits; unlisted however the wait ends (released, or the reactor destroyed with it).
      struct listing {
        loopback_network& net;
        asio::steady_timer* gate;
        ~listing() {
          std::lock_guard lock(net.deliveries_);
          std::erase(net.held_, gate);
        }
      };
      {
        std::lock_guard lock(deliveries_);
        held_.push_back(&gate);
      }
      listing listed{*this, &gate};
      std::error_code ignored;
      co_await gate.async_wait(asio::redirect_error(asio::use_awaitable, ignored));  // cancelled: released
      p.f = fate::deliver;
    }
    co_return deliver(from, to, std::move(req), p.f);
  }

  /// carry() on the calling thread, for callers that block (transport::send_now): every fault but the delay applies.
  response carry_now(const std::string& from, const std::string& to, const request& req,
                     std::chrono::milliseconds timeout) {
    plan p = decide(from, to, req, timeout);
    if (p.refused) return std::move(*p.refused);
    return deliver(from, to, req, p.f == fate::hold ? fate::deliver : p.f);
  }

  /// Held while a request's fate is drawn and its handler looked up (not while the handler runs), so that
  /// synchronous sends may come from several threads (a coordinator's markers go out in parallel).
  mutable std::mutex deliveries_;
  std::map<std::string, handler> handlers_;
  std::deque<asio::steady_timer*> held_;  ///< the gates of held requests, oldest first
  std::set<std::pair<std::string, std::string>> cut_;
  std::map<std::string, std::size_t> delivered_;
  std::mt19937_64 rng_;
  double drop_ = 0, lose_ = 0, duplicate_ = 0;
  std::chrono::milliseconds delay_{0}, jitter_{0};
  hook hook_;
};

class loopback_transport final : public transport {
 public:
  loopback_transport(loopback_network& net, std::string from) : net_(net), from_(std::move(from)) {}
  asio::awaitable<response> send(const std::string& peer, request req, std::chrono::milliseconds timeout) override {
    return net_.carry(from_, peer, std::move(req), timeout);
  }
  std::optional<response> send_now(const std::string& peer, const request& req,
                                   std::chrono::milliseconds timeout) override {
    return net_.carry_now(from_, peer, req, timeout);
  }

 private:
  loopback_network& net_;
  std::string from_;
};

inline std::unique_ptr<transport> loopback_network::transport_for(const std::string& from) {
  return std::make_unique<loopback_transport>(*this, from);
}

}  // namespace moonmq::transport
