// produce_forward: produce latency and throughput to a partition's owner directly, and through a broker that
// forwards to it, side by side in one run (two moonmqd on loopback; one 100-byte record per request, one
// client connection each, sequential; the two paths alternate in blocks so both see the same machine).
//
//   produce_forward [REQUESTS_PER_PATH] [--tls] [--baseline MOONMQD]
//       default 5000; --tls: mutual TLS between the brokers (the clients' API stays plain HTTP); --baseline: another
//       build's moonmqd, run as a second pair of brokers and measured in the same run, block by block in turn
#include <rapidjson/document.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include "support/certificates.hpp"
#include "support/daemon_process.hpp"

using namespace moonmq::test;

namespace {

struct path_stats {
  std::vector<double> latency_us;
  double seconds = 0;
};

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

/// Two brokers of one moonmqd build, b2 owning fw-1: clients of b2 produce directly, clients of b1 are forwarded.
struct pair_of_brokers {
  std::string label;
  temp_dir dir;
  std::optional<certificates> certs;
  moonmqd_process b1{"b1", dir.path()}, b2{"b2", dir.path()};
  std::optional<httplib::Client> c1, c2;
  path_stats direct, forwarded;

  pair_of_brokers(std::string name, const std::string& binary, bool tls) : label(std::move(name)) {
    if (tls) certs = make_certificates(dir.path());
    auto cluster_tls = [&](const std::string& id) { return certs ? mutual_tls_section(*certs, id) : std::string(); };
    b1.binary = b2.binary = binary;
    b1.configure({&b1, &b2}, cluster_tls("b1"));
    b2.configure({&b1, &b2}, cluster_tls("b2"));
    b1.start();
    b2.start();
    c1.emplace(b1.api());
    c2.emplace(b2.api());
    for (auto* c : {&*c1, &*c2}) {
      c->set_keep_alive(true);
      c->set_tcp_nodelay(true);
    }
    c1->Post("/v1/topics", R"({"name":"fw","partitions":2,"placement":"local"})", "application/json");
    c1->Post("/v1/reassignments", R"({"topic":"fw","partition":1,"dest":"b2"})", "application/json");
    for (int i = 0; i < 500; ++i) {
      auto p = c1->Get("/v1/reassignments");
      if (p && p->body.find("\"succeeded\":true") != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  int requests = 5000;
  bool tls = false;
  std::string baseline;  // another build's moonmqd, measured in the same run
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--tls")
      tls = true;
    else if (std::string(argv[i]) == "--baseline" && i + 1 < argc)
      baseline = argv[++i];
    else
      requests = std::atoi(argv[i]);
  }
  std::vector<std::unique_ptr<pair_of_brokers>> builds;
  builds.push_back(std::make_unique<pair_of_brokers>("this", MOONMQ_DAEMON_BIN, tls));
  if (!baseline.empty()) builds.push_back(std::make_unique<pair_of_brokers>("baseline", baseline, tls));
  const std::string body = "{\"partition\":1,\"records\":[{\"value\":\"" + std::string(100, 'v') + "\"}]}";
  auto run = [&](httplib::Client& c, path_stats& s, int n, const char* expect_broker) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      auto a = std::chrono::steady_clock::now();
      auto r = c.Post("/v1/topics/fw/records", body, "application/json");
      auto b = std::chrono::steady_clock::now();
      if (!r || r->status != 200 || r->body.find(expect_broker) == std::string::npos) {
        std::fprintf(stderr, "produce_forward: a produce failed: %s\n", r ? r->body.c_str() : "no answer");
        std::exit(1);
      }
      s.latency_us.push_back(std::chrono::duration<double, std::micro>(b - a).count());
    }
    s.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  for (auto& p : builds) {  // warm-up, not counted
    run(*p->c2, p->direct, 200, "\"b2\"");
    run(*p->c1, p->forwarded, 200, "\"b2\"");
    p->direct = {};
    p->forwarded = {};
  }
  // Every path of every build in turn, block by block, so that all of them see the same machine.
  const int block = 500;
  for (int done = 0; done < requests; done += block)
    for (auto& p : builds) {
      run(*p->c2, p->direct, std::min(block, requests - done), "\"b2\"");
      run(*p->c1, p->forwarded, std::min(block, requests - done), "\"b2\"");
    }
  for (auto& p : builds) {
    for (auto [name, s] : {std::pair{"direct", &p->direct}, std::pair{"forwarded", &p->forwarded}})
      std::printf(
          "{\"bench\":\"produce_forward\",\"build\":\"%s\",\"tls\":%s,\"path\":\"%s\",\"requests\":%zu,"
          "\"record_bytes\":100,\"p50_us\":%.0f,\"p99_us\":%.0f,\"records_per_s\":%.0f}\n",
          p->label.c_str(), tls ? "true" : "false", name, s->latency_us.size(), percentile(s->latency_us, 0.5),
          percentile(s->latency_us, 0.99), static_cast<double>(s->latency_us.size()) / s->seconds);
    std::printf("{\"bench\":\"produce_forward\",\"build\":\"%s\",\"tls\":%s,\"p50_ratio\":%.2f,\"p99_ratio\":%.2f}\n",
                p->label.c_str(), tls ? "true" : "false",
                percentile(p->forwarded.latency_us, 0.5) / percentile(p->direct.latency_us, 0.5),
                percentile(p->forwarded.latency_us, 0.99) / percentile(p->direct.latency_us, 0.99));
  }
  return 0;
}
