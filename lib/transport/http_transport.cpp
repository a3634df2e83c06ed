#include "moonmq/transport/http_transport.hpp"

#include <httplib.h>

#include "transport/http1.hpp"
#include "transport/http_server_setup.hpp"
#include "transport/plain_http_listener.hpp"
#include "transport/tcp_stream.hpp"

#include <asio/co_spawn.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_awaitable.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace moonmq::transport {

namespace {

std::string with_query(const std::string& path, const std::map<std::string, std::string>& params) {
  if (params.empty()) return path;
  httplib::Params p(params.begin(), params.end());
  return httplib::append_query_params(path, p);
}

/// The most a peer's answer may hold (a fetch of migration frames is a few MiB at most).
constexpr std::size_t max_answer_bytes = 256u << 20;
constexpr std::size_t max_answer_head_bytes = 64u << 10;
/// An idle plain connection is not reused after this long: the peer's listener closes it after 30 s idle
/// (plain_listener_limits), and reusing one it is closing at that moment would fail the request.
constexpr auto max_idle = std::chrono::seconds(20);

/// One peer: a few reusable connections and the threads that use them. Plain connections speak the project's own
/// HTTP/1.1 framing (http1.hpp: one system call to send a request, usually one to receive the answer); TLS ones go
/// through cpp-httplib.
class peer_channel {
 public:
  peer_channel(http_peer peer, const std::optional<tls_options>& tls, std::size_t connections)
      : peer_(std::move(peer)), tls_(tls), threads_(connections) {}

  ~peer_channel() { threads_.join(); }

  asio::thread_pool& threads() { return threads_; }

  /// Blocking: runs on one of this peer's threads, or on a caller that may block.
  response call(const request& req, std::chrono::milliseconds timeout) {
    return tls_ ? call_tls(req, timeout) : call_plain(req, timeout);
  }

 private:
  struct idle_connection {
    tcp_stream stream;
    std::chrono::steady_clock::time_point since;
  };

  response call_plain(const request& req, std::chrono::milliseconds timeout) {
    tcp_stream s = checkout_plain();
    if (!s.is_open()) {
      auto c = tcp_stream::connect(peer_.host, peer_.port, timeout);
      if (!c) return no_answer(peer_.id, c.message());
      s = std::move(*c);
    }
    s.set_timeout(timeout);
    const std::string host = peer_.host + ":" + std::to_string(peer_.port);
    if (!s.write_all(http1::request_head_text(req, host, req.body.size()), req.body))
      return no_answer(peer_.id, "could not send the request: " + std::string(std::strerror(errno)));
    message_reader reader(s);
    std::string head;
    const auto got = reader.read_head(max_answer_head_bytes, head);
    if (got != message_reader::outcome::ok)
      return no_answer(peer_.id, got == message_reader::outcome::too_large
                                     ? "answered with an oversized head"
                                     : "no answer within " + std::to_string(timeout.count()) +
                                           " ms, or the connection closed");
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
    if (h->keep_alive && !reader.buffered()) checkin_plain(std::move(s));
    return out;
  }

  /// An idle connection the peer still holds open, or a closed stream when there is none.
  tcp_stream checkout_plain() {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu_);
    while (!idle_plain_.empty()) {
      idle_connection c = std::move(idle_plain_.back());
      idle_plain_.pop_back();
      if (now - c.since < max_idle && c.stream.idle_and_open()) return std::move(c.stream);
    }
    return {};
  }

  void checkin_plain(tcp_stream s) {
    std::lock_guard lock(mu_);
    idle_plain_.push_back({std::move(s), std::chrono::steady_clock::now()});
  }

  response call_tls(const request& req, std::chrono::milliseconds timeout) {
    auto client = checkout_tls();
    client->set_connection_timeout(timeout);
    client->set_read_timeout(timeout);
    client->set_write_timeout(timeout);
    httplib::Headers headers;
    for (const auto& [k, v] : req.headers) headers.emplace(k, v);
    const std::string target = with_query(req.path, req.params);
    httplib::Result res = req.method == "GET"
                              ? client->Get(target.c_str(), headers)
                              : client->Post(target.c_str(), headers, req.body, req.content_type.c_str());
    response out;
    if (!res) {
      out = no_answer(peer_.id, httplib::to_string(res.error()));
      // A failed connection is not reused.
      return out;
    }
    out.status = res->status;
    out.body = std::move(res->body);
    out.content_type = res->get_header_value("Content-Type");
    checkin_tls(std::move(client));
    return out;
  }

  std::unique_ptr<httplib::Client> checkout_tls() {
    {
      std::lock_guard lock(mu_);
      if (!idle_tls_.empty()) {
        auto c = std::move(idle_tls_.back());
        idle_tls_.pop_back();
        return c;
      }
    }
    const std::string scheme_host = "https://" + peer_.host + ":" + std::to_string(peer_.port);
    auto c = tls_->cert_file.empty()
                 ? std::make_unique<httplib::Client>(scheme_host)
                 : std::make_unique<httplib::Client>(scheme_host, tls_->cert_file, tls_->key_file);
    if (!tls_->ca_file.empty()) c->set_ca_cert_path(tls_->ca_file.c_str());
    c->enable_server_certificate_verification(tls_->verify_peer);
    c->set_keep_alive(true);
    c->set_tcp_nodelay(true);
    // No Accept-Encoding: the peer would otherwise compress every small JSON answer (brotli/gzip), which costs more
    // on loopback or a LAN than sending it as it is.
    c->set_decompress(false);
    return c;
  }

  void checkin_tls(std::unique_ptr<httplib::Client> c) {
    std::lock_guard lock(mu_);
    idle_tls_.push_back(std::move(c));
  }

  http_peer peer_;
  std::optional<tls_options> tls_;
  asio::thread_pool threads_;
  std::mutex mu_;
  std::vector<idle_connection> idle_plain_;
  std::vector<std::unique_ptr<httplib::Client>> idle_tls_;
};

class http_transport final : public transport {
 public:
  explicit http_transport(const http_transport_options& o) {
    for (const auto& p : o.peers)
      channels_.emplace(p.id,
                        std::make_unique<peer_channel>(p, o.tls, std::max<std::size_t>(1, o.connections_per_peer)));
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

class listener final : public http_listener {
 public:
  listener(std::unique_ptr<httplib::Server> s, std::uint16_t port) : server_(std::move(s)), port_(port) {
    thread_ = std::thread([this] { server_->listen_after_bind(); });
  }
  ~listener() override { stop(); }
  std::uint16_t port() const override { return port_; }
  void stop() override {
    server_->stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::unique_ptr<httplib::Server> server_;
  std::uint16_t port_;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<transport> make_http_transport(const http_transport_options& options) {
  return std::make_unique<http_transport>(options);
}

result<std::unique_ptr<http_listener>> start_http_listener(const http_listener_options& o,
                                                           http_listener::handler handler) {
  if (!o.tls) return start_plain_http_listener(o, std::move(handler));
  for (const auto* f : {&o.tls->cert_file, &o.tls->key_file})
    if (f->empty() || !std::ifstream(*f)) return error{errc::invalid_argument, "cannot read TLS file '" + *f + "'"};
  const char* client_ca = o.tls->verify_peer && !o.tls->ca_file.empty() ? o.tls->ca_file.c_str() : nullptr;
  auto server = std::make_unique<httplib::SSLServer>(o.tls->cert_file.c_str(), o.tls->key_file.c_str(), client_ca);
  if (!server->is_valid())
    return error{errc::invalid_argument, "TLS certificate " + o.tls->cert_file + " or key " + o.tls->key_file +
                                             (client_ca ? " or CA " + o.tls->ca_file : std::string()) +
                                             " could not be loaded"};
  setup_http_server(*server);
  server->set_payload_max_length(o.max_body_bytes);
  auto serve = [handler, prefix = o.path_prefix](const httplib::Request& in, httplib::Response& out) {
    request req;
    req.method = in.method;
    req.path = in.path;
    for (const auto& [k, v] : in.params) req.params[k] = v;
    for (const char* h : {header_token, header_epoch, header_controller, header_from})
      if (in.has_header(h)) req.headers[h] = in.get_header_value(h);
    req.body = in.body;
    req.content_type = in.get_header_value("Content-Type");
    response r = serve_request(prefix, handler, req);
    out.status = r.status;
    out.set_content(std::move(r.body), r.content_type.empty() ? "application/json" : r.content_type.c_str());
  };
  server->Get(".*", serve);
  server->Post(".*", serve);
  server->set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 413 && res.body.empty())
      res.set_content("{\"error\":\"too_large\",\"message\":\"request body too large\"}", "application/json");
  });
  int port =
      o.port ? (server->bind_to_port(o.host.c_str(), o.port) ? o.port : -1) : server->bind_to_any_port(o.host.c_str());
  if (port <= 0)
    return error{errc::unavailable,
                 "cannot listen on " + o.host + ":" + std::to_string(o.port) + " (address in use or not available)"};
  return std::unique_ptr<http_listener>(
      std::make_unique<listener>(std::move(server), static_cast<std::uint16_t>(port)));
}

}  // namespace moonmq::transport
