#include "moonmq/transport/http_transport.hpp"

#include "transport/http1.hpp"
#include "transport/http_server.hpp"
#include "transport/tcp_stream.hpp"
#include "transport/tls_context.hpp"

#include <asio/co_spawn.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_awaitable.hpp>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

namespace moonmq::transport {

namespace {

/// The most a peer's answer may hold (a fetch of migration frames is a few MiB at most).
constexpr std::size_t max_answer_bytes = 256u << 20;
constexpr std::size_t max_answer_head_bytes = 64u << 10;
/// An idle connection is not reused after this long: the peer's listener closes it after 30 s idle
/// (http_server_limits), and reusing one it is closing at that moment would fail the request.
constexpr auto max_idle = std::chrono::seconds(20);

/// One peer: a few reusable connections and the threads that use them. Requests use the project's own HTTP/1.1
/// framing (http1.hpp: one system call to send a request, usually one to receive the answer), under TLS when the
/// cluster has it.
class peer_channel {
 public:
  peer_channel(http_peer peer, std::shared_ptr<tls_context> tls, std::size_t connections)
      : peer_(std::move(peer)), tls_(std::move(tls)), threads_(connections) {}

  ~peer_channel() { threads_.join(); }

  asio::thread_pool& threads() { return threads_; }

  /// Blocking: runs on one of this peer's threads, or on a caller that may block.
  response call(const request& req, std::chrono::milliseconds timeout) {
    tcp_stream s = checkout();
    const bool fresh = !s.is_open();
    if (fresh) {
      auto c = tcp_stream::connect(peer_.host, peer_.port, timeout);
      if (!c) return no_answer(peer_.id, c.message());
      s = std::move(*c);
    }
    s.set_timeout(timeout);
    if (fresh && tls_)
      if (auto t = s.start_tls_client(*tls_, peer_.host); !t) return no_answer(peer_.id, t.message());
    const std::string host = peer_.host + ":" + std::to_string(peer_.port);
    if (!s.write_all(http1::request_head_text(req, host, req.body.size()), req.body))
      return no_answer(peer_.id, "could not send the request: " +
                                     (s.tls_failure().empty() ? std::string(std::strerror(errno)) : s.tls_failure()));
    message_reader reader(s);
    std::string head;
    const auto got = reader.read_head(max_answer_head_bytes, head);
    if (got == message_reader::outcome::too_large) return no_answer(peer_.id, "answered with an oversized head");
    if (got != message_reader::outcome::ok)
      return no_answer(peer_.id, s.tls_failure().empty() ? "no answer within " + std::to_string(timeout.count()) +
                                                               " ms, or the connection closed"
                                                         : "TLS connection refused: " + s.tls_failure());
    auto h = http1::parse_response_head(head);
    if (!h) return no_answer(peer_.id, "malformed answer: " + h.message());
    response out;
    out.status = h->status;
    out.content_type = h->content_type;
    if (h->content_length && *h->content_length > max_answer_bytes)
      return no_answer(peer_.id, "answer of " + std::to_string(*h->content_length) + " bytes is too large");
    const bool whole = h->content_length ? reader.read_body(*h->content_length, out.body)
                                         : reader.read_until_close(max_answer_bytes, out.body);
    if (!whole) return no_answer(peer_.id, "the answer's body was cut short");
    if (h->keep_alive && !reader.buffered()) checkin(std::move(s));
    return out;
  }

 private:
  struct idle_connection {
    tcp_stream stream;
    std::chrono::steady_clock::time_point since;
  };

  /// An idle connection the peer still holds open, or a closed stream when there is none.
  tcp_stream checkout() {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu_);
    while (!idle_.empty()) {
      idle_connection c = std::move(idle_.back());
      idle_.pop_back();
      if (now - c.since < max_idle && c.stream.idle_and_open()) return std::move(c.stream);
    }
    return {};
  }

  void checkin(tcp_stream s) {
    std::lock_guard lock(mu_);
    idle_.push_back({std::move(s), std::chrono::steady_clock::now()});
  }

  http_peer peer_;
  std::shared_ptr<tls_context> tls_;
  asio::thread_pool threads_;
  std::mutex mu_;
  std::vector<idle_connection> idle_;
};

class http_transport final : public transport {
 public:
  http_transport(const http_transport_options& o, const std::shared_ptr<tls_context>& tls) {
    for (const auto& p : o.peers)
      channels_.emplace(p.id, std::make_unique<peer_channel>(p, tls, std::max<std::size_t>(1, o.connections_per_peer)));
  }

  asio::awaitable<response> send(const std::string& peer, request req, std::chrono::milliseconds timeout) override {
    auto it = channels_.find(peer);
    if (it == channels_.end()) co_return no_answer(peer, "not a configured peer");
    peer_channel* ch = it->second.get();
    // Blocking work on the peer's own threads; the awaiting coroutine resumes on its executor.
    std::optional<response> r =
        co_await asio::co_spawn(ch->threads(), call_on(ch, std::move(req), timeout), asio::use_awaitable);
    co_return std::move(*r);
  }

  std::optional<response> send_now(const std::string& peer, const request& req,
                                   std::chrono::milliseconds timeout) override {
    auto it = channels_.find(peer);
    if (it == channels_.end()) return no_answer(peer, "not a configured peer");
    return it->second->call(req, timeout);
  }

 private:
  /// Runs where it is spawned (a peer thread). A function, not a capturing lambda: see core/offload.hpp.
  static asio::awaitable<std::optional<response>> call_on(peer_channel* ch, request req,
                                                          std::chrono::milliseconds timeout) {
    co_return ch->call(req, timeout);
  }

  std::map<std::string, std::unique_ptr<peer_channel>> channels_;
};

}  // namespace

result<std::unique_ptr<transport>> make_http_transport(const http_transport_options& options) {
  std::shared_ptr<tls_context> tls;
  if (options.tls) {
    auto t = tls_context::create(*options.tls, tls_context::side::client);
    if (!t) return t.err();
    tls = std::move(*t);
  }
  return std::unique_ptr<transport>(std::make_unique<http_transport>(options, tls));
}

result<std::unique_ptr<http_listener>> start_http_listener(const http_listener_options& options,
                                                           http_listener::handler handler,
                                                           http_server_limits limits) {
  return start_http_server(options, std::move(handler), limits);
}

}  // namespace moonmq::transport
