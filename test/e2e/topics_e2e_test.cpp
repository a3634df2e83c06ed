// Topics as cluster metadata, with real moonmqd: one topic, one set of partitions, whichever broker is asked, with
// Raft and without (docs/cluster.md, "Topics").
#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "support/eventually.hpp"
#include "support/daemon_process.hpp"
#include "support/e2e_cluster.hpp"
#include "support/process.hpp"
#include "moonmq/core/fnv1a.hpp"
#include "storage/posix_file.hpp"

using namespace moonmq::test;

namespace {

const char* raft_on =
    "\"Raft\":{\"Enabled\":true,\"HeartbeatMs\":100,\"ElectionTimeoutMinMs\":1000,\"ElectionTimeoutMaxMs\":2000}";

struct cluster3 {
  explicit cluster3(bool raft) {
    std::vector<moonmqd_process*> all{&b1, &b2, &b3};
    for (auto* b : all) b->configure(all, raft ? raft_on : "");
    for (auto* b : all) b->start();
  }
  moonmqd_process& by_id(const std::string& id) { return id == "b1" ? b1 : id == "b2" ? b2 : b3; }
  temp_dir dir;
  moonmqd_process b1{"b1", dir.path()}, b2{"b2", dir.path()}, b3{"b3", dir.path()};
};

struct answer {
  int status = 0;
  std::string body;
};

answer post(const moonmqd_process& b, const std::string& path, const std::string& body) {
  auto r = b.api().Post(path.c_str(), body, "application/json");
  return r ? answer{r->status, r->body} : answer{};
}

answer del(const moonmqd_process& b, const std::string& path) {
  auto r = b.api().Delete(path.c_str());
  return r ? answer{r->status, r->body} : answer{};
}

/// POSTs until the answer is not 503 (with Raft, until a leader is elected), for at most 15 s.
answer post_when_ready(const moonmqd_process& b, const std::string& path, const std::string& body) {
  answer a;
  eventually(
      [&] {
        a = post(b, path, body);
        return a.status != 503 && a.status != 0;
      },
      std::chrono::seconds(15), std::chrono::milliseconds(100));
  return a;
}

/// Waits (up to 20 s) until `b` answers /readyz with 200: started and caught up (with Raft, its log applied).
bool ready(const moonmqd_process& b) {
  return eventually(
      [&] {
        auto r = b.api().Get("/readyz");
        return r && r->status == 200;
      },
      std::chrono::seconds(20), std::chrono::milliseconds(100));
}

/// The topic as broker `b` lists it (null when it does not).
rapidjson::Document listed(const moonmqd_process& b, const std::string& topic) {
  auto r = b.api().Get("/v1/topics");
  rapidjson::Document out;
  out.SetNull();
  if (!r || r->status != 200) return out;
  auto d = parse(r->body);
  for (const auto& t : d["topics"].GetArray())
    if (topic == t["name"].GetString()) out.CopyFrom(t, out.GetAllocator());
  return out;
}

/// Waits until every broker lists `topic` with `partitions` (0: does not list it), for at most 10 s.
bool everyone_lists(cluster3& c, const std::string& topic, int partitions) {
  return eventually([&] {
    for (auto* b : {&c.b1, &c.b2, &c.b3}) {
      auto t = listed(*b, topic);
      if (!(partitions == 0 ? t.IsNull() : (!t.IsNull() && t["partitions"].GetInt() == partitions))) return false;
    }
    return true;
  });
}

/// The same name created on all three brokers at once: exactly one create succeeds.
void concurrent_creates(cluster3& c, const std::string& name) {
  std::atomic<int> made{0}, refused{0};
  std::vector<std::thread> threads;
  for (auto* b : {&c.b1, &c.b2, &c.b3})
    threads.emplace_back([&, b] {
      auto a = post(*b, "/v1/topics", "{\"name\":\"" + name + "\",\"partitions\":2,\"placement\":\"local\"}");
      if (a.status == 200) ++made;
      if (a.status == 409 && a.body.find("topic_exists") != std::string::npos) ++refused;
    });
  for (auto& t : threads) t.join();
  CHECK(made == 1);
  CHECK(refused == 2);
  // One log per partition: exactly one broker serves each.
  auto parts = parse(c.b1.api().Get(("/v1/partitions?topic=" + name).c_str())->body);
  INFO(c.b1.api().Get(("/v1/partitions?topic=" + name).c_str())->body);
  CHECK(parts["partitions"].Size() == 2);
}

void the_reproduction(cluster3& c) {
  // Issue 28: the same topic created on a second broker forked a partition, and a move then dropped a record.
  auto first = post_when_ready(c.b1, "/v1/topics", R"({"name":"ev2","partitions":1})");
  REQUIRE(first.status == 200);
  const std::string owner = parse(first.body)["owners"][0].GetString();
  auto second = post(c.b3, "/v1/topics", R"({"name":"ev2","partitions":1})");
  CHECK(second.status == 409);
  CHECK_THAT(second.body, Catch::Contains("topic_exists") && Catch::Contains(owner));
  // Produce through two brokers: both records land on the one owner, at distinct offsets.
  auto via_b1 = post(c.b1, "/v1/topics/ev2/records", R"({"partition":0,"records":[{"value":"via b1"}]})");
  auto via_b3 = post(c.b3, "/v1/topics/ev2/records", R"({"partition":0,"records":[{"value":"via b3"}]})");
  REQUIRE(via_b1.status == 200);
  REQUIRE(via_b3.status == 200);
  CHECK(std::string(parse(via_b1.body)["broker"].GetString()) == owner);
  CHECK(std::string(parse(via_b3.body)["broker"].GetString()) == owner);
  // A move keeps both.
  const std::string dest = owner == "b2" ? "b3" : "b2";
  move(c.by_id(owner), 0, dest, "ev2");
  auto fetched = c.by_id(dest).api().Get("/v1/topics/ev2/partitions/0/records?offset=0");
  REQUIRE(fetched);
  CHECK_THAT(fetched->body, Catch::Contains("via b1") && Catch::Contains("via b3"));
}

void placement_grow_and_delete(cluster3& c) {
  // Spread by default: three partitions, one on each broker; any broker routes to their owners.
  auto made = post_when_ready(c.b2, "/v1/topics", R"({"name":"spread","partitions":3})");
  REQUIRE(made.status == 200);
  auto d = parse(made.body);
  std::set<std::string> owners;
  for (const auto& o : d["owners"].GetArray()) owners.insert(o.GetString());
  CHECK(owners == std::set<std::string>{"b1", "b2", "b3"});
  REQUIRE(everyone_lists(c, "spread", 3));
  for (int p = 0; p < 3; ++p) {
    auto a = post(c.b1, "/v1/topics/spread/records",
                  "{\"partition\":" + std::to_string(p) + ",\"records\":[{\"value\":\"v" + std::to_string(p) + "\"}]}");
    REQUIRE(a.status == 200);
    CHECK(std::string(parse(a.body)["broker"].GetString()) == d["owners"][p].GetString());
  }
  // Named brokers, and a bad placement.
  auto named = post(c.b1, "/v1/topics", R"({"name":"named","partitions":2,"brokers":["b3"]})");
  REQUIRE(named.status == 200);
  CHECK_THAT(named.body, Catch::Contains(R"("owners":["b3","b3"])"));
  CHECK(post(c.b1, "/v1/topics", R"({"name":"x","brokers":["b9"]})").status == 400);
  CHECK(post(c.b1, "/v1/topics", R"({"name":"x","placement":"everywhere"})").status == 400);
  // Exact: partition i on brokers[i] (what a Kafka client's explicit assignments become), also when it grows.
  auto exact = post(c.b1, "/v1/topics", R"({"name":"exact","partitions":3,"placement":"exact","brokers":["b3","b1","b2"]})");
  REQUIRE(exact.status == 200);
  CHECK_THAT(exact.body, Catch::Contains(R"("owners":["b3","b1","b2"])"));
  CHECK(post(c.b1, "/v1/topics", R"({"name":"x","partitions":2,"placement":"exact","brokers":["b3"]})").status == 400);
  auto exact_grown = post(c.b2, "/v1/topics/exact/partitions", R"({"count":4,"brokers":["b2"]})");
  REQUIRE(exact_grown.status == 200);
  CHECK_THAT(exact_grown.body, Catch::Contains(R"("owners":["b3","b1","b2","b2"])"));
  CHECK(post(c.b2, "/v1/topics/exact/partitions", R"({"count":6,"brokers":["b2"]})").status == 400);

  // Grow through another broker: every broker learns the count, and the new partitions take produces.
  auto grown = post(c.b3, "/v1/topics/spread/partitions", R"({"count":5})");
  REQUIRE(grown.status == 200);
  CHECK(parse(grown.body)["version"].GetUint64() == 2);
  REQUIRE(everyone_lists(c, "spread", 5));
  CHECK(post(c.b2, "/v1/topics/spread/records", R"({"partition":4,"records":[{"value":"new"}]})").status == 200);
  CHECK(post(c.b2, "/v1/topics/spread/partitions", R"({"count":2})").status == 200);  // never shrinks
  REQUIRE(everyone_lists(c, "spread", 5));

  // Delete: gone everywhere; a produce or fetch then gets 404, and nothing makes it again.
  auto gone = del(c.b1, "/v1/topics/spread");
  REQUIRE(gone.status == 200);
  CHECK_THAT(gone.body, Catch::Contains("\"deleted\":true"));
  REQUIRE(everyone_lists(c, "spread", 0));
  for (auto* b : {&c.b1, &c.b2, &c.b3}) {
    auto late = post(*b, "/v1/topics/spread/records", R"({"partition":0,"records":[{"value":"late"}]})");
    INFO(late.body);
    CHECK(late.status == 404);
    auto read = b->api().Get("/v1/topics/spread/partitions/0/records?offset=0");
    INFO(read->body);
    CHECK(read->status == 404);
  }
  CHECK(del(c.b2, "/v1/topics/spread").status == 404);
  // The name may be used again, for a new topic that starts empty.
  auto again = post(c.b3, "/v1/topics", R"({"name":"spread","partitions":1,"placement":"local"})");
  REQUIRE(again.status == 200);
  CHECK(parse(again.body)["version"].GetUint64() == 4);
  auto empty = c.b3.api().Get("/v1/topics/spread/partitions/0/records?offset=0");
  CHECK_THAT(empty->body, Catch::Contains(R"("records":[])"));
}


/// The records of `tp` as `b` serves them, values in order.
std::vector<std::string> values(const moonmqd_process& b, const std::string& topic, int partition) {
  auto r = b.api().Get(("/v1/topics/" + topic + "/partitions/" + std::to_string(partition) + "/records?offset=0").c_str());
  std::vector<std::string> out;
  if (!r || r->status != 200) return out;
  auto d = parse(r->body);
  for (const auto& rec : d["records"].GetArray()) out.emplace_back(rec["value"].GetString());
  return out;
}

/// The operator decides for each of b2's strays of dup (made by the no-Raft case below: dup-0..2 served by b1, a
/// copy of each on b2, and "via b2" produced to b1's dup-0 since).
void reconcile_the_strays(cluster3& c) {
  const std::string broker = "127.0.0.1:" + std::to_string(c.b3.api_port);
  auto ctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {MOONMQ_CTL_BIN, "--broker", broker});
    return run_process(args);
  };
  REQUIRE(post(c.b1, "/v1/topics/dup/records", R"({"partition":1,"records":[{"value":"only on b1"}]})").status == 200);
  auto shown = ctl({"topics", "reconcile", "dup"});
  INFO(shown.out << shown.err);
  CHECK(shown.exit_code == 1);  // something to decide
  CHECK_THAT(shown.out, Catch::Contains("b1 (") && Catch::Contains("b2 (") && Catch::Contains("--keep BROKER"));

  // dup-0: b2's stray appended to b1's log as new records, at the offsets the answer gives.
  const auto before = values(c.b1, "dup", 0);
  CHECK(before == std::vector<std::string>{"p0 on b1", "via b2"});
  // A step cut short and run again appends nothing twice: two steps straight to b2 (as the receiving broker sends
  // them) give the record one offset on b1.
  httplib::Client b2_cluster("127.0.0.1", c.b2.cluster_port);
  const httplib::Headers peer{{"X-Cluster-From", "b3"}, {"X-Cluster-Token", "e2e-secret"}};
  std::uint64_t at_first_run = 0;
  for (int run = 0; run < 2; ++run) {
    auto step = b2_cluster.Post("/cluster/admin/strays", peer,
                                R"({"action":"append","topic":"dup","partition":0,"from":0})", "application/json");
    REQUIRE(step);
    INFO(step->body);
    REQUIRE(step->status == 200);
    auto d = parse(step->body);
    CHECK(d["done"].GetBool());
    REQUIRE(d["runs"].Size() == 1);
    if (run == 0) at_first_run = d["runs"][0]["first"].GetUint64();
    CHECK(d["runs"][0]["first"].GetUint64() == at_first_run);
  }
  CHECK(values(c.b1, "dup", 0) == std::vector<std::string>{"p0 on b1", "via b2", "p0 on b1"});
  auto appended = ctl({"--json", "topics", "reconcile", "dup", "--partition", "0", "--append", "b2"});
  INFO(appended.out << appended.err);
  REQUIRE(appended.exit_code == 0);
  auto a = parse(appended.out);
  CHECK(a["copied"].GetUint64() == 1);
  CHECK(a["done"].GetBool());
  REQUIRE(a["runs"].Size() == 1);
  CHECK(a["runs"][0]["stray_first"].GetUint64() == 0);
  const std::uint64_t at = a["runs"][0]["first"].GetUint64();
  CHECK(at == at_first_run);
  CHECK(values(c.b1, "dup", 0) == std::vector<std::string>{"p0 on b1", "via b2", "p0 on b1"});
  auto fetched = c.b1.api().Get(("/v1/topics/dup/partitions/0/records?offset=" + std::to_string(at)).c_str());
  REQUIRE(fetched);
  CHECK(parse(fetched->body)["records"][0]["value"] == "p0 on b1");
  // Decided: nothing left to append (the stray is empty and no longer reported).
  auto again = ctl({"topics", "reconcile", "dup", "--partition", "0", "--append", "b2"});
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.err, Catch::Contains("no broker holds a stray of dup-0"));

  // dup-1: b2's stray kept; b1's log is emptied and the stray's records take its place, at the offsets they had.
  auto kept = ctl({"topics", "reconcile", "dup", "--partition", "1", "--keep", "b2"});
  INFO(kept.out << kept.err);
  REQUIRE(kept.exit_code == 0);
  CHECK_THAT(kept.out, Catch::Contains("emptied the served log of dup-1 on b1") &&
                           Catch::Contains("stray offsets 0..0 -> offsets 0..0 on b1"));
  CHECK(values(c.b1, "dup", 1) == std::vector<std::string>{"p1 on b1"});

  // dup-2: b1's log kept; the stray is emptied.
  auto kept_served = ctl({"topics", "reconcile", "dup", "--partition", "2", "--keep", "b1"});
  INFO(kept_served.out << kept_served.err);
  REQUIRE(kept_served.exit_code == 0);
  CHECK(values(c.b1, "dup", 2) == std::vector<std::string>{"p2 on b1"});

  // One log per partition again: status is clean, and b2's emptied logs are the catalog's now, so a move onto b2
  // is accepted and keeps every record.
  auto status = ctl({"status"});
  INFO(status.out);
  CHECK(status.exit_code == 0);
  CHECK(ctl({"topics", "reconcile", "dup"}).exit_code == 0);
  move(c.b1, 0, "b2", "dup");
  CHECK(values(c.b2, "dup", 0) == std::vector<std::string>{"p0 on b1", "via b2", "p0 on b1"});
}

/// A log made by hand (or before topics were metadata) beside the cluster's, on a broker restarted with it: a stray,
/// never served, kept untouched and reported; then the operator reconciles it (reconcile_the_strays).
void strays_and_reconcile(cluster3& c) {
  // A log made by hand (or before topics were metadata) beside the cluster's, on a broker restarted with it: a
  // stray, never served, kept untouched; a move of that partition is refused, naming both brokers, instead of keeping
  // one log and dropping the other's records.
  REQUIRE(post(c.b1, "/v1/topics", R"({"name":"dup","partitions":3,"placement":"local"})").status == 200);
  for (int p = 0; p < 3; ++p)
    REQUIRE(post(c.b1, "/v1/topics/dup/records",
                 "{\"partition\":" + std::to_string(p) + ",\"records\":[{\"value\":\"p" + std::to_string(p) +
                     " on b1\"}]}")
                .status == 200);
  c.b2.send_signal(SIGTERM);
  REQUIRE(c.b2.wait_for_end(std::chrono::seconds(15)));
  // A copy of b1's log, as a restore from a backup would leave it (a log with records, which reclaim would count).
  std::filesystem::copy(c.b1.data_dir + "/topics/dup", c.b2.data_dir + "/topics/dup",
                        std::filesystem::copy_options::recursive);
  c.b2.start();
  REQUIRE(ready(c.b2));
  auto refused = post(c.b1, "/v1/reassignments", R"({"topic":"dup","partition":0,"dest":"b3"})");
  CHECK(refused.status == 409);
  CHECK_THAT(refused.body, Catch::Contains("more than one log") && Catch::Contains("b1") && Catch::Contains("b2"));
  // b2 never serves it: a produce through b2 reaches b1's log, a fetch from b2 is sent to b1.
  auto via_b2 = post(c.b2, "/v1/topics/dup/records", R"({"partition":0,"records":[{"value":"via b2"}]})");
  CHECK(via_b2.status == 200);
  CHECK(parse(via_b2.body)["broker"] == "b1");
  auto fetch = c.b2.api().Get("/v1/topics/dup/partitions/0/records?offset=0");
  REQUIRE(fetch);
  CHECK(fetch->status == 421);
  // The operator is told: status exits non-zero with a warning, partitions and topics mark it, a metric counts it,
  // and reclaim keeps it.
  const std::string broker = "127.0.0.1:" + std::to_string(c.b3.api_port);
  auto status = run_process({MOONMQ_CTL_BIN, "--broker", broker, "status"});
  CHECK(status.exit_code == 1);
  CHECK_THAT(status.out, Catch::Contains("3 stray log(s) (dup-0 on b2, dup-1 on b2, dup-2 on b2)"));
  auto partitions = run_process({MOONMQ_CTL_BIN, "--broker", broker, "partitions", "--topic", "dup"});
  INFO(partitions.out);
  CHECK_THAT(partitions.out, Catch::Contains("a stray log of it on b2") && Catch::Contains("STRAY"));
  auto topics = run_process({MOONMQ_CTL_BIN, "--broker", broker, "topics"});
  INFO(topics.out);
  CHECK_THAT(topics.out, Catch::Contains("3 stray log(s)"));
  auto metrics = c.b2.api().Get("/metrics");
  REQUIRE(metrics);
  CHECK_THAT(metrics->body, Catch::Contains(R"(moonmq_broker_partitions{state="stray"} 3)"));
  auto kept = c.b2.api().Get("/v1/brokers/b2/reclaim");
  REQUIRE(kept);
  CHECK_THAT(kept->body, Catch::Contains("a stray"));
  auto reclaim = post(c.b2, "/v1/brokers/b2/reclaim", "");
  CHECK(reclaim.status == 200);
  CHECK_THAT(reclaim.body, !Catch::Contains("dup"));  // other copies may go (ev2's, moved away), never the stray
  CHECK(moonmq::posix::exists(c.b2.data_dir + "/topics/dup/0.log"));

  reconcile_the_strays(c);
}

/// A topic made before topics were cluster metadata, on two brokers (the issue's fork, from before the change): both
/// serve it until an operator adopts it into the catalog; then one log is the partition's and the other a stray,
/// reconciled like any other.
void adopt_a_forked_topic(cluster3& c) {
  const std::string broker = "127.0.0.1:" + std::to_string(c.b2.api_port);
  auto ctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {MOONMQ_CTL_BIN, "--broker", broker});
    return run_process(args);
  };
  // Logs of "old" that no catalog made: b1's holds one record, b3's two (copies of a topic's log, by hand).
  REQUIRE(post_when_ready(c.b1, "/v1/topics", R"({"name":"src","partitions":1,"placement":"local"})").status == 200);
  REQUIRE(post(c.b1, "/v1/topics/src/records", R"({"partition":0,"records":[{"value":"first"}]})").status == 200);
  for (auto* b : {&c.b1, &c.b3}) {
    if (b == &c.b3)
      REQUIRE(post(c.b1, "/v1/topics/src/records", R"({"partition":0,"records":[{"value":"second"}]})").status == 200);
    b->send_signal(SIGTERM);
    REQUIRE(b->wait_for_end(std::chrono::seconds(15)));
    std::filesystem::copy(c.b1.data_dir + "/topics/src", b->data_dir + "/topics/old",
                          std::filesystem::copy_options::recursive);
    b->start();
    REQUIRE(ready(*b));
  }
  auto before = ctl({"status"});
  CHECK(before.exit_code == 1);  // served by two brokers
  auto adopted = ctl({"topics", "adopt", "old"});
  INFO(adopted.out << adopted.err);
  REQUIRE(adopted.exit_code == 0);
  CHECK_THAT(adopted.out, Catch::Contains("owners b3"));  // the larger log
  CHECK(ctl({"topics", "adopt", "old"}).exit_code == 1);  // in the catalog now
  REQUIRE(everyone_lists(c, "old", 1));
  // b1's log is a stray: never served, reported; a produce through b1 reaches b3.
  auto via_b1 = post(c.b1, "/v1/topics/old/records", R"({"partition":0,"records":[{"value":"third"}]})");
  REQUIRE(via_b1.status == 200);
  CHECK(parse(via_b1.body)["broker"] == "b3");
  auto status = ctl({"status"});
  CHECK(status.exit_code == 1);
  CHECK_THAT(status.out, Catch::Contains("old-0 on b1"));
  auto appended = ctl({"topics", "reconcile", "old", "--partition", "0", "--append", "b1"});
  INFO(appended.out << appended.err);
  REQUIRE(appended.exit_code == 0);
  CHECK(values(c.b3, "old", 0) == std::vector<std::string>{"first", "second", "third", "first"});
  CHECK(ctl({"status"}).exit_code == 0);
}
}  // namespace

TEST_CASE("e2e topics, Raft: a second create of a name is refused, one log per partition, moves keep every record",
          "[e2e][topics][raft]") {
  cluster3 c(true);
  placement_grow_and_delete(c);  // first: on brokers that serve nothing yet, a spread is one partition each
  the_reproduction(c);
  concurrent_creates(c, "race");
  strays_and_reconcile(c);
  adopt_a_forked_topic(c);
  // Every Raft log now holds topic entries: a broker killed and started again reads them back (the torture round
  // found brokers that could not start, their log's reader knowing only the older entry kinds) and lists the topics.
  c.b1.kill9();
  c.b1.start();
  // Alive first; ready once it has caught up with the log (and carried out its topic entries).
  REQUIRE(ready(c.b1));
  CHECK_FALSE(listed(c.b1, "race").IsNull());
}

TEST_CASE("e2e topics, no Raft: each topic's coordinator decides it, and a broker that was down learns what it missed",
          "[e2e][topics]") {
  cluster3 c(false);
  placement_grow_and_delete(c);
  the_reproduction(c);
  concurrent_creates(c, "race");

  c.b2.send_signal(SIGTERM);
  REQUIRE(c.b2.wait_for_end(std::chrono::seconds(15)));
  // With b2 down, no create can be decided: b2 might hold the name (or coordinates it), and the answer says so.
  auto held = post(c.b1, "/v1/topics", R"({"name":"ev3","partitions":1})");
  CHECK(held.status == 503);
  CHECK_THAT(held.body, Catch::Contains("b2"));
  // A change b2 missed (a delete decided by another coordinator) reaches it when it starts again.
  std::string name;
  for (const char* t : {"ev2", "race", "named", "spread"})
    if (moonmq::coordinator_by_hash(t, {moonmq::broker_id("b1"), moonmq::broker_id("b2"), moonmq::broker_id("b3")})
            .value() != "b2")
      name = t;
  REQUIRE_FALSE(name.empty());
  REQUIRE(del(c.b3, "/v1/topics/" + name).status == 200);
  c.b2.start();
  CHECK(listed(c.b2, name).IsNull());
  CHECK(post(c.b2, "/v1/topics/" + name + "/records", R"({"partition":0,"records":[{"value":"x"}]})").status == 404);

  strays_and_reconcile(c);
  adopt_a_forked_topic(c);
}
