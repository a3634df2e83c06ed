// The edges of a real moonmqd, tried as a hostile or careless client would (issue 10): hostile JSON, bodies declared
// and never sent, connections that never authenticate, client tokens and roles, and a bind beyond loopback.
#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <future>
#include <thread>

#include "support/eventually.hpp"
#include "support/daemon_process.hpp"
#include "transport/tcp_stream.hpp"

using namespace moonmq::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* client_token = "client-token-0123456789";
constexpr const char* admin_token = "admin-token-0123456789ab";

std::string auth_section() {
  return std::string(R"("Auth": {"Tokens": [{"Name": "app", "Token": ")") + client_token +
         R"(", "Role": "client"}, {"Name": "ops", "Token": ")" + admin_token + R"(", "Role": "admin"}]})";
}

httplib::Headers bearer(const char* token) { return {{"Authorization", std::string("Bearer ") + token}}; }

/// Sends `head` (and nothing else) on a new connection to `port` and returns the status line of the answer.
std::string answer_to_head(std::uint16_t port, const std::string& head) {
  auto s = moonmq::transport::tcp_stream::connect("127.0.0.1", port, 2000ms);
  REQUIRE(s);
  s->set_timeout(5000ms);
  REQUIRE(s->write_all(head));
  moonmq::transport::message_reader reader(*s);
  std::string got;
  if (reader.read_head(1 << 16, got) != moonmq::transport::message_reader::outcome::ok) return "(no answer)";
  return got.substr(0, got.find("\r\n"));
}

}  // namespace

TEST_CASE("e2e: a megabyte of open brackets is a 400, on the client API and on the cluster routes, and the broker lives on",
          "[e2e][security]") {
  temp_dir dir;
  moonmqd_process b("b1", dir.path());
  b.configure({&b});
  b.start();
  const std::string brackets(1u << 20, '[');
  auto api = b.api();
  auto r = api.Post("/v1/topics", brackets, "application/json");
  REQUIRE(r);
  CHECK(r->status == 400);
  CHECK_THAT(r->body, Catch::Contains("nested deeper than 64"));
  httplib::Client cluster("127.0.0.1", b.cluster_port);
  auto c = cluster.Post("/cluster/ensure", {{"X-Cluster-Token", "e2e-secret"}}, brackets, "application/json");
  REQUIRE(c);
  CHECK(c->status == 400);
  auto dup = api.Post("/v1/topics", R"({"name":"a","name":"b"})", "application/json");
  REQUIRE(dup);
  CHECK(dup->status == 400);
  CHECK_THAT(dup->body, Catch::Contains("appears twice"));
  auto health = api.Get("/v1/health");
  REQUIRE(health);
  CHECK(health->status == 200);
}

TEST_CASE("e2e: client tokens and roles guard the client API, and health and metrics stay open", "[e2e][security]") {
  temp_dir dir;
  moonmqd_process b("b1", dir.path());
  b.configure({&b}, "", auth_section());
  b.start();
  auto api = b.api();
  const std::string topic = R"({"name":"orders","partitions":2,"placement":"local"})";
  const std::string record = R"({"partition":0,"records":[{"value":"v"}]})";

  auto anonymous = api.Post("/v1/topics", topic, "application/json");
  REQUIRE(anonymous);
  CHECK(anonymous->status == 401);
  CHECK(anonymous->get_header_value("WWW-Authenticate") == "Bearer");
  auto wrong = api.Post("/v1/topics", bearer("not-a-token-at-all-really"), topic, "application/json");
  REQUIRE(wrong);
  CHECK(wrong->status == 401);
  auto as_client = api.Post("/v1/topics", bearer(client_token), topic, "application/json");
  REQUIRE(as_client);
  CHECK(as_client->status == 403);
  CHECK_THAT(as_client->body, Catch::Contains("needs the admin role"));
  auto as_admin = api.Post("/v1/topics", bearer(admin_token), topic, "application/json");
  REQUIRE(as_admin);
  CHECK(as_admin->status == 200);

  CHECK(api.Post("/v1/topics/orders/records", record, "application/json")->status == 401);
  CHECK(api.Post("/v1/topics/orders/records", bearer(client_token), record, "application/json")->status == 200);
  CHECK(api.Get("/v1/topics/orders/partitions/0/records", bearer(client_token))->status == 200);
  CHECK(api.Get("/v1/topics/orders/partitions/0/records")->status == 401);
  CHECK(api.Post("/v1/reassignments", bearer(client_token), R"({"topic":"orders","partition":0,"dest":"b9"})",
                 "application/json")
            ->status == 403);
  CHECK(api.Get("/v1/health")->status == 200);
  CHECK(api.Get("/metrics")->status == 200);

  // Credentials are checked on the head: a 60 MB body that never comes is refused at once.
  CHECK(answer_to_head(b.api_port, "POST /v1/topics/orders/records HTTP/1.1\r\nHost: x\r\nContent-Type: "
                                   "application/json\r\nContent-Length: 60000000\r\n\r\n") == "HTTP/1.1 401 Unauthorized");
}

TEST_CASE("e2e: a body is JSON whatever its Content-Type says, also a form body over 8 KB", "[e2e][security]") {
  temp_dir dir;
  moonmqd_process b("b1", dir.path());
  b.configure({&b});
  b.start();
  auto api = b.api();
  REQUIRE(api.Post("/v1/topics", R"({"name":"t","partitions":1,"placement":"local"})", "application/json")->status == 200);
  const std::string big = R"({"partition":0,"records":[{"value":")" + std::string(20000, 'v') + R"("}]})";
  auto form = api.Post("/v1/topics/t/records", big, "application/x-www-form-urlencoded");  // what curl -d sends
  REQUIRE(form);
  INFO(form->body);
  CHECK(form->status == 200);
  auto none = api.Post("/v1/topics/t/records", big, "text/plain");
  REQUIRE(none);
  CHECK(none->status == 200);
}

TEST_CASE("e2e: a client API beyond loopback without client tokens does not start", "[e2e][security]") {
  temp_dir dir;
  moonmqd_process b("b1", dir.path());
  b.configure({&b});
  const std::string cfg = slurp(b.config_path);
  const std::string open = R"("Host":"0.0.0.0")";
  std::string beyond = cfg;
  beyond.replace(beyond.find(R"("Host":"127.0.0.1")"), std::string(R"("Host":"127.0.0.1")").size(), open);
  std::ofstream(b.config_path) << beyond;
  auto r = run_process({MOONMQ_DAEMON_BIN, "--config", b.config_path, "--check-config"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("Server.Auth"));
  std::string allowed = beyond;
  allowed.replace(allowed.find(open), open.size(), open + R"(,"Auth":{"AllowAnonymous":true})");
  std::ofstream(b.config_path) << allowed;
  CHECK(run_process({MOONMQ_DAEMON_BIN, "--config", b.config_path, "--check-config"}).exit_code == 0);
}

TEST_CASE("e2e: 300 connections that never authenticate do not stop a move toward the broker or produces forwarded "
          "to it",
          "[e2e][security]") {
  temp_dir dir;
  moonmqd_process b1("b1", dir.path()), b2("b2", dir.path());
  b1.configure({&b1, &b2});
  b2.configure({&b1, &b2});
  b1.start();
  b2.start();
  auto api = b1.api();
  REQUIRE(api.Post("/v1/topics", R"({"name":"t","partitions":1,"placement":"local"})", "application/json")->status == 200);
  for (int i = 0; i < 20; ++i)
    REQUIRE(api.Post("/v1/topics/t/records", R"({"partition":0,"records":[{"value":"before"}]})", "application/json")
                ->status == 200);
  // Slowloris against b2's cluster port: each sends part of a head and then nothing.
  std::vector<moonmq::transport::tcp_stream> hostile;
  for (int i = 0; i < 300; ++i) {
    auto s = moonmq::transport::tcp_stream::connect("127.0.0.1", b2.cluster_port, 2000ms);
    REQUIRE(s);
    (void)s->write_all("POST /cluster/append HTTP/1.1\r\nContent-Le");
    hostile.push_back(std::move(*s));
  }
  auto started = api.Post("/v1/reassignments", R"({"topic":"t","partition":0,"dest":"b2"})", "application/json");
  REQUIRE(started);
  REQUIRE(started->status == 202);
  REQUIRE(eventually(
      [&] {
        auto p = api.Get("/v1/reassignments");
        REQUIRE(p);
        const bool moved = p->body.find("\"succeeded\":true") != std::string::npos;
        if (p->body.find("\"finished\":true") != std::string::npos && !moved) FAIL("the move failed: " << p->body);
        return moved;
      },
      20s, 20ms));
  auto forwarded = api.Post("/v1/topics/t/records", R"({"partition":0,"records":[{"value":"after"}]})",
                            "application/json");
  REQUIRE(forwarded);
  CHECK(forwarded->status == 200);
  CHECK_THAT(forwarded->body, Catch::Contains("\"broker\":\"b2\""));
  auto metrics = b2.api().Get("/metrics");
  REQUIRE(metrics);
  CHECK_THAT(metrics->body, Catch::Contains("moonmq_cluster_listener_refusals_total{reason=\"unauthenticated\"}"));
}

TEST_CASE("e2e: clients idle on keep-alive connections do not hold up another client, up to MaxClientConnections",
          "[e2e][security][limits]") {
  temp_dir dir;
  moonmqd_process b1("b1", dir.path());
  b1.configure({&b1}, "", R"("Limits": {"MaxClientConnections": 24})");
  b1.start();
  // Twenty clients each make one request and keep their connection open, idle (cpp-httplib's own pool had eight
  // threads, and a ninth client waited for an idle connection's 30 s keep-alive timeout).
  std::vector<httplib::Client> idle;
  for (int i = 0; i < 20; ++i) {
    idle.push_back(b1.api());
    idle.back().set_keep_alive(true);
    auto r = idle.back().Get("/v1/health");
    REQUIRE(r);
    REQUIRE(r->status == 200);
  }
  auto other = b1.api();
  other.set_read_timeout(std::chrono::seconds(10));
  const auto t0 = std::chrono::steady_clock::now();
  auto r = other.Post("/v1/topics", R"({"name":"t","partitions":1,"placement":"local"})", "application/json");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(std::chrono::steady_clock::now() - t0 < 10s);
  // Past the limit a connection is told so at once (503), and served again once others have closed.
  std::vector<httplib::Client> more;
  for (int i = 0; i < 4; ++i) {
    more.push_back(b1.api());
    more.back().set_keep_alive(true);
    REQUIRE(more.back().Get("/v1/health"));
  }
  auto past = b1.api().Get("/v1/health");
  REQUIRE(past);
  CHECK(past->status == 503);
  CHECK_THAT(past->body, Catch::Contains("too many connections"));
  idle.clear();  // closes twenty connections
  CHECK(eventually([&] {
    auto r = b1.api().Get("/v1/health");
    return r && r->status == 200;
  }));
}

TEST_CASE("e2e: 2000 silent connections and 200 that stream header lines neither delay an authenticated client nor "
          "cost the broker 64 MB",
          "[e2e][security][limits]") {
  temp_dir dir;
  moonmqd_process b1("b1", dir.path());
  b1.configure({&b1}, "", auth_section());
  b1.start();
  auto api = b1.api();
  auto made = api.Post("/v1/topics", bearer(admin_token), R"({"name":"t","partitions":1,"placement":"local"})",
                       "application/json");
  REQUIRE(made);
  REQUIRE(made->status == 200);
  const std::uint64_t before = b1.resident_bytes();
  REQUIRE(before > 0);

  std::vector<moonmq::transport::tcp_stream> silent, streaming;
  for (int i = 0; i < 2000; ++i) {
    auto s = moonmq::transport::tcp_stream::connect("127.0.0.1", b1.api_port, 2000ms);
    REQUIRE(s);
    silent.push_back(std::move(*s));
  }
  for (int i = 0; i < 200; ++i) {
    auto s = moonmq::transport::tcp_stream::connect("127.0.0.1", b1.api_port, 2000ms);
    REQUIRE(s);
    s->set_timeout(200ms);
    (void)s->write_all("GET /v1/topics HTTP/1.1\r\nHost: x\r\n");
    streaming.push_back(std::move(*s));
  }
  // Each streaming connection gets another header line every 20 ms for as long as the broker keeps it open.
  std::mutex mu;
  std::condition_variable wake;
  bool stop = false;
  std::thread feeder([&] {
    std::unique_lock lock(mu);
    for (int line = 0; !stop; ++line) {
      for (auto& s : streaming) (void)s.write_all("X-Line-" + std::to_string(line) + ": padding\r\n");
      wake.wait_for(lock, 20ms, [&] { return stop; });
    }
  });
  struct stopper {
    std::mutex& mu;
    std::condition_variable& wake;
    bool& stop;
    std::thread& t;
    ~stopper() {
      {
        std::lock_guard lock(mu);
        stop = true;
      }
      wake.notify_all();
      t.join();
    }
  } stop_feeder{mu, wake, stop, feeder};

  // An authenticated client, on new connections each time, is answered within a second.
  auto slowest = std::chrono::steady_clock::duration::zero();
  for (int i = 0; i < 5; ++i) {
    auto c = b1.api();
    c.set_connection_timeout(1s);
    c.set_read_timeout(1s);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = c.Post("/v1/topics/t/records", bearer(client_token), R"({"partition":0,"records":[{"value":"v"}]})",
                    "application/json");
    const auto took = std::chrono::steady_clock::now() - t0;
    INFO("request " << i << " took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(took < 1s);
    slowest = std::max(slowest, took);
  }
  const std::uint64_t after = b1.resident_bytes();
  std::printf("under 2000 silent and 200 streaming connections: slowest authenticated produce %lld ms, resident "
              "memory %llu KiB -> %llu KiB\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(slowest).count()),
              static_cast<unsigned long long>(before / 1024), static_cast<unsigned long long>(after / 1024));
  INFO("resident before " << before / 1024 << " KiB, after " << after / 1024 << " KiB");
  CHECK(after < before + (64u << 20));
  auto metrics = b1.api().Get("/metrics");
  REQUIRE(metrics);
  CHECK_THAT(metrics->body, Catch::Contains("moonmq_http_refusals_total{reason=\"unauthenticated\"}"));
}

TEST_CASE("e2e: offsets of topics or partitions a broker does not have are refused, not stored", "[e2e][security]") {
  temp_dir dir;
  moonmqd_process b("b1", dir.path());
  b.configure({&b});
  b.start();
  auto api = b.api();
  REQUIRE(api.Post("/v1/topics", R"({"name":"t","partitions":2,"placement":"local"})", "application/json")->status == 200);
  auto unknown = api.Post("/v1/groups/g/offsets", R"({"topic":"nope","partition":0,"offset":1})", "application/json");
  REQUIRE(unknown);
  CHECK(unknown->status == 404);
  auto beyond = api.Post("/v1/groups/g/offsets", R"({"topic":"t","partition":2,"offset":1})", "application/json");
  REQUIRE(beyond);
  CHECK(beyond->status == 404);
  CHECK(api.Post("/v1/groups/g/offsets", R"({"topic":"t","partition":1,"offset":0})", "application/json")->status ==
        200);
  auto wide = api.Post("/v1/topics", R"({"name":"wide","partitions":5000,"placement":"local"})", "application/json");
  REQUIRE(wide);
  CHECK(wide->status == 400);
  CHECK_THAT(wide->body, Catch::Contains("MaxPartitionsPerTopic"));
}

TEST_CASE("e2e: a broker holds 20000 partitions under ulimit -n 4096 and recovers them", "[e2e][security][limits]") {
  temp_dir dir;
  moonmqd_process b("b1", dir.path());
  b.open_files_limit = 4096;
  b.configure({&b});
  b.start();
  auto api = b.api();
  for (int t = 0; t < 20; ++t) {
    auto r = api.Post("/v1/topics", "{\"name\":\"t" + std::to_string(t) + "\",\"partitions\":1000,\"placement\":\"local\"}", "application/json");
    REQUIRE(r);
    INFO(r->body);
    REQUIRE(r->status == 200);
  }
  auto produce = [&](int t, int p, const std::string& v) {
    auto r = api.Post(("/v1/topics/t" + std::to_string(t) + "/records").c_str(),
                      "{\"partition\":" + std::to_string(p) + ",\"records\":[{\"value\":\"" + v + "\"}]}",
                      "application/json");
    REQUIRE(r);
    INFO(r->body);
    CHECK(r->status == 200);
  };
  for (int t = 0; t < 20; ++t)
    for (int p = 0; p < 1000; p += 97) produce(t, p, "before");
  // One more topic is one too many for the broker (MaxPartitionsPerBroker 20000).
  auto over = api.Post("/v1/topics", R"({"name":"over","partitions":1,"placement":"local"})", "application/json");
  REQUIRE(over);
  CHECK(over->status == 429);
  REQUIRE(b.terminate() == 0);
  b.start();  // recovery opens all 20,000 logs, within the same limit
  for (int t = 0; t < 20; ++t) produce(t, 999, "after");
  auto r = api.Get("/v1/topics/t19/partitions/970/records");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK_THAT(r->body, Catch::Contains("\"value\":\"before\""));
}
