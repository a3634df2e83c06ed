// Consumer groups across three real moonmqd: members joined through different brokers share the partitions their
// brokers own, a silent member's partitions go to the others and its commits are fenced, and the group outlives a
// kill -9 of its coordinator.
#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "support/eventually.hpp"
#include "support/group_settling.hpp"
#include "support/e2e_cluster.hpp"

using namespace moonmq::test;
using namespace std::chrono_literals;

namespace {

struct consumer {
  const moonmqd_process* via = nullptr;
  std::string id;
  std::uint64_t epoch = 0;
  std::set<int> partitions;

  void take(const rapidjson::Document& d) {
    epoch = d["member_epoch"].GetUint64();
    partitions.clear();
    for (const auto& p : d["assignment"].GetArray()) partitions.insert(p["partition"].GetInt());
  }

  void join() {
    auto r = via->api().Post("/v1/groups/g/join", R"({"topics":["t"]})", "application/json");
    REQUIRE(r);
    INFO(r->body);
    REQUIRE(r->status == 200);
    auto d = parse(r->body);
    id = d["member_id"].GetString();
    take(d);
  }

  /// One heartbeat reporting what it holds; the HTTP status.
  int beat() {
    std::string owned = "[";
    for (int p : partitions) owned += (owned.size() > 1 ? "," : "") + std::string("{\"topic\":\"t\",\"partition\":") +
                                      std::to_string(p) + "}";
    auto r = via->api().Post("/v1/groups/g/heartbeat",
                             "{\"member_id\":\"" + id + "\",\"member_epoch\":" + std::to_string(epoch) +
                                 ",\"owned\":" + owned + "]}",
                             "application/json");
    if (!r) return 0;
    if (r->status == 200) take(parse(r->body));
    return r->status;
  }

  int commit(int partition, std::uint64_t offset, const moonmqd_process& owner) const {
    auto r = owner.api().Post("/v1/groups/g/offsets",
                              "{\"topic\":\"t\",\"partition\":" + std::to_string(partition) +
                                  ",\"offset\":" + std::to_string(offset) + ",\"member_id\":\"" + id +
                                  "\",\"member_epoch\":" + std::to_string(epoch) + "}",
                              "application/json");
    return r ? r->status : 0;
  }
};

/// Heartbeats everyone until each partition is held by exactly one member and nobody's assignment changes.
void settle(std::vector<consumer*> members, std::size_t partitions) {
  const bool settled = eventually([&] { return settled_after_heartbeats(members, partitions); }, 20s, 100ms);
  if (!settled) FAIL("the group did not settle");
}

}  // namespace

TEST_CASE("e2e groups: members share what their brokers own, a silent member is replaced and fenced, and the group "
          "outlives its coordinator",
          "[e2e][groups]") {
  temp_dir dir;
  moonmqd_process b1("b1", dir.path()), b2("b2", dir.path()), b3("b3", dir.path());
  std::vector<moonmqd_process*> all{&b1, &b2, &b3};
  const std::string timing = R"("Groups": {"SessionTimeoutMs": 1500, "HeartbeatIntervalMs": 100})";
  for (auto* b : all) b->configure(all, "", timing);
  for (auto* b : all) b->start();
  std::map<std::string, moonmqd_process*> by_id{{"b1", &b1}, {"b2", &b2}, {"b3", &b3}};
  REQUIRE(b1.api().Post("/v1/topics", R"({"name":"t","partitions":6,"placement":"local"})", "application/json")->status == 200);
  move(b1, 2, "b2");
  move(b1, 3, "b2");
  move(b1, 4, "b3");
  move(b1, 5, "b3");
  const std::map<int, moonmqd_process*> owner{{0, &b1}, {1, &b1}, {2, &b2}, {3, &b2}, {4, &b3}, {5, &b3}};

  consumer m1{&b1}, m2{&b1}, m3{&b2}, m4{&b2}, m5{&b3}, m6{&b3};
  std::vector<consumer*> members{&m1, &m2, &m3, &m4, &m5, &m6};
  for (auto* m : members) m->join();
  // Settled on the moved owners: the moves are confirmed on b1 first, and the coordinator learns them from its next
  // refresh of the placement directory (docs/groups.md), so one round of heartbeats may still agree on the owners
  // before the moves. A coordinator that never learns them fails the wait.
  const bool on_owners = eventually(
      [&] {
        if (!settled_after_heartbeats(members, 6)) return false;
        for (auto* m : members)
          for (int p : m->partitions)
            if (owner.at(p) != m->via) return false;
        return true;
      },
      20s, 100ms);
  if (!on_owners) FAIL("the group did not settle on the partitions' owners");
  for (auto* m : members) {
    INFO(m->id << " via " << m->via->id);
    REQUIRE(m->partitions.size() == 1);
    CHECK(owner.at(*m->partitions.begin()) == m->via);  // only what its broker owns
  }
  // A commit by the holder is taken by the owner; by anyone else, or with no member named, it is fenced.
  const int p5 = *m5.partitions.begin();
  CHECK(m5.commit(p5, 0, *owner.at(p5)) == 200);
  CHECK(m6.commit(p5, 0, *owner.at(p5)) == 409);
  auto anonymous = owner.at(p5)->api().Post("/v1/groups/g/offsets",
                                            "{\"topic\":\"t\",\"partition\":" + std::to_string(p5) + ",\"offset\":0}",
                                            "application/json");
  REQUIRE(anonymous);
  CHECK(anonymous->status == 409);

  // m5 falls silent: after the session timeout its partition goes to m6, and m5 is a zombie whose commit is fenced.
  members = {&m1, &m2, &m3, &m4, &m6};
  REQUIRE(eventually(
      [&] {
        for (auto* m : members) REQUIRE(m->beat() == 200);
        return m6.partitions.count(p5) > 0;
      },
      10s, 100ms));
  CHECK(m6.partitions.size() == 2);
  CHECK(m5.commit(p5, 0, *owner.at(p5)) == 409);
  CHECK(m6.commit(p5, 0, *owner.at(p5)) == 200);
  CHECK(m5.beat() == 404);  // unknown now: it must rejoin

  // kill -9 of the coordinator, and back: the members keep their ids, partitions and epochs.
  auto described = parse(b1.api().Get("/v1/groups/g")->body);
  const std::string coordinator = described["coordinator"].GetString();
  const auto epoch = described["epoch"].GetUint64();
  by_id.at(coordinator)->kill9();
  by_id.at(coordinator)->start();
  settle(members, 6);
  auto after = parse(b1.api().Get("/v1/groups/g")->body);
  CHECK(after["epoch"].GetUint64() >= epoch);
  CHECK(after["members"].Size() == 5);
  CHECK(m6.commit(p5, 0, *owner.at(p5)) == 200);

  // With the coordinator down, a join through another broker is 503 naming it.
  by_id.at(coordinator)->kill9();
  const moonmqd_process* other = coordinator == "b1" ? &b2 : &b1;
  auto refused = other->api().Post("/v1/groups/g/join", R"({"topics":["t"]})", "application/json");
  REQUIRE(refused);
  CHECK(refused->status == 503);
  CHECK_THAT(refused->body, Catch::Contains(coordinator));
}

TEST_CASE("e2e groups: a moved partition goes to a member on its new owner, which resumes from the committed offset",
          "[e2e][groups]") {
  temp_dir dir;
  moonmqd_process b1("b1", dir.path()), b2("b2", dir.path());
  std::vector<moonmqd_process*> all{&b1, &b2};
  const std::string timing = R"("Groups": {"SessionTimeoutMs": 1500, "HeartbeatIntervalMs": 100})";
  for (auto* b : all) b->configure(all, "", timing);
  for (auto* b : all) b->start();
  auto api = b1.api();
  REQUIRE(api.Post("/v1/topics", R"({"name":"t","partitions":2,"placement":"local"})", "application/json")->status == 200);
  std::vector<std::uint64_t> offsets;
  for (int i = 0; i < 10; ++i) {
    auto r = api.Post("/v1/topics/t/records", "{\"partition\":1,\"records\":[{\"value\":\"r" + std::to_string(i) + "\"}]}",
                      "application/json");
    REQUIRE(r);
    REQUIRE(r->status == 200);
    offsets.push_back(parse(r->body)["offsets"][0].GetUint64());
  }
  consumer m1{&b1}, m2{&b2};
  m1.join();
  m2.join();
  settle({&m1, &m2}, 2);
  REQUIRE(m1.partitions == std::set<int>{0, 1});  // b1 owns both
  CHECK(m2.partitions.empty());
  // m1 consumed t-1 up to record 6 and committed that.
  REQUIRE(m1.commit(1, offsets[6], b1) == 200);

  move(b1, 1, "b2");
  // The coordinator learns the new owner within a tick; m1 lets t-1 go, then m2 is handed it.
  eventually(
      [&] {
        if (m2.partitions == std::set<int>{1}) return true;
        REQUIRE(m1.beat() == 200);
        REQUIRE(m2.beat() == 200);
        return false;
      },
      10s, 100ms);
  CHECK(m1.partitions == std::set<int>{0});
  CHECK(m2.partitions == std::set<int>{1});
  // The committed offset followed the partition; the old owner no longer answers for it.
  auto committed = b2.api().Get("/v1/groups/g/offsets?topic=t&partition=1");
  REQUIRE(committed);
  REQUIRE(committed->status == 200);
  CHECK(parse(committed->body)["offset"].GetUint64() == offsets[6]);
  auto stale = b1.api().Get("/v1/groups/g/offsets?topic=t&partition=1");
  REQUIRE(stale);
  CHECK(stale->status == 421);
  // m2 resumes there: the records from 6 on, nothing lost, nothing before it.
  auto fetched = b2.api().Get(("/v1/topics/t/partitions/1/records?offset=" + std::to_string(offsets[6])).c_str());
  REQUIRE(fetched);
  REQUIRE(fetched->status == 200);
  const auto page = parse(fetched->body);
  const auto records = page["records"].GetArray();
  REQUIRE(records.Size() == 4);
  CHECK(std::string(records[0]["value"].GetString()) == "r6");
  CHECK(m2.commit(1, offsets[9], b2) == 200);
  CHECK(m1.commit(1, offsets[9], b2) == 409);  // its former holder is fenced
}
