#include "kafka_listener.hpp"

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/redirect_error.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/steady_timer.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <chrono>
#include <deque>
#include <exception>
#include <list>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>

#include <openssl/ssl.h>

#include "moonmq/core/offload.hpp"
#include "transport/tls_context.hpp"

namespace moonmq::daemon {

using asio::ip::tcp;

namespace {
constexpr std::size_t unauthenticated_request_limit = 64u << 10;
constexpr auto fetch_poll = std::chrono::milliseconds(10);
// Read ahead of the request being handled, once authenticated: at most this many frames, and no new frame begun past
// this many bytes (so a connection holds at most these bytes plus one request of MaxRequestBytes).
constexpr std::size_t read_ahead_frames = 8;
constexpr std::size_t read_ahead_bytes = 4u << 20;

/// A completion condition for async_write that lets each send take all that is left. asio's transfer_all sends at
/// most 64 KiB at a time, with a pass through the reactor between two sends: a 1 MB fetch response took 16 sends and
/// 16 polls, where one send usually takes it all.
std::size_t whole_sends(const asio::error_code& ec, std::size_t) { return ec ? 0 : SIZE_MAX; }
}  // namespace

struct kafka_listener::impl : std::enable_shared_from_this<impl> {
  /// A request as read: its bytes are not zeroed first, since the read fills every one of them.
  struct frame_bytes {
    std::unique_ptr<char[]> data;
    std::size_t size = 0;
    std::string_view view() const { return {data.get(), size}; }
  };

  struct connection {
    explicit connection(asio::io_context& io) : socket(io), deadline(io), frame_ready(io), room(io) {}
    tcp::socket socket;
    /// Under Server.Kafka.Tls: every byte goes through it (it reads and writes `socket`).
    std::unique_ptr<asio::ssl::stream<tcp::socket&>> tls;
    asio::steady_timer deadline;
    /// The TLS handshake (when there is one) is done and the client authenticated: the deadline no longer applies.
    bool admitted = false;

    // The requests are read by one coroutine (read_frames) and handled, one at a time and in order, by another
    // (serve), so that the next request is read while one is handled. On the reactor thread only.
    std::deque<frame_bytes> frames;  ///< read, not yet handled
    std::size_t queued_bytes = 0;
    bool authenticated = false;  ///< as of the last request handled (the handler's session is on a pool thread)
    bool handling = false;
    bool reader_done = false;  ///< no more frames: the peer closed, or a size prefix broke the limits
    bool stopping = false;     ///< the connection is being closed: both coroutines end
    asio::steady_timer frame_ready, room;  ///< waited on with no expiry; cancel() wakes the waiter
  };

  impl(const cluster::server_config& c, kafka_api& a) : cfg(c), api(a), acceptor(io) {}

  const cluster::server_config& cfg;
  kafka_api& api;
  std::shared_ptr<transport::tls_context> tls;  ///< none: plain TCP
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  asio::thread_pool handlers{4};
  tcp::acceptor acceptor;
  std::thread thread;
  // On the reactor thread only:
  std::list<std::shared_ptr<connection>> open;
  std::list<std::weak_ptr<connection>> waiting;  ///< not yet authenticated, oldest first

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto c = std::make_shared<connection>(io);
      asio::error_code ec;
      co_await acceptor.async_accept(c->socket, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
        continue;
      }
      if (open.size() >= cfg.limits.max_client_connections) {
        asio::error_code ignored;
        c->socket.close(ignored);
        continue;
      }
      {
        asio::error_code ignored;
        c->socket.set_option(tcp::no_delay(true), ignored);
      }
      admit(c);
      // A handler that throws closes its connection (and ends its reader) rather than leave it open for good.
      asio::co_spawn(io, serve(shared_from_this(), c), [self = shared_from_this(), c](const std::exception_ptr& e) {
        if (e) self->forget(c);
      });
    }
  }

  /// Counts the connection, and until it is admitted (handshake done, client authenticated) holds it to the
  /// unauthenticated cap and the authentication deadline; a TLS handshake is under both, with or without tokens.
  void admit(const std::shared_ptr<connection>& c) {
    open.push_back(c);
    c->admitted = api.open_session().authenticated && !tls;
    if (c->admitted) return;
    // Only connections still waiting count (and may be evicted); an admitted one is never closed for a newcomer.
    std::erase_if(waiting, [](const auto& w) {
      const auto conn = w.lock();
      return !conn || conn->admitted;
    });
    while (waiting.size() >= cfg.limits.max_unauthenticated_connections) {
      if (auto oldest = waiting.front().lock()) close(*oldest);
      waiting.pop_front();
    }
    waiting.push_back(c);
    c->deadline.expires_after(std::chrono::milliseconds(cfg.limits.auth_timeout_ms));
    std::weak_ptr<connection> weak = c;
    c->deadline.async_wait([weak](const asio::error_code& ec) {
      if (ec) return;
      if (auto conn = weak.lock(); conn && !conn->admitted) close(*conn);
    });
  }

  static asio::awaitable<void> read_exact(connection& c, asio::mutable_buffer into, asio::error_code& ec) {
    if (c.tls)
      co_await asio::async_read(*c.tls, into, asio::redirect_error(asio::use_awaitable, ec));
    else
      co_await asio::async_read(c.socket, into, asio::redirect_error(asio::use_awaitable, ec));
  }

  static asio::awaitable<void> write_all(connection& c, asio::const_buffer from, asio::error_code& ec) {
    if (c.tls)
      co_await asio::async_write(*c.tls, from, asio::redirect_error(asio::use_awaitable, ec));
    else  // as much as the socket takes in each send (asio's own condition sends at most 64 KiB at a time)
      co_await asio::async_write(c.socket, from, whole_sends, asio::redirect_error(asio::use_awaitable, ec));
  }

  static void close(connection& c) {
    asio::error_code ignored;
    c.socket.shutdown(tcp::socket::shutdown_both, ignored);
    c.socket.close(ignored);
  }

  void forget(const std::shared_ptr<connection>& c) {
    close(*c);
    wake_all(*c);
    open.remove(c);
  }

  /// Ends both coroutines of a connection whose socket is closed.
  static void wake_all(connection& c) {
    c.stopping = true;
    c.deadline.cancel();
    c.frame_ready.cancel();
    c.room.cancel();
  }

  static asio::awaitable<void> wait_for_wake(asio::steady_timer& t) {
    asio::error_code ec;
    t.expires_at(asio::steady_timer::time_point::max());
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }

  /// Reads frames into c->frames. Before authentication one at a time: the next is read once the last is answered,
  /// under the small limit; after it, ahead of the handler within read_ahead_frames and read_ahead_bytes.
  static asio::awaitable<void> read_frames(std::shared_ptr<impl> self, std::shared_ptr<connection> c) {
    asio::error_code ec;
    for (;;) {
      while (!c->stopping && (c->frames.size() >= read_ahead_frames || c->queued_bytes >= read_ahead_bytes ||
                              (!c->authenticated && (c->handling || !c->frames.empty()))))
        co_await wait_for_wake(c->room);
      if (c->stopping) break;
      char prefix[4];
      co_await read_exact(*c, asio::buffer(prefix, 4), ec);
      if (ec || c->stopping) break;
      const std::uint32_t size = (static_cast<std::uint32_t>(static_cast<unsigned char>(prefix[0])) << 24) |
                                 (static_cast<std::uint32_t>(static_cast<unsigned char>(prefix[1])) << 16) |
                                 (static_cast<std::uint32_t>(static_cast<unsigned char>(prefix[2])) << 8) |
                                 static_cast<std::uint32_t>(static_cast<unsigned char>(prefix[3]));
      // Checked before a byte is allocated for it.
      const std::size_t limit = c->authenticated ? self->cfg.kafka->max_request_bytes : unauthenticated_request_limit;
      if (size == 0 || size > limit) break;
      // Read ahead only within read_ahead_bytes, this frame included: a larger one waits until nothing else is held.
      while (!c->stopping && (c->handling || !c->frames.empty()) && c->queued_bytes + size > read_ahead_bytes)
        co_await wait_for_wake(c->room);
      if (c->stopping) break;
      frame_bytes frame{std::unique_ptr<char[]>(new char[size]), size};
      co_await read_exact(*c, asio::buffer(frame.data.get(), frame.size), ec);
      if (ec || c->stopping) break;
      c->queued_bytes += frame.size;
      c->frames.push_back(std::move(frame));
      c->frame_ready.cancel();
    }
    c->reader_done = true;
    c->frame_ready.cancel();
  }

  static asio::awaitable<void> serve(std::shared_ptr<impl> self, std::shared_ptr<connection> c) {
    kafka_api::session session = self->api.open_session();
    frame_bytes frame;
    asio::error_code ec;
    if (self->tls) {
      SSL* ssl = SSL_new(self->tls->native());
      if (!ssl) {
        self->forget(c);
        co_return;
      }
      c->tls = std::make_unique<asio::ssl::stream<tcp::socket&>>(c->socket, ssl);
      co_await c->tls->async_handshake(asio::ssl::stream_base::server, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        self->forget(c);
        co_return;
      }
    }
    c->authenticated = session.authenticated;
    // However the reader ends (an exception included), the handler hears of it.
    asio::co_spawn(self->io, read_frames(self, c), [c](const std::exception_ptr&) {
      c->reader_done = true;
      c->frame_ready.cancel();
    });
    for (;;) {
      if (session.authenticated && !c->admitted) {
        c->admitted = true;
        c->deadline.cancel();
      }
      while (c->frames.empty() && !c->reader_done && !c->stopping) co_await wait_for_wake(c->frame_ready);
      if (c->frames.empty() || c->stopping) break;
      frame = std::move(c->frames.front());
      c->frames.pop_front();
      c->queued_bytes -= frame.size;
      c->handling = true;
      c->room.cancel();
      auto handle = [&self, &session, &frame](bool final_attempt) {
        return self->api.handle(session, frame.view(), final_attempt);
      };
      // A produce appended here at once, or a fetch read from the page cache, is answered on the reactor: a hop to a
      // handler thread and back cost more than the work (docs/kafka.md, "Threads"). Anything that may wait goes to a
      // handler thread.
      kafka_api::reply reply;
      if (auto now = self->api.handle_at_once(session, frame.view()))
        reply = std::move(*now);
      else
        reply = co_await offload(self->handlers.get_executor(), [&handle] { return handle(false); });
      if (reply.wait_ms > 0) {
        // A fetch that found nothing waits on the reactor, not on a handler thread, and asks again.
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(reply.wait_ms);
        asio::steady_timer timer(self->io);
        do {
          timer.expires_after(fetch_poll);
          co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
          if (ec || !c->socket.is_open()) break;
          const bool last = std::chrono::steady_clock::now() >= until;
          reply = co_await offload(self->handlers.get_executor(), [&handle, last] { return handle(last); });
        } while (reply.wait_ms > 0);
        if (reply.wait_ms > 0) break;
      }
      c->authenticated = session.authenticated;
      c->handling = false;
      c->room.cancel();
      if (reply.bytes) {
        co_await write_all(*c, asio::buffer(*reply.bytes), ec);
        if (ec) break;
      }
      if (reply.close) break;
    }
    self->forget(c);
  }
};

kafka_listener::~kafka_listener() { stop(); }

result<std::unique_ptr<kafka_listener>> kafka_listener::start(const cluster::server_config& cfg, kafka_api& api) {
  std::unique_ptr<kafka_listener> l(new kafka_listener());
  l->m_ = std::make_shared<impl>(cfg, api);
  auto& m = *l->m_;
  if (const auto& t = cfg.kafka->tls) {
    auto context = transport::tls_context::create(
        transport::tls_options{t->cert_file, t->key_file, t->ca_file, t->verify_peer}, transport::tls_context::side::server);
    if (!context) return error{context.code(), "Server.Kafka.Tls: " + context.message()};
    m.tls = std::move(*context);
  }
  asio::error_code ec;
  const auto address = asio::ip::make_address(cfg.kafka->host, ec);
  const std::string where = "Server.Kafka: " + cfg.kafka->host + ":" + std::to_string(cfg.kafka->port);
  if (ec) return error{errc::invalid_argument, where + ": not an IP address"};
  tcp::endpoint endpoint(address, cfg.kafka->port);
  m.acceptor.open(endpoint.protocol(), ec);
  if (!ec) m.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) m.acceptor.bind(endpoint, ec);
  if (!ec) m.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return error{errc::io_error, where + ": cannot listen: " + ec.message()};
  asio::co_spawn(m.io, m.accept_loop(), asio::detached);
  m.thread = std::thread([&m] { m.io.run(); });
  return l;
}

std::uint16_t kafka_listener::port() const { return m_ ? m_->acceptor.local_endpoint().port() : 0; }

void kafka_listener::stop() {
  if (!m_ || !m_->thread.joinable()) return;
  auto& m = *m_;
  m.io.stop();
  m.thread.join();
  // The reactor is stopped: its state is this thread's. Close everything, then run the reactor until every
  // connection's coroutine has seen its socket closed and ended (a handler under way finishes on the pool first).
  asio::error_code ignored;
  m.acceptor.close(ignored);
  for (auto& c : m.open) {
    impl::close(*c);
    impl::wake_all(*c);
  }
  m.work.reset();
  m.io.restart();
  m.io.run();
  m.handlers.join();
}

}  // namespace moonmq::daemon
