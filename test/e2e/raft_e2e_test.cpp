// Multi-process tests with Cluster.Raft on: real moonmqd brokers elect a controller, replicate ownership, and fail
// over when the leader is killed.
#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include <map>
#include <thread>

#include "support/eventually.hpp"
#include "support/daemon_process.hpp"

using namespace moonmq::test;

namespace {

rapidjson::Document get_json(const moonmqd_process& b, const std::string& path) {
  auto c = b.api();
  c.set_connection_timeout(std::chrono::seconds(1));
  auto r = c.Get(path.c_str());
  rapidjson::Document d;
  if (!r || r->status != 200) {
    d.SetNull();
    return d;
  }
  d.Parse(r->body.c_str(), r->body.size());
  return d;
}

// Timeouts with room for slow (sanitizer) builds on two busy cores: no election churn while the test looks.
const char* raft_on =
    "\"Raft\":{\"Enabled\":true,\"HeartbeatMs\":100,\"ElectionTimeoutMinMs\":1000,\"ElectionTimeoutMaxMs\":2000}";
const char* balance_dry = "\"Autobalance\":{\"Enabled\":true,\"IntervalSeconds\":1,\"DryRun\":true}";

/// The leader every live broker in `brokers` names, once they agree.
std::string agreed_leader(const std::vector<moonmqd_process*>& brokers) {
  std::string leader;
  for (auto* b : brokers) {
    auto d = get_json(*b, "/v1/cluster");
    if (!d.IsObject()) return "";
    std::string l = d["raft"]["leader"].GetString();
    if (l.empty() || (!leader.empty() && l != leader)) return "";
    leader = l;
  }
  return leader;
}

std::string wait_for_leader(const std::vector<moonmqd_process*>& brokers, std::chrono::milliseconds limit) {
  std::string leader;
  eventually([&] { return !(leader = agreed_leader(brokers)).empty(); }, limit);
  return leader;
}

/// The replicated owner of orders-0 as `b` sees it ("" when none).
std::string owner_seen_by(const moonmqd_process& b) {
  auto d = get_json(b, "/v1/cluster");
  if (!d.IsObject()) return "?";
  for (const auto& e : d["ownership"].GetArray())
    if (std::string(e["topic"].GetString()) == "orders" && e["partition"].GetInt() == 0) return e["broker"].GetString();
  return "";
}

}  // namespace

TEST_CASE("e2e raft: a leader is elected, ownership is replicated to every broker, and a killed leader is replaced",
          "[e2e][raft]") {
  temp_dir dir;
  moonmqd_process b1{"b1", dir.path()}, b2{"b2", dir.path()}, b3{"b3", dir.path()};
  std::vector<moonmqd_process*> all{&b1, &b2, &b3};
  for (auto* b : all) b->configure(all, raft_on, balance_dry);
  for (auto* b : all) b->start();
  std::map<std::string, moonmqd_process*> by_id{{"b1", &b1}, {"b2", &b2}, {"b3", &b3}};

  // A leader within a few election timeouts (2 s at most each).
  std::string leader = wait_for_leader(all, std::chrono::seconds(10));
  REQUIRE_FALSE(leader.empty());
  // Only the leader's balance loop acts; the others stand by: wait until every loop's last pass says so.
  auto as_expected = [&] {
    leader = wait_for_leader(all, std::chrono::seconds(10));
    for (auto* b : all) {
      auto s = get_json(*b, "/v1/autobalancer?scope=broker");
      if (!s.IsObject() || s["passes"].GetUint64() < 2) return false;
      if (std::string(s["last_pass"]["result"].GetString()) != (b->id == leader ? "ok" : "standby")) return false;
    }
    return true;
  };
  eventually(as_expected, std::chrono::seconds(20));
  REQUIRE_FALSE(leader.empty());
  for (auto* b : all) {
    auto s = get_json(*b, "/v1/autobalancer?scope=broker");
    REQUIRE(s.IsObject());
    INFO(b->id);
    CHECK(std::string(s["last_pass"]["result"].GetString()) == (b->id == leader ? "ok" : "standby"));
  }

  // A move on b1 (wherever the leader is) becomes every broker's knowledge through the log.
  {
    auto c = b1.api();
    REQUIRE(c.Post("/v1/topics", R"({"name":"orders","partitions":2,"placement":"local"})", "application/json")->status == 200);
    for (int i = 0; i < 20; ++i)
      REQUIRE(c.Post("/v1/topics/orders/records", R"({"partition":0,"records":[{"value":"before"}]})",
                     "application/json")
                  ->status == 200);
    REQUIRE(c.Post("/v1/reassignments", R"({"topic":"orders","partition":0,"dest":"b2"})", "application/json")
                ->status == 202);
  }
  eventually([&] { return owner_seen_by(b1) == "b2" && owner_seen_by(b2) == "b2" && owner_seen_by(b3) == "b2"; },
             std::chrono::seconds(5));
  for (auto* b : all) {
    INFO(b->id);
    CHECK(owner_seen_by(*b) == "b2");
  }
  // Every broker routes it: b3 never had the topic and still forwards to the owner; b1 sends fetches there.
  {
    auto c = b3.api();
    auto r = c.Post("/v1/topics/orders/records", R"({"partition":0,"records":[{"value":"via b3"}]})",
                    "application/json");
    REQUIRE(r);
    INFO(r->body);
    REQUIRE(r->status == 200);
    rapidjson::Document d;
    d.Parse(r->body.c_str(), r->body.size());
    CHECK(std::string(d["broker"].GetString()) == "b2");
    auto f = b1.api().Get("/v1/topics/orders/partitions/0/records?offset=0");
    REQUIRE(f);
    CHECK(f->status == 421);
    CHECK(f->body.find("\"owner\":\"b2\"") != std::string::npos);
  }

  // kill -9 the leader: the other two elect a new one, its balance loop takes over, and they still agree.
  const auto old_term = get_json(*by_id.at(leader), "/v1/cluster")["raft"]["term"].GetUint64();
  by_id.at(leader)->kill9();
  std::vector<moonmqd_process*> rest;
  for (auto* b : all)
    if (b->id != leader) rest.push_back(b);
  std::string next;
  eventually(
      [&] {
        next = agreed_leader(rest);
        return !next.empty() && next != leader;
      },
      std::chrono::seconds(20));
  REQUIRE_FALSE(next.empty());
  REQUIRE(next != leader);
  const auto passes = get_json(*by_id.at(next), "/v1/autobalancer?scope=broker")["passes"].GetUint64();
  rapidjson::Document s;
  eventually([&] {
    s = get_json(*by_id.at(next), "/v1/autobalancer?scope=broker");
    return s["passes"].GetUint64() > passes;
  });
  CHECK(s["passes"].GetUint64() > passes);
  CHECK(std::string(s["last_pass"]["result"].GetString()) == "ok");
  CHECK(std::string(s["controller"]["id"].GetString()) == next);
  for (auto* b : rest) {
    INFO(b->id);
    CHECK(owner_seen_by(*b) == "b2");
  }
  // The old leader's claim is refused by every broker that has heard the newer term.
  for (auto* b : rest) {
    httplib::Client c("127.0.0.1", b->cluster_port);
    httplib::Headers h{{"X-Cluster-Token", "e2e-secret"},
                       {"X-Cluster-From", leader},
                       {"X-Controller-Epoch", std::to_string(old_term)},
                       {"X-Controller-Id", leader}};
    auto r = c.Post("/cluster/ensure", h, R"({"topic":"fenced","partitions":1})", "application/json");
    REQUIRE(r);
    INFO(b->id << ": " << r->body);
    CHECK(r->status == 409);
  }
  auto m = by_id.at(next)->api().Get("/metrics");
  REQUIRE(m);
  CHECK(m->body.find("moonmq_raft_is_leader 1") != std::string::npos);
  CHECK(m->body.find("moonmq_raft_elections_total 1") != std::string::npos);
}
