// Idempotent and transactional produce across three real moonmqd: retries never duplicate, transactions spanning
// every broker commit or abort whole for a read_committed reader, a zombie producer is fenced, and a transaction
// whose commit point was written survives kill -9 of an owner and of its coordinator.
#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include <chrono>
#include <map>
#include <random>
#include <thread>

#include "support/eventually.hpp"
#include "support/e2e_cluster.hpp"

using namespace moonmq::test;
using namespace std::chrono_literals;

namespace {

/// The values a read_committed reader gets from partition `p` on its owner.
std::vector<std::string> committed(const moonmqd_process& owner, int p) {
  auto r = owner.api().Get(("/v1/topics/t/partitions/" + std::to_string(p) + "/records?isolation=read_committed").c_str());
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  auto d = parse(r->body);
  std::vector<std::string> out;
  for (const auto& rec : d["records"].GetArray()) out.emplace_back(rec["value"].GetString());
  return out;
}

std::string produce_body(int partition, const std::vector<std::string>& values, std::uint64_t id, std::uint32_t epoch,
                         std::uint32_t sequence, const std::string& tid = "") {
  std::string records;
  for (const auto& v : values) records += (records.empty() ? "" : ",") + std::string("{\"value\":\"") + v + "\"}";
  return "{\"partition\":" + std::to_string(partition) + ",\"records\":[" + records + "],\"producer\":{\"id\":" +
         std::to_string(id) + ",\"epoch\":" + std::to_string(epoch) + ",\"sequence\":" + std::to_string(sequence) + "}" +
         (tid.empty() ? "" : ",\"transaction\":{\"transactional_id\":\"" + tid + "\"}") + "}";
}

struct session {
  std::uint64_t id = 0;
  std::uint32_t epoch = 0;
};

session init(const moonmqd_process& via, const std::string& tid) {
  auto r = via.api().Post("/v1/producers", tid.empty() ? "{}" : "{\"transactional_id\":\"" + tid + "\"}",
                          "application/json");
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  auto d = parse(r->body);
  return {d["producer_id"].GetUint64(), d["producer_epoch"].GetUint()};
}

/// Commit or abort; the answer's body. With `wait`, the answer comes once the markers are delivered.
rapidjson::Document end(const moonmqd_process& via, const std::string& tid, session& s, bool commit, bool wait = true) {
  auto r = via.api().Post(("/v1/transactions/" + tid + (commit ? "/commit" : "/abort")).c_str(),
                          "{\"producer_id\":" + std::to_string(s.id) + ",\"producer_epoch\":" + std::to_string(s.epoch) +
                              (wait ? ",\"wait\":true}" : "}"),
                          "application/json");
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  auto d = parse(r->body);
  s.epoch = d["producer_epoch"].GetUint();
  return d;
}

/// Three brokers, each the owner of one partition of topic t: t-0 on b1, t-1 on b2, t-2 on b3.
struct three_owners {
  temp_dir dir;
  moonmqd_process b1{"b1", dir.path()}, b2{"b2", dir.path()}, b3{"b3", dir.path()};
  std::vector<moonmqd_process*> all{&b1, &b2, &b3};
  std::map<std::string, moonmqd_process*> by_id{{"b1", &b1}, {"b2", &b2}, {"b3", &b3}};
  three_owners() {
    for (auto* b : all) b->configure(all);
    for (auto* b : all) b->start();
    REQUIRE(b1.api().Post("/v1/topics", R"({"name":"t","partitions":3,"placement":"local"})", "application/json")->status == 200);
    move(b1, 1, "b2");
    move(b1, 2, "b3");
  }
};

}  // namespace

TEST_CASE("e2e transactions: retries never duplicate, transactions over three brokers are read whole or not at "
          "all, and a zombie is fenced",
          "[e2e][txn]") {
  three_owners c;
  auto &b1 = c.b1, &b2 = c.b2, &b3 = c.b3;
  auto& all = c.all;
  const auto& owner = c.all;

  // Idempotence, through a broker that forwards: a retry gets the original offsets and writes nothing.
  auto idem = init(b2, "");
  auto first = b2.api().Post("/v1/topics/t/records", produce_body(0, {"i0", "i1"}, idem.id, 0, 0), "application/json");
  auto retry = b3.api().Post("/v1/topics/t/records", produce_body(0, {"i0", "i1"}, idem.id, 0, 0), "application/json");
  REQUIRE(first);
  REQUIRE(retry);
  REQUIRE(first->status == 200);
  REQUIRE(retry->status == 200);
  CHECK(parse(first->body)["offsets"] == parse(retry->body)["offsets"]);
  CHECK(committed(b1, 0) == std::vector<std::string>{"i0", "i1"});
  auto gap = b1.api().Post("/v1/topics/t/records", produce_body(0, {"i5"}, idem.id, 0, 5), "application/json");
  REQUIRE(gap);
  CHECK(gap->status == 409);
  CHECK_THAT(gap->body, Catch::Contains("out_of_order_sequence"));

  // Transactions spanning the three brokers, produced through any of them, committed or aborted at random. Every
  // other end answers at its decision (the default): the next transaction's first produce then waits at the
  // coordinator for the markers, so the reads after it see the ended transaction.
  std::map<int, std::vector<std::string>> expected{{0, {"i0", "i1"}}, {1, {}}, {2, {}}};
  const std::string tid = "tx-e2e";
  auto s = init(b1, tid);
  std::mt19937 rng(11);
  for (int n = 0; n < 8; ++n) {
    std::map<int, std::vector<std::string>> written;
    for (int p = 0; p < 3; ++p) {
      std::vector<std::string> values{"n" + std::to_string(n) + "p" + std::to_string(p) + "a",
                                      "n" + std::to_string(n) + "p" + std::to_string(p) + "b"};
      auto* via = all[rng() % 3];
      auto r = via->api().Post("/v1/topics/t/records", produce_body(p, values, s.id, s.epoch, 0, tid), "application/json");
      REQUIRE(r);
      INFO(r->body);
      REQUIRE(r->status == 200);
      written[p] = values;
      CHECK(committed(*owner[static_cast<std::size_t>(p)], p) == expected[p]);  // open: invisible
    }
    const bool commit = rng() % 2 == 0, wait = n % 2 == 1;
    auto d = end(*all[rng() % 3], tid, s, commit, wait);
    const std::string state = d["state"].GetString();
    if (wait)
      CHECK(state == (commit ? "complete_commit" : "complete_abort"));
    else
      CHECK((state == (commit ? "complete_commit" : "complete_abort") ||
             state == (commit ? "prepare_commit" : "prepare_abort")));
    if (commit)
      for (auto& [p, values] : written) expected[p].insert(expected[p].end(), values.begin(), values.end());
    if (wait)
      for (int p = 0; p < 3; ++p) CHECK(committed(*owner[static_cast<std::size_t>(p)], p) == expected[p]);
  }

  // A zombie: a new session of the id fences the old one at the coordinator and at every owner.
  auto zombie = s;
  auto open = b2.api().Post("/v1/topics/t/records", produce_body(1, {"z"}, zombie.id, zombie.epoch, 0, tid),
                            "application/json");
  REQUIRE(open);
  REQUIRE(open->status == 200);
  auto fresh = init(b3, tid);
  CHECK(fresh.epoch > zombie.epoch);
  auto late = b1.api().Post("/v1/topics/t/records", produce_body(1, {"z2"}, zombie.id, zombie.epoch, 1, tid),
                            "application/json");
  REQUIRE(late);
  CHECK(late->status == 409);
  CHECK_THAT(late->body, Catch::Contains("producer_fenced"));
  CHECK(committed(b2, 1) == expected[1]);  // its open transaction was aborted
}

TEST_CASE("e2e transactions: partitions declared before their produces are recorded at the coordinator at once, "
          "a declared partition that moves still gets its marker, and bad declarations are refused",
          "[e2e][txn]") {
  three_owners c;
  auto& b1 = c.b1;
  const std::string tid = "tx-declared";
  auto s = init(b1, tid);
  auto declare = [&](const session& with, const std::string& partitions) {
    auto r = b1.api().Post(("/v1/transactions/" + tid + "/partitions").c_str(),
                           "{\"producer_id\":" + std::to_string(with.id) + ",\"producer_epoch\":" +
                               std::to_string(with.epoch) + ",\"partitions\":[" + partitions + "]}",
                           "application/json");
    REQUIRE(r);
    return *r;
  };
  const std::string three =
      R"({"topic":"t","partition":0},{"topic":"t","partition":1},{"topic":"t","partition":2})";

  // Declared, then committed: the coordinator holds all three before any record, each with its owner.
  auto ok = declare(s, three);
  INFO(ok.body);
  REQUIRE(ok.status == 200);
  auto held = parse(b1.api().Get(("/v1/transactions/" + tid).c_str())->body);
  REQUIRE(held["partitions"].Size() == 3);
  std::map<int, std::string> owners;
  for (const auto& p : held["partitions"].GetArray()) owners[p["partition"].GetInt()] = p["owner"].GetString();
  CHECK(owners == std::map<int, std::string>{{0, "b1"}, {1, "b2"}, {2, "b3"}});
  // t-2 moves after it was declared and before its records: they land on b1, where the marker must go too.
  move(b1, 2, "b1");
  for (int p = 0; p < 3; ++p) {
    auto r = b1.api().Post("/v1/topics/t/records", produce_body(p, {"c" + std::to_string(p)}, s.id, s.epoch, 0, tid),
                           "application/json");
    REQUIRE(r);
    INFO(r->body);
    REQUIRE(r->status == 200);
  }
  CHECK(committed(b1, 2).empty());
  auto d = end(b1, tid, s, true);
  CHECK(std::string(d["state"].GetString()) == "complete_commit");
  CHECK(committed(b1, 0) == std::vector<std::string>{"c0"});
  CHECK(committed(c.b2, 1) == std::vector<std::string>{"c1"});
  CHECK(committed(b1, 2) == std::vector<std::string>{"c2"});

  // Declared, then aborted: nothing of it is read.
  REQUIRE(declare(s, three).status == 200);
  for (int p = 0; p < 3; ++p)
    REQUIRE(b1.api().Post("/v1/topics/t/records", produce_body(p, {"a" + std::to_string(p)}, s.id, s.epoch, 0, tid),
                          "application/json")->status == 200);
  end(b1, tid, s, false);
  CHECK(committed(b1, 0) == std::vector<std::string>{"c0"});
  CHECK(committed(b1, 2) == std::vector<std::string>{"c2"});

  // Refused: a partition no broker has (its marker could never be delivered), a malformed list, an old epoch.
  auto missing = declare(s, R"({"topic":"t","partition":7})");
  CHECK(missing.status == 404);
  auto nowhere = declare(s, R"({"topic":"nosuch","partition":0})");
  CHECK(nowhere.status == 404);
  CHECK(declare(s, R"({"topic":"t","partition":-1})").status == 400);
  CHECK(declare(s, "").status == 400);
  session old = s;
  old.epoch -= 1;
  auto fenced = declare(old, three);
  CHECK(fenced.status == 409);
  CHECK_THAT(fenced.body, Catch::Contains("producer_fenced"));
  auto after = parse(b1.api().Get(("/v1/transactions/" + tid).c_str())->body);
  CHECK(std::string(after["state"].GetString()) == "complete_abort");  // no refused declaration opened one
}

TEST_CASE("e2e transactions: after the commit point, kill -9 of an owner and of the coordinator does not lose the "
          "commit, and readers wait at the LSO until the markers arrive",
          "[e2e][txn]") {
  three_owners c;
  auto& b1 = c.b1;
  auto& all = c.all;
  auto& by_id = c.by_id;
  const auto& owner = c.all;

  const std::string tid = "tx-crash";
  auto s = init(b1, tid);
  auto described = parse(b1.api().Get(("/v1/transactions/" + tid).c_str())->body);
  auto* coordinator = by_id.at(described["coordinator"].GetString());
  // An owner that is not the coordinator, and a broker that is neither, to talk through.
  int victim = 0;
  while (owner[static_cast<std::size_t>(victim)] == coordinator) ++victim;
  auto* crashed = owner[static_cast<std::size_t>(victim)];
  moonmqd_process* other = nullptr;
  for (auto* b : all)
    if (b != coordinator && b != crashed) other = b;

  for (int p = 0; p < 3; ++p) {
    auto r = other->api().Post("/v1/topics/t/records", produce_body(p, {"v" + std::to_string(p)}, s.id, s.epoch, 0, tid),
                               "application/json");
    REQUIRE(r);
    REQUIRE(r->status == 200);
  }
  crashed->kill9();
  auto d = end(*coordinator, tid, s, true);
  INFO("coordinator " << coordinator->id << ", crashed " << crashed->id << ", through " << other->id << ": "
                      << other->api().Get(("/v1/transactions/" + tid).c_str())->body);
  CHECK(std::string(d["state"].GetString()) == "prepare_commit");  // decided; one marker still to deliver
  for (int p = 0; p < 3; ++p)
    if (p != victim) CHECK(committed(*owner[static_cast<std::size_t>(p)], p) == std::vector<std::string>{"v" + std::to_string(p)});

  coordinator->kill9();
  crashed->start();
  // The restarted owner keeps the transaction open (its enrolment is in the log): its reader waits at the LSO.
  CHECK(committed(*crashed, victim).empty());
  coordinator->start();
  CHECK(eventually([&] { return committed(*crashed, victim) == std::vector<std::string>{"v" + std::to_string(victim)}; },
                   20s));
  auto after = parse(other->api().Get(("/v1/transactions/" + tid).c_str())->body);
  CHECK(std::string(after["state"].GetString()) == "complete_commit");
}

TEST_CASE("e2e transactions: a partition moved in the middle of a transaction keeps it open on its new owner, "
          "where the commit marker finds it",
          "[e2e][txn]") {
  temp_dir dir;
  moonmqd_process b1("b1", dir.path()), b2("b2", dir.path());
  std::vector<moonmqd_process*> all{&b1, &b2};
  for (auto* b : all) b->configure(all);
  for (auto* b : all) b->start();
  REQUIRE(b1.api().Post("/v1/topics", R"({"name":"t","partitions":2,"placement":"local"})", "application/json")->status == 200);
  const std::string tid = "tx-move";
  auto s = init(b2, tid);
  for (int p = 0; p < 2; ++p) {
    auto r = b1.api().Post("/v1/topics/t/records", produce_body(p, {"a" + std::to_string(p)}, s.id, s.epoch, 0, tid),
                           "application/json");
    REQUIRE(r);
    REQUIRE(r->status == 200);
  }
  move(b1, 1, "b2");
  CHECK(committed(b2, 1).empty());  // open on the new owner too
  auto more = b1.api().Post("/v1/topics/t/records", produce_body(1, {"b1"}, s.id, s.epoch, 1, tid), "application/json");
  REQUIRE(more);
  INFO(more->body);
  REQUIRE(more->status == 200);
  CHECK_THAT(more->body, Catch::Contains("\"b2\""));  // landed on the new owner
  auto d = end(b1, tid, s, true);
  CHECK(std::string(d["state"].GetString()) == "complete_commit");
  CHECK(committed(b2, 1) == std::vector<std::string>{"a1", "b1"});
  CHECK(committed(b1, 0) == std::vector<std::string>{"a0"});
}

TEST_CASE("e2e transactions: the coordinator crashes right after its commit point (fault point txn.after_prepare), and "
          "after its restart every partition gets the commit",
          "[e2e][txn][faults]") {
  three_owners c;
  auto &b1 = c.b1, &b2 = c.b2;
  auto& by_id = c.by_id;
  const auto& owner = c.all;

  const std::string tid = "tx-fault";
  auto s = init(b1, tid);
  auto* coordinator = by_id.at(parse(b1.api().Get(("/v1/transactions/" + tid).c_str())->body)["coordinator"].GetString());
  moonmqd_process* via = coordinator == &b1 ? &b2 : &b1;
  // The coordinator again, now set to die right after the prepare record is written (synced) and before any marker.
  REQUIRE(coordinator->terminate() == 0);
  coordinator->faults = "txn.after_prepare=crash";
  coordinator->start();
  for (int p = 0; p < 3; ++p) {
    auto r = via->api().Post("/v1/topics/t/records", produce_body(p, {"f" + std::to_string(p)}, s.id, s.epoch, 0, tid),
                             "application/json");
    REQUIRE(r);
    INFO(r->body);
    REQUIRE(r->status == 200);
  }
  auto commit = via->api().Post(("/v1/transactions/" + tid + "/commit").c_str(),
                                "{\"producer_id\":" + std::to_string(s.id) + ",\"producer_epoch\":" +
                                    std::to_string(s.epoch) + ",\"wait\":true}",
                                "application/json");
  REQUIRE(commit);
  CHECK(commit->status == 503);  // the coordinator went away mid-call: the outcome is unknown to the client
  int sig = 0;
  REQUIRE(coordinator->wait_for_end(10s, &sig));
  CHECK(sig == SIGKILL);
  for (int p = 0; p < 3; ++p)  // no marker yet on the brokers that are up
    if (owner[static_cast<std::size_t>(p)] != coordinator) CHECK(committed(*owner[static_cast<std::size_t>(p)], p).empty());

  coordinator->faults.clear();
  coordinator->start();
  CHECK(eventually(
      [&] {
        for (int p = 0; p < 3; ++p)
          if (committed(*owner[static_cast<std::size_t>(p)], p) != std::vector<std::string>{"f" + std::to_string(p)})
            return false;
        return true;
      },
      20s));
  auto after = parse(via->api().Get(("/v1/transactions/" + tid).c_str())->body);
  CHECK(std::string(after["state"].GetString()) == "complete_commit");
}
