#include "transport/http_server.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cerrno>
#include <cstring>
#include <list>
#include <mutex>
#include <system_error>
#include <thread>

#include "transport/http1.hpp"
#include "transport/tcp_stream.hpp"
#include "transport/tls_context.hpp"

namespace moonmq::transport {

namespace {

constexpr std::string_view continue_line = "HTTP/1.1 100 Continue\r\n\r\n";
/// After refusing a body with 413, how much of it to read and discard so that the client sees the answer rather
/// than a reset (closing a socket with unread bytes resets it).
constexpr std::size_t refused_body_drain = 16u << 20;
/// How long an open route's answer to a connection that has not authenticated may take to be made and written, past
/// the connection's time to authenticate.
constexpr std::chrono::milliseconds open_answer_time{2000};

/// "1.2.3.4:5678" or "[::1]:5678".
std::string address_of(const sockaddr_storage& a) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
    return std::string(text) + ":" + std::to_string(ntohs(v4.sin_port));
  }
  if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
    return "[" + std::string(text) + "]:" + std::to_string(ntohs(v6.sin6_port));
  }
  return text;
}

class http_server final : public http_listener {
 public:
  http_server(int fd, std::uint16_t port, http_listener_options options, handler h, http_server_limits limits,
              std::shared_ptr<tls_context> tls)
      : fd_(fd),
        port_(port),
        options_(std::move(options)),
        handler_(std::move(h)),
        limits_(limits),
        tls_(std::move(tls)) {
    acceptor_ = std::thread([this] { accept_loop(); });
    watchdog_ = std::thread([this] { watch(); });
  }
  ~http_server() override { stop(); }

  std::uint16_t port() const override { return port_; }

  void stop() override {
    std::lock_guard once(stop_mu_);
    if (stopped_) return;
    stopping_ = true;
    ::shutdown(fd_, SHUT_RDWR);  // wakes accept()
    if (acceptor_.joinable()) acceptor_.join();
    {
      std::lock_guard lock(watch_mu_);
      watch_wake_.notify_all();
    }
    if (watchdog_.joinable()) watchdog_.join();
    ::close(fd_);
    // The acceptor is gone, so the list no longer grows: wake every connection and wait for it.
    std::lock_guard lock(list_mu_);
    for (auto& c : connections_) c->stream.shutdown_both();
    for (auto& c : connections_)
      if (c->thread.joinable()) c->thread.join();
    connections_.clear();
    stopped_ = true;
  }

 private:
  using clock = std::chrono::steady_clock;

  struct connection {
    tcp_stream stream;
    std::string client;  ///< address:port, for refusals
    std::thread thread;
    clock::time_point accepted = clock::now();
    std::atomic<bool> done{false};
    std::atomic<bool> authenticated{false};  ///< has sent an authenticated request
    std::atomic<bool> cut{false};            ///< closed by the listener (evicted or past its deadline)
    std::atomic<clock::rep> deadline{0};     ///< when the watchdog closes it (0: none)

    void set_deadline(clock::duration from_now) { deadline = (clock::now() + from_now).time_since_epoch().count(); }
    void clear_deadline() { deadline = 0; }
  };

  void refused(refusal_reason why, const std::string& client, const std::string& detail) const {
    if (options_.on_refused) options_.on_refused(why, client, detail);
  }

  void accept_loop() {
    while (!stopping_) {
      sockaddr_storage from{};
      socklen_t from_len = sizeof from;
      const int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&from), &from_len, SOCK_CLOEXEC);
      if (fd < 0) {
        if (stopping_) return;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));  // out of descriptors: let some close
        continue;
      }
      auto c = std::make_unique<connection>();
      c->stream = tcp_stream(fd);
      c->client = address_of(from);
      c->set_deadline(limits_.auth_timeout);
      std::size_t open = 0;
      {
        std::lock_guard lock(list_mu_);
        reap();
        make_room_for_unauthenticated();
        for (const auto& other : connections_) open += !other->done && !other->cut ? 1 : 0;
      }
      if (open >= limits_.max_connections) {
        // Without TLS the client learns why; with it, a handshake here would let one client stall the acceptor.
        c->stream.set_timeout(std::chrono::milliseconds(1000));
        if (!tls_) answer(c->stream, error_response(503, "unavailable", "too many connections"), true);
        refused(refusal_reason::busy, c->client, std::to_string(open) + " connections open");
        continue;
      }
      connection* raw = c.get();
      try {
        raw->thread = std::thread([this, raw] {
          serve(*raw);
          raw->stream.shutdown_both();  // the peer sees the end now; the descriptor goes when reaped
          raw->done = true;
        });
      } catch (const std::system_error&) {  // out of threads: refuse this one, keep serving the others
        if (!tls_) answer(c->stream, error_response(503, "unavailable", "cannot serve another connection"), true);
        refused(refusal_reason::busy, c->client, "cannot start a thread for it");
        continue;
      }
      std::lock_guard lock(list_mu_);
      connections_.push_back(std::move(c));
    }
  }

  /// Evicts the oldest unauthenticated connections while there are `max_unauthenticated` or more, so that the one
  /// being accepted has a slot. REQUIRES: list_mu_ held.
  void make_room_for_unauthenticated() {
    std::vector<connection*> waiting;
    for (auto& c : connections_)
      if (!c->done && !c->authenticated && !c->cut) waiting.push_back(c.get());
    if (waiting.size() < limits_.max_unauthenticated) return;
    std::sort(waiting.begin(), waiting.end(), [](auto* a, auto* b) { return a->accepted < b->accepted; });
    for (std::size_t i = 0; i + limits_.max_unauthenticated <= waiting.size(); ++i) {
      cut(*waiting[i], refusal_reason::unauthenticated,
          "evicted: " + std::to_string(waiting.size()) + " connections had not authenticated yet");
    }
  }

  void cut(connection& c, refusal_reason why, const std::string& detail) {
    if (c.cut.exchange(true)) return;
    refused(why, c.client, detail);
    c.stream.shutdown_both();
  }

  /// Closes connections past their deadline (a request or handshake that did not arrive in time).
  void watch() {
    const auto tick = std::max(std::chrono::milliseconds(10),
                               std::min({limits_.auth_timeout, limits_.request_timeout}) / 20);
    std::unique_lock wait(watch_mu_);
    while (!stopping_) {
      watch_wake_.wait_for(wait, tick);
      const auto now = clock::now().time_since_epoch().count();
      std::lock_guard lock(list_mu_);
      for (auto& c : connections_) {
        const auto d = c->deadline.load();
        if (d != 0 && d < now && !c->done)
          cut(*c, c->authenticated ? refusal_reason::slow : refusal_reason::unauthenticated,
              c->authenticated ? "a request did not arrive whole within " +
                                     std::to_string(limits_.request_timeout.count()) + " ms"
                               : "no authenticated request within " + std::to_string(limits_.auth_timeout.count()) +
                                     " ms of connecting");
      }
    }
  }

  /// Joins connections that ended. REQUIRES: list_mu_ held.
  void reap() {
    for (auto it = connections_.begin(); it != connections_.end();) {
      if ((*it)->done) {
        (*it)->thread.join();
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
  }

  /// Whether `bytes` start like an HTTP/1 request line ("GET ", "POST", ...).
  static bool looks_like_http(const std::string& bytes) {
    for (char c : bytes)
      if (c == ' ') return true;
      else if (c < 'A' || c > 'Z') return false;
    return true;
  }

  /// `head_only`: the answer to a HEAD request (the fields of the GET's answer, no body).
  static bool answer(tcp_stream& s, const response& r, bool close, bool head_only = false) {
    const std::string type = r.content_type.empty() ? "application/json" : r.content_type;
    return s.write_all(http1::response_head_text(r.status, type, r.body.size(), close, r.headers),
                       head_only ? std::string_view() : std::string_view(r.body));
  }

  void serve(connection& c) {
    tcp_stream& s = c.stream;
    const std::string& client = c.client;
    s.set_timeout(limits_.idle_timeout);
    // A peer configured the other way round (one side with Cluster.Tls, the other without) is told so at once, on
    // both sides, instead of waiting for a timeout: its first bytes say which it speaks.
    const std::string first = s.peek(5);
    const bool client_hello = !first.empty() && first[0] == '\x16';  // a TLS handshake record
    if (tls_ && !first.empty() && !client_hello && looks_like_http(first)) {
      refused(refusal_reason::tls, client,
              "a plain HTTP client reached this TLS listener: set Cluster.Tls on that broker too");
      answer(s,
             error_response(400, "tls_required",
                            "this cluster endpoint speaks TLS (Cluster.Tls): set Cluster.Tls on the calling broker too"),
             true);
      return;
    }
    if (!tls_ && client_hello) {
      refused(refusal_reason::tls, client,
              "a TLS client reached this plain listener: that broker has Cluster.Tls set, this one does not");
      return;  // the client's handshake ends here, and it says the peer does not speak TLS
    }
    if (tls_) {
      if (auto t = s.start_tls_server(*tls_); !t) {  // e.g. no trusted client certificate under mutual TLS
        if (!c.cut) refused(refusal_reason::tls, client, t.message());
        return;
      }
      // Under mutual TLS the handshake proved a certificate the CA signed: no longer an anonymous connection that
      // a flood of new ones may evict (each request is still checked).
      if (options_.tls && options_.tls->verify_peer) c.authenticated = true;
    }
    message_reader reader(s);
    std::string head;
    while (!stopping_) {
      const auto got = reader.read_head(limits_.max_head_bytes, head);
      if (got == message_reader::outcome::too_large) {
        refused(refusal_reason::malformed, client, "request head over " + std::to_string(limits_.max_head_bytes));
        answer(s,
               error_response(431, "too_large",
                              "request head exceeds " + std::to_string(limits_.max_head_bytes) + " bytes"),
               true);
        return;
      }
      if (got != message_reader::outcome::ok) return;
      // An authenticated connection has request_timeout for the rest of this request; one that has not
      // authenticated keeps the deadline it was given when accepted, whatever it sends.
      if (c.authenticated) c.set_deadline(limits_.request_timeout);
      auto parsed = http1::parse_request_head(head);
      if (auto* no = std::get_if<http1::refusal>(&parsed)) {
        refused(refusal_reason::malformed, client, std::to_string(no->status) + ": " + no->message);
        answer(s, error_response(no->status, "invalid_request", no->message), true);
        return;
      }
      auto& h = std::get<http1::request_head>(parsed);
      const bool head_only = h.method == "HEAD";
      // Before any route sees it: a route table may match paths with regular expressions, whose cost grows with
      // the path.
      if (h.path.size() > limits_.max_path_bytes) {
        refused(refusal_reason::malformed, client, "414: a path of " + std::to_string(h.path.size()) + " bytes");
        answer(s,
               error_response(414, "uri_too_long",
                              "the path exceeds " + std::to_string(limits_.max_path_bytes) + " bytes"),
               true, head_only);
        ::shutdown(s.fd(), SHUT_WR);  // and read what follows, so that the client sees the answer, not a reset
        reader.drain(std::min<std::size_t>(h.content_length, 64u << 10));
        return;
      }
      request req;
      req.method = std::move(h.method);
      req.path = std::move(h.path);
      req.params = std::move(h.params);
      for (const char* name : {header_token, header_epoch, header_controller, header_from})
        if (const auto* v = h.headers.find(name)) req.headers[name] = *v;
      for (const auto& name : options_.kept_headers)
        if (const auto* v = h.headers.find(name)) req.headers[name] = *v;
      const auto* type = h.headers.find("Content-Type");
      req.content_type = type ? *type : std::string();
      req.peer_names = s.peer_certificate_names();
      // Credentials first: nothing of the body is read, buffered or even asked for (100-continue) before them.
      auto verdict = admission::trust();
      if (options_.admit)
        verdict = options_.admit(req);
      else if (options_.authenticate && !options_.authenticate(req))
        verdict = admission::refuse(error_response(401, "unauthorized", "missing or wrong credentials"));
      // A request without credentials carries no body: an open route is for reading (health, metrics, files).
      if (verdict.kind == admission::verdict::open && h.content_length > 0)
        verdict = admission::refuse(error_response(401, "unauthorized",
                                                   "a request with a body needs credentials (Authorization)"));
      if (verdict.kind == admission::verdict::refused) {
        const int status = verdict.refusal.status;
        refused(status == 403 ? refusal_reason::forbidden : refusal_reason::unauthenticated, client,
                req.method + " " + req.path +
                    (status == 401 ? std::string(" without valid credentials")
                                   : " refused with " + std::to_string(status)));
        answer(s, verdict.refusal, true, head_only);
        ::shutdown(s.fd(), SHUT_WR);
        reader.drain(std::min<std::size_t>(h.content_length, 64u << 10));
        return;
      }
      if (verdict.kind == admission::verdict::trusted && !c.authenticated) {
        c.authenticated = true;
        c.set_deadline(limits_.request_timeout);
      }
      if (h.content_length > options_.max_body_bytes) {
        refused(refusal_reason::too_large, client, "request body of " + std::to_string(h.content_length) + " bytes");
        answer(s,
               error_response(413, "too_large",
                              "request body of " + std::to_string(h.content_length) + " bytes exceeds the limit of " +
                                  std::to_string(options_.max_body_bytes)),
               true, head_only);
        ::shutdown(s.fd(), SHUT_WR);
        reader.drain(std::min(h.content_length, refused_body_drain));
        return;
      }
      if (h.expect_continue && h.content_length > 0 && !s.write_all(continue_line)) return;
      if (!reader.read_body(h.content_length, req.body)) return;
      // An open route's answer is not cut by the time to authenticate running out while it is made: it gets that
      // time or open_answer_time, whichever ends later, and if the time to authenticate is over by then, it is the
      // last answer on this connection. So a connection that never authenticates is closed at most
      // open_answer_time after its deadline, whatever it asks for.
      const auto must_authenticate_by = c.accepted + limits_.auth_timeout;
      if (c.authenticated)
        c.clear_deadline();
      else
        c.deadline = std::max(must_authenticate_by, clock::now() + open_answer_time).time_since_epoch().count();
      response r;
      try {
        r = req.path.starts_with(options_.path_prefix)
                ? handler_(req)
                : error_response(404, "not_found", req.path + " is not served here");
      } catch (const std::exception& e) {
        r = error_response(500, "internal", e.what());
      }
      const bool close = !h.keep_alive || stopping_ || (!c.authenticated && clock::now() >= must_authenticate_by);
      if (!answer(s, r, close, head_only) || close) return;
      if (!c.authenticated) c.deadline = must_authenticate_by.time_since_epoch().count();
    }
  }

  int fd_;
  std::uint16_t port_;
  http_listener_options options_;
  handler handler_;
  http_server_limits limits_;
  std::shared_ptr<tls_context> tls_;
  std::atomic<bool> stopping_{false};
  std::mutex stop_mu_;
  bool stopped_ = false;
  std::mutex list_mu_;  // guards connections_ (the acceptor, the watchdog, stop())
  std::list<std::unique_ptr<connection>> connections_;
  std::thread acceptor_;
  std::mutex watch_mu_;
  std::condition_variable watch_wake_;
  std::thread watchdog_;
};

}  // namespace

const char* to_string(refusal_reason r) {
  switch (r) {
    case refusal_reason::tls:
      return "tls";
    case refusal_reason::malformed:
      return "malformed";
    case refusal_reason::too_large:
      return "too_large";
    case refusal_reason::busy:
      return "busy";
    case refusal_reason::unauthenticated:
      return "unauthenticated";
    case refusal_reason::slow:
      return "slow";
    case refusal_reason::forbidden:
      return "forbidden";
  }
  return "unknown";
}

result<std::unique_ptr<http_listener>> start_http_server(const http_listener_options& options,
                                                         http_listener::handler handler, http_server_limits limits) {
  std::shared_ptr<tls_context> tls;
  if (options.tls) {
    auto t = tls_context::create(*options.tls, tls_context::side::server);
    if (!t) return t.err();
    tls = std::move(*t);
  }
  const std::string where = options.host + ":" + std::to_string(options.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(options.host.c_str(), std::to_string(options.port).c_str(), &hints, &found); rc != 0)
    return error{errc::unavailable, "cannot listen on " + where + ": " + ::gai_strerror(rc)};
  std::string why = "no address";
  int fd = -1;
  for (auto* a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR for fast restarts; never SO_REUSEPORT, which would let a second broker share the port.
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
      why = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return error{errc::unavailable, "cannot listen on " + where + " (" + why + ")"};
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  const auto port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                      : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return std::unique_ptr<http_listener>(
      std::make_unique<http_server>(fd, port, options, std::move(handler), limits, std::move(tls)));
}

}  // namespace moonmq::transport
