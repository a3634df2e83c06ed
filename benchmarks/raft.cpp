// raft: how long a cluster is without a controller after its leader dies, and what committing an ownership change
// costs.
//
//   1. simulated failover: 3 nodes on a lossless network with 0..1 tick of delay; the leader crashes; ticks until
//      the survivors agree on a new leader. Over many seeds, as multiples of the maximum election timeout.
//   2. real failover: three moonmqd with Raft (heartbeat 100 ms, election timeout 500..1000 ms); kill -9 of the
//      leader; milliseconds until both survivors name the same new leader (polled every 5 ms).
//   3. commit latency: `owner` entries proposed to the leader over its cluster endpoint (POST /cluster/raft/propose),
//      each answered once it is committed (fsynced on a majority) and applied on the leader. p50 and p99.
//
//   raft [SIM_SEEDS] [REAL_RUNS] [PROPOSALS]      defaults 2000 10 500
#include <rapidjson/document.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "sim/raft_sim.hpp"
#include "support/daemon_process.hpp"

using namespace moonmq;
using namespace moonmq::test;

namespace {

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

void simulated_failover(int seeds) {
  sim_options o;
  o.drop = 0;
  o.duplicate = 0;
  o.max_delay_ticks = 1;
  std::vector<double> ticks;
  int within_2x = 0;
  for (int seed = 1; seed <= seeds; ++seed) {
    raft_sim sim(static_cast<std::uint64_t>(seed), o);
    std::optional<std::string> leader;
    for (int t = 0; t < 500 && !leader; ++t) {
      (void)sim.calm_tick();
      leader = sim.agreed_leader();
    }
    if (!leader) continue;
    for (int t = 0; t < 30; ++t) (void)sim.calm_tick();  // settle into steady heartbeats
    leader = sim.agreed_leader();
    if (!leader) continue;
    sim.crash_now(*leader);
    int t = 0;
    for (; t < 1000; ++t) {
      (void)sim.quiet_tick();
      auto next = sim.agreed_leader();
      if (next && *next != *leader) break;
    }
    ticks.push_back(t + 1);
    within_2x += (t + 1) <= 2 * o.election_ticks_max ? 1 : 0;
  }
  std::printf(
      "{\"bench\":\"raft_failover_sim\",\"runs\":%zu,\"election_ticks\":[%d,%d],\"p50_ticks\":%.0f,"
      "\"p99_ticks\":%.0f,\"max_ticks\":%.0f,\"within_2x_max_election\":%.4f}\n",
      ticks.size(), o.election_ticks_min, o.election_ticks_max, percentile(ticks, 0.5), percentile(ticks, 0.99),
      percentile(ticks, 1.0), static_cast<double>(within_2x) / static_cast<double>(ticks.size()));
}

const char* raft_on =
    "\"Raft\":{\"Enabled\":true,\"HeartbeatMs\":100,\"ElectionTimeoutMinMs\":500,\"ElectionTimeoutMaxMs\":1000}";

std::string leader_named_by(const moonmqd_process& b) {
  httplib::Client c("127.0.0.1", b.api_port);
  c.set_connection_timeout(std::chrono::milliseconds(200));
  c.set_read_timeout(std::chrono::milliseconds(500));
  auto r = c.Get("/v1/cluster");
  if (!r || r->status != 200) return "";
  rapidjson::Document d;
  d.Parse(r->body.c_str(), r->body.size());
  return d.IsObject() ? d["raft"]["leader"].GetString() : "";
}

std::string agreed(const std::vector<moonmqd_process*>& bs) {
  std::string l;
  for (auto* b : bs) {
    auto x = leader_named_by(*b);
    if (x.empty() || (!l.empty() && x != l)) return "";
    l = x;
  }
  return l;
}

/// Whether both figures were measured (a benchmark that measures nothing fails).
bool real_failover_and_commit(int runs, int proposals) {
  std::vector<double> failover_ms, commit_us;
  for (int run = 0; run < runs; ++run) {
    temp_dir dir;
    moonmqd_process b1("b1", dir.path()), b2("b2", dir.path()), b3("b3", dir.path());
    std::vector<moonmqd_process*> all{&b1, &b2, &b3};
    for (auto* b : all) b->configure(all, raft_on);
    for (auto* b : all) b->start();
    std::string leader;
    for (int i = 0; i < 400 && leader.empty(); ++i) {
      leader = agreed(all);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (leader.empty()) continue;
    moonmqd_process* l = leader == "b1" ? &b1 : leader == "b2" ? &b2 : &b3;
    if (run == 0) {
      // Commit latency, measured once, on the first cluster.
      httplib::Client c("127.0.0.1", l->cluster_port);
      c.set_tcp_nodelay(true);
      // Sent as one of the leader's peers: a sender that is no broker of the cluster is refused.
      const std::string as = leader == "b1" ? "b2" : "b1";
      httplib::Headers h{{"X-Cluster-Token", "e2e-secret"}, {"X-Cluster-From", as}};
      int refused = 0;
      std::string why;
      for (int i = 0; i < proposals; ++i) {
        std::string body = "{\"kind\":2,\"data\":\"{\\\"topic\\\":\\\"bench\\\",\\\"partition\\\":" +
                           std::to_string(i % 64) + ",\\\"broker\\\":\\\"" + leader + "\\\"}\"}";
        auto t0 = std::chrono::steady_clock::now();
        auto r = c.Post("/cluster/raft/propose", h, body, "application/json");
        auto t1 = std::chrono::steady_clock::now();
        if (r && r->status == 200) {
          commit_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        } else if (++refused == 1) {
          why = r ? "HTTP " + std::to_string(r->status) + ": " + r->body : "no answer";
        }
      }
      if (refused)
        std::fprintf(stderr, "raft bench: %d of %d proposals were not committed; the first: %s\n", refused, proposals,
                     why.c_str());
    }
    std::vector<moonmqd_process*> rest;
    for (auto* b : all)
      if (b != l) rest.push_back(b);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const auto t0 = std::chrono::steady_clock::now();
    l->kill9();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10)) {
      auto next = agreed(rest);
      if (!next.empty() && next != leader) {
        failover_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  if (!failover_ms.empty())
    std::printf(
        "{\"bench\":\"raft_failover_processes\",\"runs\":%zu,\"election_timeout_ms\":[500,1000],\"p50_ms\":%.0f,"
        "\"max_ms\":%.0f,\"within_2x_max_election\":%.2f}\n",
        failover_ms.size(), percentile(failover_ms, 0.5), percentile(failover_ms, 1.0),
        static_cast<double>(std::count_if(failover_ms.begin(), failover_ms.end(), [](double v) { return v <= 2000; })) /
            static_cast<double>(failover_ms.size()));
  if (!commit_us.empty())
    std::printf("{\"bench\":\"raft_commit_owner_entry\",\"proposals\":%zu,\"p50_us\":%.0f,\"p99_us\":%.0f}\n",
                commit_us.size(), percentile(commit_us, 0.5), percentile(commit_us, 0.99));
  if (failover_ms.empty()) std::fprintf(stderr, "raft bench: no failover was measured\n");
  if (commit_us.empty()) std::fprintf(stderr, "raft bench: no proposal was committed: no commit latency\n");
  return !failover_ms.empty() && !commit_us.empty();
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  const int seeds = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 10;
  const int proposals = argc > 3 ? std::atoi(argv[3]) : 500;
  simulated_failover(seeds);
  return real_failover_and_commit(runs, proposals) ? 0 : 1;
}
