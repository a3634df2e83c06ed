// Multi-process tests: real moonmqd brokers on loopback ports, driven through their HTTP routes only.
#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include <atomic>
#include <map>
#include <thread>

#include "support/eventually.hpp"
#include "support/certificates.hpp"
#include "support/daemon_process.hpp"

using namespace moonmq::test;

namespace {

rapidjson::Document parse(const std::string& s) {
  rapidjson::Document d;
  d.Parse(s.c_str(), s.size());
  return d;
}

void post_ok(const moonmqd_process& b, const std::string& path, const std::string& body) {
  auto c = b.api();
  auto r = c.Post(path.c_str(), body, "application/json");
  REQUIRE(r);
  INFO(path << " -> " << r->body);
  REQUIRE(r->status / 100 == 2);
}

/// Produces records "p<i>" of `size` bytes to partition 0, `per_request` at a time.
void fill(const moonmqd_process& b, const std::string& topic, int count, std::size_t size, int per_request = 50) {
  for (int i = 0; i < count; i += per_request) {
    std::string body = "{\"partition\":0,\"records\":[";
    for (int k = i; k < std::min(count, i + per_request); ++k)
      body += (k > i ? "," : "") + std::string("{\"value\":\"p") + std::to_string(k) + std::string(size, 'x') + "\"}";
    post_ok(b, "/v1/topics/" + topic + "/records", body + "]}");
  }
}

/// Every record of partition 0 on `b`: offset -> value.
std::vector<std::pair<std::uint64_t, std::string>> read_all(const moonmqd_process& b, const std::string& topic) {
  std::vector<std::pair<std::uint64_t, std::string>> out;
  std::uint64_t offset = 0;
  auto c = b.api();
  for (;;) {
    auto r = c.Get(
        ("/v1/topics/" + topic + "/partitions/0/records?max_bytes=1048576&offset=" + std::to_string(offset)).c_str());
    REQUIRE(r);
    REQUIRE(r->status == 200);
    auto d = parse(r->body);
    for (const auto& rec : d["records"].GetArray())
      out.emplace_back(rec["offset"].GetUint64(), rec["value"].GetString());
    if (d["next_offset"].GetUint64() == offset) break;
    offset = d["next_offset"].GetUint64();
    if (offset == d["end_offset"].GetUint64()) break;
  }
  return out;
}

/// Waits until no move is running on `b` (an interrupted one may still be failing when a test retries).
void wait_idle(const moonmqd_process& b) {
  auto c = b.api();
  const bool idle = eventually(
      [&] {
        auto r = c.Get("/v1/reassignments");
        if (!r) return false;
        auto d = parse(r->body);
        for (const auto& m : d["reassignments"].GetArray())
          if (!m["finished"].GetBool()) return false;
        return true;
      },
      std::chrono::seconds(30));
  if (!idle) FAIL("a move was still running after 30 s");
}

/// Starts a move on `src` and waits for it to finish; returns its final progress entry.
rapidjson::Document move_and_wait(const moonmqd_process& src, const std::string& topic, const std::string& dest) {
  wait_idle(src);
  post_ok(src, "/v1/reassignments", "{\"topic\":\"" + topic + "\",\"partition\":0,\"dest\":\"" + dest + "\"}");
  auto c = src.api();
  rapidjson::Document last;
  const bool finished = eventually(
      [&] {
        auto r = c.Get("/v1/reassignments");
        if (!r) return false;
        auto d = parse(r->body);
        const auto& list = d["reassignments"];
        if (list.Size() == 0 || !list[list.Size() - 1]["finished"].GetBool()) return false;
        last.CopyFrom(list[list.Size() - 1], last.GetAllocator());
        return true;
      },
      std::chrono::seconds(30));
  if (!finished) FAIL("the move did not finish within 30 s");
  return last;
}

std::string move_step(const moonmqd_process& src) {
  auto c = src.api();
  auto r = c.Get("/v1/reassignments");
  if (!r) return "";
  auto d = parse(r->body);
  const auto& list = d["reassignments"];
  if (list.Size() == 0) return "";
  const auto& last = list[list.Size() - 1];
  return std::string(last["step"].GetString()) + ":" + std::to_string(last["bytes_copied"].GetUint64());
}

struct two_brokers {
  temp_dir dir;
  moonmqd_process b1{"b1", dir.path()};
  moonmqd_process b2{"b2", dir.path()};
  explicit two_brokers(const std::string& cluster_extra = "", const std::string& server_extra = "") {
    b1.configure({&b1, &b2}, cluster_extra, server_extra);
    b2.configure({&b1, &b2}, cluster_extra, server_extra);
    b1.start();
    b2.start();
    post_ok(b1, "/v1/topics", R"({"name":"orders","partitions":2,"placement":"local"})");
  }
};

}  // namespace

TEST_CASE("e2e: a move while a producer keeps producing loses nothing and keeps every offset", "[e2e]") {
  two_brokers c("\"BatchBytes\": 65536");
  fill(c.b1, "orders", 4000, 1000);  // ~4 MB: the copy takes many batches
  std::atomic<bool> stop{false};
  std::vector<std::pair<std::uint64_t, std::string>> acked;
  std::atomic<int> failures{0};
  std::atomic<int> through_b2{0};  // acknowledged by the new owner
  std::thread producer([&] {
    auto cl = c.b1.api();
    for (int i = 0; !stop; ++i) {
      std::string v = "live-" + std::to_string(i);
      auto r = cl.Post("/v1/topics/orders/records", "{\"partition\":0,\"records\":[{\"value\":\"" + v + "\"}]}",
                       "application/json");
      if (r && r->status == 200) {
        auto d = parse(r->body);
        acked.emplace_back(d["offsets"][0].GetUint64(), v);
        if (std::string(d["broker"].GetString()) == "b2") ++through_b2;
      } else {
        ++failures;
      }
    }
  });
  auto done = move_and_wait(c.b1, "orders", "b2");
  // Keep producing through the new owner for a while: until it has acknowledged 50 records (or 10 s).
  eventually([&] { return through_b2 >= 50; }, std::chrono::seconds(10), std::chrono::milliseconds(5));
  stop = true;
  producer.join();
  INFO(done["error"].GetString());
  REQUIRE(done["succeeded"].GetBool());
  REQUIRE(acked.size() > 10);

  auto on_b2 = read_all(c.b2, "orders");
  std::map<std::uint64_t, std::string> by_offset(on_b2.begin(), on_b2.end());
  REQUIRE(by_offset.size() == on_b2.size());  // offsets unique
  for (const auto& [off, v] : acked) {
    INFO("acknowledged " << v << " at " << off);
    REQUIRE(by_offset.count(off));
    CHECK(by_offset.at(off) == v);
  }
  // Exactly once and in order: the live records appear in the log in the order they were acknowledged.
  std::vector<std::string> live;
  for (const auto& [off, v] : on_b2)
    if (v.rfind("live-", 0) == 0) live.push_back(v);
  REQUIRE(live.size() == acked.size());
  for (std::size_t i = 0; i < live.size(); ++i) CHECK(live[i] == acked[i].second);
  // The source no longer serves it.
  auto r = c.b1.api().Get("/v1/topics/orders/partitions/0/records?offset=0");
  CHECK(r->status == 421);
  CHECK(parse(r->body)["owner"].GetString() == std::string("b2"));
}

TEST_CASE("e2e: a consumer's committed offset follows the partition", "[e2e]") {
  two_brokers c;
  fill(c.b1, "orders", 20, 10);
  post_ok(c.b1, "/v1/groups/billing/offsets", R"({"topic":"orders","partition":0,"offset":123})");
  auto done = move_and_wait(c.b1, "orders", "b2");
  REQUIRE(done["succeeded"].GetBool());
  auto r = c.b2.api().Get("/v1/groups/billing/offsets?topic=orders&partition=0");
  REQUIRE(r);
  CHECK(parse(r->body)["offset"].GetUint64() == 123);
  // The source refuses commits for a partition it no longer serves.
  auto refused = c.b1.api().Post("/v1/groups/billing/offsets", R"({"topic":"orders","partition":0,"offset":200})",
                                 "application/json");
  CHECK(refused->status == 421);
}

TEST_CASE("e2e: kill -9 in the middle of the copy, restart, resume or retry: nothing lost, nothing duplicated",
          "[e2e][crash]") {
  const std::string victim = GENERATE("source", "destination");
  INFO("killed: " << victim);
  two_brokers c("\"BatchBytes\": 16384", "\"Storage\": {\"Fsync\": \"never\"}");
  fill(c.b1, "orders", 6000, 1000);
  auto before = read_all(c.b1, "orders");
  post_ok(c.b1, "/v1/reassignments", R"({"topic":"orders","partition":0,"dest":"b2"})");
  std::string step;
  eventually(
      [&] {
        step = move_step(c.b1);
        return step.rfind("copy:", 0) == 0 && step != "copy:0";
      },
      std::chrono::seconds(10), std::chrono::milliseconds(1));
  INFO("killed during " << step);
  REQUIRE(step.rfind("copy:", 0) == 0);
  moonmqd_process& killed = victim == "source" ? c.b1 : c.b2;
  killed.kill9();
  killed.start();
  if (victim == "source") {
    // The restarted source resumes the move by itself (move-requests.json), from the prefix b2 already holds.
    auto cl = c.b2.api();
    REQUIRE(eventually(
        [&] {
          auto r = cl.Get("/v1/topics/orders/partitions/0/records?offset=0&max_bytes=1");
          return r && r->status == 200;
        },
        std::chrono::seconds(30)));
  } else {
    // The move failed with its destination gone: it is not resumed, and a retry completes it.
    auto done = move_and_wait(c.b1, "orders", "b2");
    INFO(done["error"].GetString());
    REQUIRE(done["succeeded"].GetBool());
  }
  auto after = read_all(c.b2, "orders");
  REQUIRE(after.size() == before.size());
  CHECK(after == before);
}

TEST_CASE("e2e: a namesake of a topic cannot be made on another broker, so a move never meets one", "[e2e]") {
  // Before topics were cluster metadata, the same name created on b2 made a second log of orders-0, and a move then
  // dropped one of them. The create is refused, naming the broker that has the topic; a move then succeeds. (A
  // destination that is not empty all the same is refused by the reassigner: reassigner_test.cpp.)
  two_brokers c;
  fill(c.b1, "orders", 10, 10);
  auto again = c.b2.api().Post("/v1/topics", R"({"name":"orders","partitions":2,"placement":"local"})",
                               "application/json");
  REQUIRE(again);
  CHECK(again->status == 409);
  CHECK_THAT(again->body, Catch::Contains("topic_exists") && Catch::Contains("b1"));
  auto done = move_and_wait(c.b1, "orders", "b2");
  CHECK(done["succeeded"].GetBool());
  auto r = c.b2.api().Get("/v1/topics/orders/partitions/0/records?offset=0");
  CHECK(r->status == 200);  // served by the destination
}

TEST_CASE("e2e: the cluster listener refuses a wrong token with 401", "[e2e][auth]") {
  two_brokers c;
  httplib::Client cl("127.0.0.1", c.b1.cluster_port);
  auto wrong =
      cl.Post("/cluster/ensure", {{"X-Cluster-Token", "guess"}}, R"({"topic":"x","partitions":1})", "application/json");
  REQUIRE(wrong);
  CHECK(wrong->status == 401);
  auto none = cl.Get("/cluster/loads");
  CHECK(none->status == 401);
  auto anonymous = cl.Get("/cluster/loads", {{"X-Cluster-Token", "e2e-secret"}});
  CHECK(anonymous->status == 401);  // the shared token alone does not say which peer this is
  auto right = cl.Get("/cluster/loads", {{"X-Cluster-Token", "e2e-secret"}, {"X-Cluster-From", "b2"}});
  CHECK(right->status == 200);
  auto topics = c.b1.api().Get("/v1/topics");
  CHECK(topics->body.find("\"x\"") == std::string::npos);
}

TEST_CASE("e2e: a bad configuration exits 2 naming the key, and SIGTERM exits 0", "[e2e][config]") {
  temp_dir dir;
  std::ofstream(dir.path() + "/bad.json") << R"({"Server": {"Cluster": {"BrokerId": "b1", "Prot": 1}}})";
  auto r = run_process({MOONMQ_DAEMON_BIN, "--config", dir.path() + "/bad.json"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("Server.Cluster.Prot: unknown key"));
  moonmqd_process b("b1", dir.path());
  b.configure({&b});
  b.start();
  CHECK(b.terminate() == 0);
  CHECK_THAT(slurp(b.log_path), Catch::Contains("stopped cleanly"));
}

TEST_CASE("e2e: mutual TLS admits a peer with a trusted certificate and refuses one without", "[e2e][tls]") {
  temp_dir dir;
  const std::string d = dir.path();
  const auto certs = make_certificates(d);
  moonmqd_process b1("b1", d), b2("b2", d);
  b1.configure({&b1, &b2}, mutual_tls_section(certs, "b1"));
  b2.configure({&b1, &b2}, mutual_tls_section(certs, "b2"));
  b1.start();
  b2.start();
  post_ok(b1, "/v1/topics", R"({"name":"orders","partitions":1,"placement":"local"})");
  fill(b1, "orders", 30, 10);
  auto done = move_and_wait(b1, "orders", "b2");
  INFO(done["error"].GetString());
  CHECK(done["succeeded"].GetBool());
  CHECK(read_all(b2, "orders").size() == 30);

  const std::string url = "https://127.0.0.1:" + std::to_string(b1.cluster_port);
  httplib::Client no_cert(url);
  no_cert.set_ca_cert_path((d + "/ca.crt").c_str());
  no_cert.enable_server_certificate_verification(true);
  CHECK_FALSE(no_cert.Get("/cluster/loads", {{"X-Cluster-Token", "e2e-secret"}}));
  httplib::Client rogue(url, d + "/rogue.crt", d + "/rogue.key");
  rogue.set_ca_cert_path((d + "/ca.crt").c_str());
  rogue.enable_server_certificate_verification(true);
  CHECK_FALSE(rogue.Get("/cluster/loads", {{"X-Cluster-Token", "e2e-secret"}}));
  httplib::Client trusted(url, certs.broker_cert("b2"), certs.broker_key("b2"));
  trusted.set_ca_cert_path((d + "/ca.crt").c_str());
  trusted.enable_server_certificate_verification(true);
  auto ok = trusted.Get("/cluster/loads", {{"X-Cluster-Token", "e2e-secret"}, {"X-Cluster-From", "b2"}});
  REQUIRE(ok);
  CHECK(ok->status == 200);
  // A certificate the CA signed is not enough: it must name the broker the request claims to come from.
  auto posing = trusted.Get("/cluster/loads", {{"X-Cluster-Token", "e2e-secret"}, {"X-Cluster-From", "b1"}});
  REQUIRE(posing);
  CHECK(posing->status == 401);
  httplib::Client unnamed(url, d + "/node.crt", d + "/node.key");
  unnamed.set_ca_cert_path((d + "/ca.crt").c_str());
  unnamed.enable_server_certificate_verification(true);
  auto anonymous = unnamed.Get("/cluster/loads", {{"X-Cluster-Token", "e2e-secret"}, {"X-Cluster-From", "b2"}});
  REQUIRE(anonymous);
  CHECK(anonymous->status == 401);
  // The refused handshakes are counted and logged on the listener's side (once per 10 s).
  auto metrics = b1.api().Get("/metrics");
  REQUIRE(metrics);
  CHECK_THAT(metrics->body, Catch::Contains("moonmq_cluster_listener_refusals_total{reason=\"tls\"}"));
  CHECK_THAT(metrics->body, !Catch::Contains("moonmq_cluster_listener_refusals_total{reason=\"tls\"} 0"));
  CHECK_THAT(slurp(b1.log_path), Catch::Contains("cluster listener refused 127.0.0.1:"));
}

TEST_CASE("e2e: the client API answers bad input with a JSON error and changes nothing", "[e2e][input]") {
  two_brokers c;
  auto api = c.b1.api();
  auto check = [&](httplib::Result r, int status, const std::string& fragment) {
    REQUIRE(r);
    INFO(r->body);
    CHECK(r->status == status);
    CHECK_THAT(r->body, Catch::Contains(fragment));
  };
  check(api.Post("/v1/topics/orders/records", "{\"records\": [", "application/json"), 400, "not valid JSON");
  check(api.Post("/v1/topics/orders/records", R"({"records": []})", "application/json"), 400, "non-empty array");
  check(api.Post("/v1/topics/orders/records", R"({"records": [{"key": "k"}]})", "application/json"), 400,
        "records[0].value: is required");
  check(api.Post("/v1/topics/orders/records", R"({"partition": 9, "records": [{"value": "v"}]})", "application/json"),
        404, "no partition 9");
  check(api.Post("/v1/topics/nope/records", R"({"records": [{"value": "v"}]})", "application/json"), 404,
        "unknown topic");
  check(api.Post("/v1/topics", R"({"name": "bad/name"})", "application/json"), 400, "outside [A-Za-z0-9._-]");
  check(api.Get("/v1/topics/orders/partitions/0/records?offset=abc"), 400, "offset");
  check(api.Get("/v1/topics/orders/partitions/99999999999/records"), 400, "partition");
  post_ok(c.b1, "/v1/topics/orders/records", R"({"partition": 0, "records": [{"value": "only"}]})");
  // Inside a record: from the next one (here none: the end), as Kafka serves a fetch inside a batch. Past the end:
  // out of range, with the bounds a consumer resets to; a commit there is refused the same way.
  check(api.Get("/v1/topics/orders/partitions/0/records?offset=3"), 200, "\"records\":[]");
  check(api.Get("/v1/topics/orders/partitions/0/records?offset=100000"), 416,
        "\"error\":\"offset_out_of_range\"");
  check(api.Get("/v1/topics/orders/partitions/0/records?offset=100000"), 416, "\"start_offset\":0,\"end_offset\":");
  check(api.Post("/v1/groups/g/offsets", R"({"topic": "orders", "partition": 0, "offset": 100000})", "application/json"),
        416, "offset_out_of_range");
  check(api.Post("/v1/reassignments", R"({"topic": "orders", "partition": 0, "dest": "b9"})", "application/json"), 404,
        "unknown broker 'b9'");
  check(api.Post("/v1/reassignments", R"({"topic": "nope", "partition": 0, "dest": "b2"})", "application/json"), 404,
        "no reachable broker serves nope-0");
  check(api.Post("/v1/reassignments", R"({"topic": "orders", "partition": 0, "dest": "b1"})", "application/json"), 409,
        "already on b1");
  check(api.Get("/v1/nothing-here"), 404, "not a route");
  CHECK(read_all(c.b1, "orders").size() == 1);
}
