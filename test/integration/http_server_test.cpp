// The cluster listener and the peer client on real loopback sockets: bodies, keep-alive, pipelining, the limits and
// refusals, stale pooled connections, dead peers, stopping with connections open; and the same under TLS, with the
// certificate checks of both sides.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

#include "moonmq/transport/http_transport.hpp"
#include "support/certificates.hpp"
#include "support/process.hpp"
#include "transport/http1.hpp"
#include "transport/http_server.hpp"
#include "transport/tcp_stream.hpp"
#include "support/eventually.hpp"

using namespace moonmq;
using namespace moonmq::transport;
using moonmq::test::certificates;
using moonmq::test::eventually;
using namespace std::chrono_literals;

namespace {

/// Answers with what it was sent: method, path, params, the cluster headers and the body's size and first bytes.
response echo(const request& r) {
  std::string out = r.method + " " + r.path;
  for (const auto& [k, v] : r.params) out += " " + k + "=" + v;
  for (const auto& [k, v] : r.headers) out += " [" + k + ":" + v + "]";
  out += " type=" + r.content_type + " body=" + std::to_string(r.body.size()) + ":" + r.body.substr(0, 16);
  return {200, out, "text/plain"};
}

struct served {
  std::unique_ptr<http_listener> listener;
  std::unique_ptr<transport::transport> client;
  std::atomic<int> calls{0};
  std::mutex mu;
  std::vector<std::string> refusals;  ///< "reason: detail", as the listener reported them
  std::vector<std::string> clients;   ///< the address each came from

  explicit served(http_listener_options o = {}, http_server_limits limits = {},
                  std::optional<tls_options> client_tls = std::nullopt) {
    o.on_refused = [this](refusal_reason why, const std::string& from, const std::string& detail) {
      std::lock_guard lock(mu);  // on a listener thread: no Catch assertions here
      refusals.push_back(std::string(to_string(why)) + ": " + detail);
      clients.push_back(from);
    };
    auto l = start_http_server(
        o,
        [this](const request& r) {
          ++calls;
          if (r.path == "/cluster/slow") std::this_thread::sleep_for(std::chrono::milliseconds(300));
          return echo(r);
        },
        limits);
    REQUIRE(l);
    listener = std::move(*l);
    auto t = make_http_transport({{{"p", "127.0.0.1", listener->port()}}, client_tls, 2});
    REQUIRE(t);
    client = std::move(*t);
  }

  /// The refusals reported, one line each, once there are `at_least` of them (a refusal is reported on the
  /// connection's thread, maybe after the answer), or after 5 s.
  std::string refused(std::size_t at_least = 1) {
    eventually(
        [&] {
          std::lock_guard lock(mu);
          return refusals.size() >= at_least;
        },
        5s, 1ms);
    std::lock_guard lock(mu);
    std::string all;
    for (const auto& r : refusals) all += r + "\n";
    for (const auto& c : clients) CHECK_THAT(c, Catch::StartsWith("127.0.0.1:"));
    return all;
  }

  // The listener goes first: its threads report into the members below.
  ~served() {
    if (listener) listener->stop();
  }

  response call(const request& r, std::chrono::milliseconds timeout = 2000ms) {
    auto out = client->send_now("p", r, timeout);
    REQUIRE(out);
    return *out;
  }

  /// Sends raw bytes on a new connection and returns everything the listener sends back until it closes.
  std::string raw(const std::string& bytes) {
    auto s = tcp_stream::connect("127.0.0.1", listener->port(), 2000ms);
    REQUIRE(s);
    s->set_timeout(5000ms);
    REQUIRE(s->write_all(bytes));
    message_reader reader(*s);
    std::string all;
    reader.read_until_close(1u << 20, all);
    return all;
  }
};

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("cluster http: a request reaches the handler whole and its answer comes back", "[http]") {
  served s;
  request r;
  r.path = "/cluster/append";
  r.params = {{"topic", "a b&c=d/é"}, {"partition", "2"}};
  r.headers = {{header_token, "tok"}, {header_epoch, "5"}};
  r.content_type = "application/octet-stream";
  r.body = std::string(3u << 20, 'x');
  r.body.replace(0, 5, "START");
  auto a = s.call(r);
  CHECK(a.status == 200);
  CHECK(a.content_type == "text/plain");
  CHECK(a.body ==
        "POST /cluster/append partition=2 topic=a b&c=d/é [X-Cluster-Token:tok] [X-Controller-Epoch:5] "
        "type=application/octet-stream body=3145728:STARTxxxxxxxxxxx");
  auto g = s.call(get_request("/cluster/loads"));
  CHECK(g.body == "GET /cluster/loads type= body=0:");
  CHECK(s.call(get_request("/v1/topics")).status == 404);  // outside the prefix
  CHECK(s.calls == 2);
}

TEST_CASE("cluster http: pooled keep-alive connections survive a restarted listener", "[http]") {
  served s;
  for (int i = 0; i < 20; ++i) CHECK(s.call(get_request("/cluster/loads")).status == 200);
  // The pooled connection now points at a listener that is gone; a new one takes the same port.
  const auto port = s.listener->port();
  s.listener->stop();
  s.listener.reset();
  CHECK(s.call(get_request("/cluster/loads"), 500ms).status == 0);  // nobody listening: no answer, quickly
  http_listener_options o;
  o.port = port;
  auto again = start_http_server(o, echo);
  REQUIRE(again);
  auto r = s.call(get_request("/cluster/loads"));
  CHECK(r.status == 200);
  CHECK(r.body.starts_with("GET /cluster/loads"));
}

TEST_CASE("cluster http: pipelined requests are answered in order on one connection", "[http]") {
  served s;
  const auto out = s.raw(
      "POST /cluster/a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
      "GET /cluster/b?x=1 HTTP/1.1\r\n\r\n"
      "GET /cluster/c HTTP/1.1\r\nConnection: close\r\n\r\n");
  const auto a = out.find("POST /cluster/a"), b = out.find("GET /cluster/b x=1"), c = out.find("GET /cluster/c");
  CHECK(count(out, "HTTP/1.1 200 OK") == 3);
  CHECK(a < b);
  CHECK(b < c);
  CHECK(c != std::string::npos);
  CHECK(out.find("Connection: close") != std::string::npos);
}

TEST_CASE("cluster http: a request arriving a byte at a time is read whole", "[http]") {
  served s;
  auto c = tcp_stream::connect("127.0.0.1", s.listener->port(), 2000ms);
  REQUIRE(c);
  const std::string req = "POST /cluster/x?k=v HTTP/1.1\r\nX-Cluster-From: b9\r\nContent-Length: 4\r\n\r\nbody";
  for (char ch : req) {
    REQUIRE(c->write_all(std::string_view(&ch, 1)));
    std::this_thread::sleep_for(100us);
  }
  c->set_timeout(2000ms);
  message_reader reader(*c);
  std::string head, body;
  REQUIRE(reader.read_head(1 << 16, head) == message_reader::outcome::ok);
  auto parsed = http1::parse_response_head(head);
  REQUIRE(parsed);
  CHECK(parsed->status == 200);
  REQUIRE(parsed->content_length);
  REQUIRE(reader.read_body(*parsed->content_length, body));
  CHECK(body.starts_with("POST /cluster/x k=v [X-Cluster-From:b9] type= body=4:body"));
}

TEST_CASE("cluster http: limits and refusals answer with a status and nothing reaches the handler", "[http]") {
  http_listener_options o;
  o.max_body_bytes = 1u << 20;
  http_server_limits limits;
  limits.max_head_bytes = 4096;
  served s(o, limits);
  SECTION("a body over the limit is 413, and the client reads the answer rather than a reset") {
    request r;
    r.path = "/cluster/append";
    r.body = std::string((1u << 20) + 1, 'x');
    auto a = s.call(r);
    CHECK(a.status == 413);
    CHECK(a.body.find("exceeds the limit of 1048576") != std::string::npos);
    CHECK(s.call(get_request("/cluster/loads")).status == 200);  // the pool dropped that connection
    CHECK(s.refused() == "too_large: request body of 1048577 bytes\n");
  }
  SECTION("a head over the limit is 431") {
    auto out = s.raw("GET /cluster/x HTTP/1.1\r\nX-Big: " + std::string(8000, 'b') + "\r\n\r\n");
    CHECK(out.starts_with("HTTP/1.1 431 "));
    CHECK(s.refused() == "malformed: request head over 4096\n");
  }
  SECTION("a chunked body is 411, a malformed head 400, and the connection closes") {
    CHECK(s.raw("POST /cluster/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
              .starts_with("HTTP/1.1 411 "));
    auto bad = s.raw("GARBAGE\r\n\r\n");
    CHECK(bad.starts_with("HTTP/1.1 400 "));
    CHECK(bad.find("\"error\":\"invalid_request\"") != std::string::npos);
    CHECK(s.refused(2) ==
          "malformed: 411: Transfer-Encoding is not supported; send a Content-Length\n"
          "malformed: 400: malformed request line\n");
  }
  CHECK(s.calls <= 1);  // only the follow-up GET of the first section
}

TEST_CASE("cluster http: a half-sent request never reaches the handler, and its connection is freed", "[http]") {
  http_server_limits limits;
  limits.max_connections = 1;
  limits.request_timeout = 300ms;
  served s({}, limits);
  SECTION("when its sender goes away") {
    {
      auto c = tcp_stream::connect("127.0.0.1", s.listener->port(), 2000ms);
      REQUIRE(c);
      REQUIRE(c->write_all("POST /cluster/x HTTP/1.1\r\nContent-Length: 100\r\n\r\nonly part"));
    }
  }
  SECTION("when the rest does not come within the request deadline") {
    auto c = tcp_stream::connect("127.0.0.1", s.listener->port(), 2000ms);
    REQUIRE(c);
    REQUIRE(c->write_all("POST /cluster/x HTTP/1.1\r\nContent-Length: 100\r\n\r\nonly part"));
    CHECK_THAT(s.refused(), Catch::StartsWith("slow: a request did not arrive whole within 300 ms"));
  }
  // The only slot is free again: a new connection is served (not 503), and the half-sent request was never handled.
  std::string answer;
  for (auto until = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < until;) {
    answer = s.raw("GET /cluster/x HTTP/1.1\r\nConnection: close\r\n\r\n");
    if (answer.starts_with("HTTP/1.1 200 ")) break;
  }
  CHECK(answer.starts_with("HTTP/1.1 200 "));
  CHECK(s.calls == 1);
}

TEST_CASE("cluster http: credentials are checked on the head, before any of the body is read or buffered",
          "[http][auth]") {
  http_listener_options o;
  o.authenticate = [](const request& head) {
    auto t = head.headers.find(header_token);
    return t != head.headers.end() && t->second == "secret" && head.body.empty();
  };
  served s(o);
  // A head declaring 60 MB with no token: 401 at once, although not one body byte was sent.
  auto c = tcp_stream::connect("127.0.0.1", s.listener->port(), 2000ms);
  REQUIRE(c);
  c->set_timeout(2000ms);
  REQUIRE(c->write_all("POST /cluster/append HTTP/1.1\r\nContent-Length: 60000000\r\n\r\n"));
  message_reader reader(*c);
  std::string head;
  REQUIRE(reader.read_head(1 << 16, head) == message_reader::outcome::ok);
  CHECK(head.starts_with("HTTP/1.1 401 "));
  CHECK_THAT(s.refused(), Catch::StartsWith("unauthenticated: POST /cluster/append without valid credentials"));
  CHECK(s.calls == 0);
  request good = get_request("/cluster/loads");
  good.headers[header_token] = "secret";
  CHECK(s.call(good).status == 200);
}

namespace {
/// This process's resident memory in bytes.
std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}
}  // namespace

TEST_CASE("cluster http: a declared body length that the bytes never follow costs no memory", "[http][limits]") {
  http_listener_options o;
  o.authenticate = [](const request&) { return true; };  // even from an authenticated sender
  served s(o);
  const std::size_t before = resident_bytes();
  std::vector<tcp_stream> open;
  for (int i = 0; i < 20; ++i) {
    auto c = tcp_stream::connect("127.0.0.1", s.listener->port(), 2000ms);
    REQUIRE(c);
    REQUIRE(c->write_all("POST /cluster/append HTTP/1.1\r\nContent-Length: 60000000\r\n\r\n0123456789"));
    open.push_back(std::move(*c));
  }
  // Each has been read up to where its bytes stop: a request that answers shows the listener got past them all.
  request probe = get_request("/cluster/loads");
  CHECK(s.call(probe).status == 200);
  // 20 x 60 MB would be 1.2 GB sized from the headers; what arrived is 200 bytes.
  CHECK(resident_bytes() < before + (64u << 20));
}

TEST_CASE("cluster http: connections that never authenticate cannot crowd out a peer", "[http][limits]") {
  http_listener_options o;
  o.authenticate = [](const request& head) {
    auto t = head.headers.find(header_token);
    return t != head.headers.end() && t->second == "secret";
  };
  http_server_limits limits;
  limits.max_unauthenticated = 16;
  limits.max_connections = 64;
  served s(o, limits);
  // 300 connections that dribble a request head (slowloris) and never finish it.
  std::vector<tcp_stream> hostile;
  for (int i = 0; i < 300; ++i) {
    auto c = tcp_stream::connect("127.0.0.1", s.listener->port(), 2000ms);
    REQUIRE(c);
    (void)c->write_all("POST /cluster/append HTT");
    hostile.push_back(std::move(*c));
  }
  // A peer's requests, on fresh connections each time, are still answered at once.
  auto client = make_http_transport({{{"p", "127.0.0.1", s.listener->port()}}, {}, 2});
  REQUIRE(client);
  for (int i = 0; i < 20; ++i) {
    request r = get_request("/cluster/loads");
    r.headers[header_token] = "secret";
    auto started = std::chrono::steady_clock::now();
    auto out = (*client)->send_now("p", r, 2000ms);
    REQUIRE(out);
    CHECK(out->status == 200);
    CHECK(std::chrono::steady_clock::now() - started < 1000ms);
  }
  CHECK_THAT(s.refused(), Catch::Contains("unauthenticated: evicted"));
}

TEST_CASE("cluster http: a connection that does not authenticate in time is closed", "[http][limits]") {
  http_listener_options o;
  o.authenticate = [](const request&) { return true; };
  http_server_limits limits;
  limits.auth_timeout = 200ms;
  served s(o, limits);
  auto c = tcp_stream::connect("127.0.0.1", s.listener->port(), 2000ms);
  REQUIRE(c);
  c->set_timeout(5000ms);
  char byte = 0;
  CHECK(c->read_some(&byte, 1) <= 0);  // closed by the listener, well before the 5 s receive timeout
  CHECK_THAT(s.refused(), Catch::StartsWith("unauthenticated: no authenticated request within 200 ms"));
}

TEST_CASE("cluster http: Expect 100-continue gets the interim answer before the body is sent", "[http]") {
  served s;
  auto c = tcp_stream::connect("127.0.0.1", s.listener->port(), 2000ms);
  REQUIRE(c);
  c->set_timeout(2000ms);
  REQUIRE(c->write_all("POST /cluster/x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"));
  message_reader reader(*c);
  std::string head;
  REQUIRE(reader.read_head(1 << 16, head) == message_reader::outcome::ok);
  CHECK(head == "HTTP/1.1 100 Continue\r\n\r\n");
  REQUIRE(c->write_all("hello"));
  REQUIRE(reader.read_head(1 << 16, head) == message_reader::outcome::ok);
  CHECK(head.starts_with("HTTP/1.1 200 OK"));
}

TEST_CASE("cluster http: connections over the limit get 503", "[http]") {
  http_server_limits limits;
  limits.max_connections = 1;
  served s({}, limits);
  auto first = tcp_stream::connect("127.0.0.1", s.listener->port(), 2000ms);
  REQUIRE(first);
  first->set_timeout(2000ms);
  REQUIRE(first->write_all("GET /cluster/x HTTP/1.1\r\n\r\n"));  // answered: the listener has taken it
  message_reader reader(*first);
  std::string head;
  REQUIRE(reader.read_head(1 << 16, head) == message_reader::outcome::ok);
  CHECK(s.raw("GET /cluster/x HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 503 "));
  CHECK(s.refused() == "busy: 1 connections open\n");
}

TEST_CASE("cluster http: a peer that does not answer, or is not there, is status 0 after the deadline", "[http]") {
  // A socket that accepts connections (the kernel does, from its backlog) and never reads or answers.
  int mute = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(mute, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(mute, 8) == 0);
  socklen_t len = sizeof a;
  ::getsockname(mute, reinterpret_cast<sockaddr*>(&a), &len);
  const auto port = ntohs(a.sin_port);
  auto made = make_http_transport({{{"mute", "127.0.0.1", port}, {"gone", "127.0.0.1", 1}}, std::nullopt, 1});
  REQUIRE(made);
  auto& client = *made;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = client->send_now("mute", get_request("/cluster/loads"), 300ms);
  const auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE(r);
  CHECK(r->status == 0);
  CHECK(r->body.find("no answer within 300 ms") != std::string::npos);
  CHECK(took >= 290ms);
  CHECK(took < 2s);
  auto refused = client->send_now("gone", get_request("/cluster/loads"), 300ms);
  REQUIRE(refused);
  CHECK(refused->status == 0);
  CHECK(refused->body.find("cannot connect to 127.0.0.1:1") != std::string::npos);
  ::close(mute);
}

TEST_CASE("cluster http: stop returns with idle and busy connections open", "[http]") {
  served s;
  CHECK(s.call(get_request("/cluster/loads")).status == 200);  // an idle pooled connection stays open
  std::thread busy([&] { s.client->send_now("p", get_request("/cluster/slow"), 2000ms); });  // no Catch off main
  eventually([&] { return s.calls >= 2; }, 2s, 1ms);  // until the slow request is in the handler
  const auto t0 = std::chrono::steady_clock::now();
  s.listener->stop();
  CHECK(std::chrono::steady_clock::now() - t0 < 2s);
  busy.join();
  s.listener->stop();  // twice is fine
}

namespace {

tls_options node_tls(const certificates& c, bool verify) { return {c.node_cert(), c.node_key(), c.ca(), verify}; }

http_listener_options tls_listener(const certificates& c, bool verify) {
  http_listener_options o;
  o.tls = node_tls(c, verify);
  return o;
}

}  // namespace

TEST_CASE("cluster http: under mutual TLS a trusted peer's requests go through, on reused connections", "[http][tls]") {
  moonmq::test::temp_dir dir;
  const auto certs = moonmq::test::make_certificates(dir.path());
  served s(tls_listener(certs, true), {}, node_tls(certs, true));
  request r;
  r.path = "/cluster/append";
  r.body = std::string(3u << 20, 'y');
  auto big = s.call(r);
  CHECK(big.status == 200);
  CHECK(big.body.find("body=3145728:yyyy") != std::string::npos);
  for (int i = 0; i < 50; ++i) REQUIRE(s.call(get_request("/cluster/loads")).status == 200);
  // A plain-text client gets nothing from a TLS listener, and the listener goes on serving.
  CHECK(s.raw("GET /cluster/loads HTTP/1.1\r\n\r\n").find("200 OK") == std::string::npos);
  CHECK(s.call(get_request("/cluster/loads")).status == 200);
  CHECK(s.calls == 52);
}

TEST_CASE("cluster http: TLS refuses a client without a trusted certificate and a listener with a wrong one",
          "[http][tls]") {
  moonmq::test::temp_dir dir;
  const auto certs = moonmq::test::make_certificates(dir.path());
  auto no_answer_with = [](served& s, const std::string& fragment) {
    auto r = s.call(get_request("/cluster/loads"));
    CHECK(r.status == 0);
    CHECK_THAT(r.body, Catch::Contains(fragment));
  };
  SECTION("client without a certificate, under mutual TLS") {
    served s(tls_listener(certs, true), {}, tls_options{"", "", certs.ca(), true});
    no_answer_with(s, "TLS");  // the handshake fails, or under TLS 1.3 the listener's alert ends the first request
    CHECK(s.calls == 0);
    CHECK_THAT(s.refused(), Catch::StartsWith("tls: TLS handshake failed: "));
  }
  SECTION("client with a self-signed certificate, under mutual TLS") {
    served s(tls_listener(certs, true), {}, tls_options{certs.rogue_cert(), certs.rogue_key(), certs.ca(), true});
    no_answer_with(s, "TLS");
    CHECK(s.calls == 0);
  }
  SECTION("listener whose certificate was issued for another host") {
    http_listener_options o;
    o.tls = tls_options{certs.elsewhere_cert(), certs.elsewhere_key(), certs.ca(), true};
    served s(o, {}, node_tls(certs, true));
    no_answer_with(s, "certificate not accepted");
    CHECK(s.calls == 0);
  }
  SECTION("listener with a certificate no trusted CA signed") {
    http_listener_options o;
    o.tls = tls_options{certs.rogue_cert(), certs.rogue_key(), "", false};
    served s(o, {}, node_tls(certs, true));
    no_answer_with(s, "certificate not accepted");
  }
  SECTION("without verification both sides only encrypt") {
    http_listener_options o;
    o.tls = tls_options{certs.rogue_cert(), certs.rogue_key(), "", false};
    served s(o, {}, tls_options{"", "", "", false});
    CHECK(s.call(get_request("/cluster/loads")).status == 200);
  }
}

TEST_CASE("cluster http: a TLS file that cannot be used is an error naming it", "[http][tls]") {
  moonmq::test::temp_dir dir;
  const auto certs = moonmq::test::make_certificates(dir.path());
  http_listener_options o;
  o.tls = tls_options{dir.path() + "/missing.crt", certs.node_key(), certs.ca(), true};
  auto missing = start_http_listener(o, echo);
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.message(), Catch::Contains("missing.crt"));
  o.tls = tls_options{certs.node_cert(), certs.rogue_key(), certs.ca(), true};
  auto mismatched = start_http_listener(o, echo);
  REQUIRE_FALSE(mismatched);
  CHECK_THAT(mismatched.message(), Catch::Contains("rogue.key"));
  auto client =
      make_http_transport({{}, tls_options{certs.node_cert(), certs.node_key(), dir.path() + "/no-ca.crt", true}, 1});
  REQUIRE_FALSE(client);
  CHECK_THAT(client.message(), Catch::Contains("no-ca.crt"));
}

TEST_CASE("http listener for clients: admission verdicts, kept headers, response fields, HEAD and the field cap",
          "[http]") {
  http_listener_options o;
  o.path_prefix = "/";
  o.kept_headers = {"Authorization"};
  o.admit = [](const request& head) {
    if (head.path == "/open") return admission::open_route();
    auto it = head.headers.find("Authorization");
    if (it != head.headers.end() && it->second == "Bearer good") return admission::trust();
    auto no = error_response(403, "forbidden", "not you");
    no.headers.emplace_back("WWW-Authenticate", "Bearer");
    return admission::refuse(std::move(no));
  };
  http_server_limits limits;
  limits.max_unauthenticated = 2;
  limits.auth_timeout = 60s;
  served s(o, limits);

  // A refusal is the admit callback's own answer, with its fields, and nothing reaches the handler.
  auto refused = s.raw("GET /x HTTP/1.1\r\nAuthorization: Bearer bad\r\n\r\n");
  CHECK(refused.starts_with("HTTP/1.1 403 "));
  CHECK(refused.find("WWW-Authenticate: Bearer\r\n") != std::string::npos);
  CHECK(refused.find("not you") != std::string::npos);
  CHECK(s.calls == 0);

  // Trusted: the kept header reaches the handler (matched case-insensitively); a HEAD gets the fields, no body.
  auto ok = s.raw("GET /x HTTP/1.1\r\nauthorization: Bearer good\r\nConnection: close\r\n\r\n");
  CHECK(ok.starts_with("HTTP/1.1 200 "));
  CHECK(ok.find("[Authorization:Bearer good]") != std::string::npos);
  auto head = s.raw("HEAD /x HTTP/1.1\r\nAuthorization: Bearer good\r\nConnection: close\r\n\r\n");
  CHECK(head.starts_with("HTTP/1.1 200 "));
  CHECK(head.find("Content-Length: ") != std::string::npos);
  CHECK(head.ends_with("\r\n\r\n"));  // the head alone

  // An open route is answered, but its connection stays unauthenticated: newer ones evict it.
  auto open = tcp_stream::connect("127.0.0.1", s.listener->port(), 2000ms);
  REQUIRE(open);
  open->set_timeout(5000ms);
  REQUIRE(open->write_all("GET /open HTTP/1.1\r\n\r\n"));
  message_reader reader(*open);
  std::string first;
  REQUIRE(reader.read_head(1 << 16, first) == message_reader::outcome::ok);
  CHECK(first.starts_with("HTTP/1.1 200 "));
  std::vector<tcp_stream> newer;
  for (int i = 0; i < 2; ++i) {
    auto c = tcp_stream::connect("127.0.0.1", s.listener->port(), 2000ms);
    REQUIRE(c);
    newer.push_back(std::move(*c));
  }
  CHECK_THAT(s.refused(2), Catch::Contains("evicted"));

  // More than 100 header fields is 431, like a head over its byte limit.
  std::string many = "GET /x HTTP/1.1\r\nAuthorization: Bearer good\r\n";
  for (int i = 0; i < 101; ++i) many += "X-F" + std::to_string(i) + ": v\r\n";
  CHECK(s.raw(many + "\r\n").starts_with("HTTP/1.1 431 "));
}

TEST_CASE("http listener for clients: open routes are reads only, and a deadline never cuts their answers",
          "[http][limits]") {
  http_listener_options o;
  o.path_prefix = "/";
  o.kept_headers = {"Authorization"};
  o.admit = [](const request& head) {
    if (head.path == "/open" || head.path == "/cluster/slow") return admission::open_route();
    auto it = head.headers.find("Authorization");
    if (it != head.headers.end() && it->second == "Bearer good") return admission::trust();
    if (it != head.headers.end()) return admission::refuse(error_response(403, "forbidden", "not you"));
    return admission::refuse(error_response(401, "unauthorized", "who are you"));
  };
  http_server_limits limits;
  limits.auth_timeout = 100ms;  // shorter than the slow route's 300 ms
  limits.max_path_bytes = 1024;
  served s(o, limits);

  // Without credentials a request carries no body, even to an open route.
  auto with_body = s.raw("POST /open HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello");
  CHECK(with_body.starts_with("HTTP/1.1 401 "));
  CHECK(s.calls == 0);

  // A path over the limit is 414 before admission or any route sees it; a HEAD's refusal has no body.
  auto long_path = s.raw("GET /" + std::string(1100, 'a') + " HTTP/1.1\r\nAuthorization: Bearer good\r\n\r\n");
  CHECK(long_path.starts_with("HTTP/1.1 414 "));
  auto head_refused = s.raw("HEAD /x HTTP/1.1\r\nAuthorization: Bearer bad\r\n\r\n");
  CHECK(head_refused.starts_with("HTTP/1.1 403 "));
  CHECK(head_refused.ends_with("\r\n\r\n"));
  CHECK(s.calls == 0);
  CHECK_THAT(s.refused(3), Catch::Contains("forbidden: HEAD /x refused with 403"));

  // An open route whose answer takes longer than the connection's time to authenticate: the answer arrives whole,
  // says it is the last, and the connection then closes.
  auto slow = s.raw("GET /cluster/slow HTTP/1.1\r\n\r\n");
  CHECK(slow.starts_with("HTTP/1.1 200 "));
  CHECK(slow.find("Connection: close\r\n") != std::string::npos);
  CHECK(slow.ends_with("GET /cluster/slow type= body=0:"));
}
