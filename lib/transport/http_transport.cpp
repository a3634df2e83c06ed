#include "moonmq/transport/http_transport.hpp"

#include <httplib.h>

#include "transport/http_server_setup.hpp"

#include <asio/co_spawn.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_awaitable.hpp>
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

/// One peer: a few reusable connections and the threads that use them.
class peer_channel {
 public:
  peer_channel(http_peer peer, const std::optional<tls_options>& tls, std::size_t connections)
      : peer_(std::move(peer)), tls_(tls), threads_(connections) {}

  ~peer_channel() { threads_.join(); }

  asio::thread_pool& threads() { return threads_; }

  /// Blocking: runs on one of this peer's threads.
  response call(const request& req, std::chrono::milliseconds timeout) {
    auto client = checkout();
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
    checkin(std::move(client));
    return out;
  }

 private:
  std::unique_ptr<httplib::Client> checkout() {
    {
      std::lock_guard lock(mu_);
      if (!idle_.empty()) {
        auto c = std::move(idle_.back());
        idle_.pop_back();
        return c;
      }
    }
    std::unique_ptr<httplib::Client> c;
    if (tls_) {
      const std::string scheme_host = "https://" + peer_.host + ":" + std::to_string(peer_.port);
      c = tls_->cert_file.empty() ? std::make_unique<httplib::Client>(scheme_host)
                                  : std::make_unique<httplib::Client>(scheme_host, tls_->cert_file, tls_->key_file);
      if (!tls_->ca_file.empty()) c->set_ca_cert_path(tls_->ca_file.c_str());
      c->enable_server_certificate_verification(tls_->verify_peer);
    } else {
      c = std::make_unique<httplib::Client>(peer_.host, peer_.port);
    }
    c->set_keep_alive(true);
    c->set_tcp_nodelay(true);
    // No Accept-Encoding: the peer would otherwise compress every small JSON answer (brotli/gzip), which costs more
    // on loopback or a LAN than sending it as it is.
    c->set_decompress(false);
    return c;
  }

  void checkin(std::unique_ptr<httplib::Client> c) {
    std::lock_guard lock(mu_);
    idle_.push_back(std::move(c));
  }

  http_peer peer_;
  std::optional<tls_options> tls_;
  asio::thread_pool threads_;
  std::mutex mu_;
  std::vector<std::unique_ptr<httplib::Client>> idle_;
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
  std::unique_ptr<httplib::Server> server;
  if (o.tls) {
    for (const auto* f : {&o.tls->cert_file, &o.tls->key_file})
      if (f->empty() || !std::ifstream(*f)) return error{errc::invalid_argument, "cannot read TLS file '" + *f + "'"};
    const char* client_ca = o.tls->verify_peer && !o.tls->ca_file.empty() ? o.tls->ca_file.c_str() : nullptr;
    auto ssl = std::make_unique<httplib::SSLServer>(o.tls->cert_file.c_str(), o.tls->key_file.c_str(), client_ca);
    if (!ssl->is_valid())
      return error{errc::invalid_argument, "TLS certificate " + o.tls->cert_file + " or key " + o.tls->key_file +
                                               (client_ca ? " or CA " + o.tls->ca_file : std::string()) +
                                               " could not be loaded"};
    server = std::move(ssl);
  } else {
    server = std::make_unique<httplib::Server>();
  }
  setup_http_server(*server);
  server->set_payload_max_length(o.max_body_bytes);
  auto serve = [handler, prefix = o.path_prefix](const httplib::Request& in, httplib::Response& out) {
    if (!in.path.starts_with(prefix)) {
      auto e = error_response(404, "not_found", in.path + " is not served here");
      out.status = e.status;
      out.set_content(e.body, "application/json");
      return;
    }
    request req;
    req.method = in.method;
    req.path = in.path;
    for (const auto& [k, v] : in.params) req.params[k] = v;
    for (const char* h : {header_token, header_epoch, header_controller, header_from})
      if (in.has_header(h)) req.headers[h] = in.get_header_value(h);
    req.body = in.body;
    req.content_type = in.get_header_value("Content-Type");
    response r = handler(req);
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
