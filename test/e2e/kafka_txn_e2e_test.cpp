// Kafka transactions from unmodified clients against three moonmqd (docs/kafka.md, "Transactions"): a
// consume-transform-produce loop with confluent-kafka's transactional API copies every input record exactly once,
// aborting some transactions on purpose, while partitions of both topics move and a broker is killed -9; a zombie
// producer is fenced; bad requests get Kafka's codes.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>
#include <thread>

#include "support/daemon_process.hpp"
#include "support/eventually.hpp"
#include "support/kafka_clients.hpp"
#include "support/process.hpp"

using namespace moonmq::test;

namespace {

std::string tail(const std::string& s, std::size_t n = 3000) { return s.substr(s.size() > n ? s.size() - n : 0); }

/// What a read_committed reader of the copy printed: every input key k<i> of `count` exactly once, as
/// "copy:value-<i>", on the input's partition (i % partitions), and nothing else.
void check_copied_once(const std::string& out, int count, int partitions) {
  std::map<std::string, int> times;
  for (const auto& m : json_lines(out)) {
    if (!m.HasMember("key")) continue;
    const std::string key = m["key"].GetString();
    const int i = std::stoi(key.substr(1));
    ++times[key];
    CHECK(std::string(m["value"].GetString()) == "copy:value-" + std::to_string(i));
    CHECK(m["partition"].GetInt() == i % partitions);
  }
  CHECK(times.size() == static_cast<std::size_t>(count));
  for (const auto& [key, n] : times)
    if (n != 1) FAIL(key << " copied " << n << " times");
}

/// The broker that serves partition `p` of `topic`, or "" (asked over HTTP).
std::string owner_of(const std::vector<moonmqd_process*>& all, const std::string& topic, int p) {
  for (auto* b : all) {
    auto r = b->api().Get(("/v1/topics/" + topic + "/partitions/" + std::to_string(p) + "/records?max_bytes=1").c_str());
    if (r && r->status == 200) return b->id;
  }
  return "";
}

/// Moves partition `p` of `topic` to the next broker (b1 -> b2 -> b3 -> b1) and waits until it serves it.
void move_on(const std::vector<moonmqd_process*>& all, const std::string& topic, int p) {
  static const std::map<std::string, std::string> next{{"b1", "b2"}, {"b2", "b3"}, {"b3", "b1"}};
  std::string owner;
  REQUIRE(eventually([&] { return !(owner = owner_of(all, topic, p)).empty(); }, std::chrono::seconds(30)));
  const std::string dest = next.at(owner);
  bool asked = eventually(
      [&] {
        auto r = all[0]->api().Post("/v1/reassignments",
                                    "{\"topic\":\"" + topic + "\",\"partition\":" + std::to_string(p) +
                                        ",\"dest\":\"" + dest + "\"}",
                                    "application/json");
        return r && r->status / 100 == 2;
      },
      std::chrono::seconds(30));
  REQUIRE(asked);
  REQUIRE(eventually([&] { return owner_of(all, topic, p) == dest; }, std::chrono::seconds(60)));
}

}  // namespace

TEST_CASE("e2e kafka txn: confluent-kafka copies a topic exactly once with send_offsets_to_transaction, aborting every "
          "third transaction, and a read_committed reader sees each record once",
          "[e2e][kafka][txn]") {
  kafka_cluster c;
  REQUIRE(client({"create", c.bootstrap(c.b1), "tin", "3"}).exit_code == 0);
  REQUIRE(client({"create", c.bootstrap(c.b2), "tout", "3"}).exit_code == 0);
  auto produced = client({"produce", c.bootstrap(c.b1), "tin", "600"});
  REQUIRE(produced.exit_code == 0);

  auto copied = client({"txn-copy", c.bootstrap(c.b2), "tin", "tout", "copier", "copy-1", "600", "25", "3"});
  INFO(tail(copied.out) << tail(copied.err));
  REQUIRE(copied.exit_code == 0);
  int aborted = 0;
  for (const auto& m : json_lines(copied.out))
    if (m.HasMember("aborted")) ++aborted;
  CHECK(aborted >= 3);

  auto read = client({"consume", c.bootstrap(c.b3), "tout", "3", "4"});
  INFO(tail(read.err));
  REQUIRE(read.exit_code == 0);
  check_copied_once(read.out, 600, 3);
}

TEST_CASE("e2e kafka txn: a second producer with the same transactional id fences the first, whose open "
          "transaction is aborted",
          "[e2e][kafka][txn]") {
  kafka_cluster c;
  REQUIRE(client({"create", c.bootstrap(c.b1), "tz", "1"}).exit_code == 0);
  auto zombie = client({"txn-zombie", c.bootstrap(c.b2), "tz", "zombie-id"});
  INFO(zombie.out << tail(zombie.err));
  REQUIRE(zombie.exit_code == 0);
  auto lines = json_lines(zombie.out);
  REQUIRE(lines.size() == 2);
  CHECK(std::string(lines[0]["zombie_commit"].GetString()) == "failed");
  CHECK(std::string(lines[1]["live_commit"].GetString()) == "succeeded");
  auto read = client({"consume", c.bootstrap(c.b3), "tz", "1", "3"});
  REQUIRE(read.exit_code == 0);
  std::vector<std::string> keys;
  for (const auto& m : json_lines(read.out))
    if (m.HasMember("key")) keys.push_back(m["key"].GetString());
  CHECK(keys == std::vector<std::string>{"live"});
}

TEST_CASE("e2e kafka txn: exactly once while partitions of both topics move and a broker is killed -9 and started "
          "again: every input record is copied once, nothing aborted is read",
          "[e2e][kafka][txn]") {
  kafka_cluster c;
  std::vector<moonmqd_process*> all{&c.b1, &c.b2, &c.b3};
  REQUIRE(client({"create", c.bootstrap(c.b1), "xin", "3"}).exit_code == 0);
  REQUIRE(client({"create", c.bootstrap(c.b2), "xout", "3"}).exit_code == 0);
  REQUIRE(client({"produce", c.bootstrap(c.b1), "xin", "3000"}).exit_code == 0);

  process_result copied;
  std::thread copier([&] {
    copied = client({"txn-copy", c.bootstrap(c.b2), "xin", "xout", "xcopier", "copy-2", "3000", "40", "4", "40"});
  });
  // While it copies: every partition of both topics moves once, then b3 is killed -9 and started again, then each
  // output partition moves once more.
  for (int p = 0; p < 3; ++p) {
    move_on(all, "xin", p);
    move_on(all, "xout", p);
  }
  c.b3.kill9();
  c.b3.start();
  for (int p = 0; p < 3; ++p) move_on(all, "xout", p);
  copier.join();
  INFO(tail(copied.out) << tail(copied.err));
  REQUIRE(copied.exit_code == 0);

  auto read = client({"consume", c.bootstrap(c.b1), "xout", "3", "5"});
  INFO(tail(read.err));
  REQUIRE(read.exit_code == 0);
  check_copied_once(read.out, 3000, 3);
}

TEST_CASE("e2e kafka txn: bad transactional requests get Kafka's codes: a timeout past the maximum, an unknown "
          "transactional id, an unknown topic, stale epochs",
          "[e2e][kafka][txn]") {
  kafka_cluster c;
  REQUIRE(client({"create", c.bootstrap(c.b1), "tr", "1"}).exit_code == 0);
  auto raw = client({"raw-txn", c.bootstrap(c.b2), "tr"});
  INFO(raw.out << tail(raw.err));
  REQUIRE(raw.exit_code == 0);
  auto lines = json_lines(raw.out);
  REQUIRE(lines.size() == 1);
  const auto& o = lines[0];
  CHECK(o["init_timeout_too_long"].GetInt() == 50);  // INVALID_TRANSACTION_TIMEOUT
  CHECK(o["init"].GetInt() == 0);
  CHECK(o["end_unknown_id"].GetInt() == 49);  // INVALID_PRODUCER_ID_MAPPING
  CHECK(o["add_unknown_topic"]["tr-nope-0"].GetInt() == 3);  // UNKNOWN_TOPIC_OR_PARTITION
  CHECK(o["add_unknown_topic"]["tr-0"].GetInt() == 55);      // OPERATION_NOT_ATTEMPTED
  CHECK(o["add"]["tr-0"].GetInt() == 0);
  CHECK(o["txn_offsets"].GetInt() == 0);
  CHECK(o["end_commit"].GetInt() == 0);
  CHECK(o["second_init_epoch_bumped"].GetBool());
  CHECK(o["add_stale_epoch"]["tr-0"].GetInt() == 47);  // INVALID_PRODUCER_EPOCH
  CHECK(o["txn_offsets_stale_epoch"].GetInt() == 47);
  CHECK(o["end_stale_epoch"].GetInt() == 47);
  CHECK(o["produce_unknown_id"].GetInt() == 49);  // a transactional batch of an id no coordinator knows
  // The committed transaction's offset reached the group: each broker answers it, or names the owner that does
  // (never "nothing committed" from one that does not have the partition).
  for (auto* b : {&c.b1, &c.b2, &c.b3}) {
    auto fetched = b->api().Get("/v1/groups/raw-group/offsets?topic=tr&partition=0");
    REQUIRE(fetched);
    INFO(b->id << ": " << fetched->body);
    if (fetched->status == 421) {
      rapidjson::Document d;
      d.Parse(fetched->body.c_str());
      const std::string owner = d["owner"].GetString();
      CHECK(owner != b->id);
      fetched = (owner == "b1" ? c.b1 : owner == "b2" ? c.b2 : c.b3).api().Get(
          "/v1/groups/raw-group/offsets?topic=tr&partition=0");
      REQUIRE(fetched);
    }
    CHECK(fetched->status == 200);
    CHECK_THAT(fetched->body, Catch::Contains("\"offset\":0"));
  }
}

TEST_CASE("e2e kafka txn: records of Kafka transactions read over HTTP: read_committed sees the committed ones only",
          "[e2e][kafka][txn]") {
  kafka_cluster c;
  REQUIRE(client({"create", c.bootstrap(c.b1), "th", "1"}).exit_code == 0);
  // The zombie's open transaction is aborted by the second producer's init; the second one commits.
  REQUIRE(client({"txn-zombie", c.bootstrap(c.b2), "th", "http-read"}).exit_code == 0);
  std::vector<moonmqd_process*> all{&c.b1, &c.b2, &c.b3};
  std::string owner;
  REQUIRE(eventually([&] { return !(owner = owner_of(all, "th", 0)).empty(); }, std::chrono::seconds(10)));
  moonmqd_process* at = owner == "b1" ? &c.b1 : owner == "b2" ? &c.b2 : &c.b3;
  auto values = [&](const char* isolation) {
    auto r = at->api().Get((std::string("/v1/topics/th/partitions/0/records?offset=0&isolation=") + isolation).c_str());
    REQUIRE(r);
    REQUIRE(r->status == 200);
    rapidjson::Document d;
    d.Parse(r->body.c_str());
    std::vector<std::string> out;
    for (const auto& rec : d["records"].GetArray()) out.push_back(rec["value"].GetString());
    return out;
  };
  CHECK(values("read_committed") == std::vector<std::string>{"from the second producer"});
  CHECK(values("read_uncommitted") ==
        std::vector<std::string>{"from the first producer", "from the second producer"});
}

TEST_CASE("e2e kafka txn: kafkajs's transactional producer commits and aborts, with its group offsets, and a "
          "read_committed reader sees the committed records once",
          "[e2e][kafka][txn]") {
  kafka_cluster c;
  REQUIRE(client({"create", c.bootstrap(c.b1), "tjs", "3"}).exit_code == 0);
  auto made = run_process({"/usr/bin/node", kafkajs, "txn", c.bootstrap(c.b2), "tjs", "3", "7", "js-txn", "js-group"});
  INFO(made.out << tail(made.err));
  REQUIRE(made.exit_code == 0);
  std::set<std::string> committed, aborted;
  for (const auto& m : json_lines(made.out)) {
    if (!m.HasMember("transaction")) continue;
    for (const auto& k : m["keys"].GetArray()) (m["committed"].GetBool() ? committed : aborted).insert(k.GetString());
  }
  REQUIRE(committed.size() == 50);
  REQUIRE(aborted.size() == 20);
  auto read = client({"consume", c.bootstrap(c.b3), "tjs", "3", "3"});
  INFO(tail(read.err));
  REQUIRE(read.exit_code == 0);
  std::map<std::string, int> seen;
  for (const auto& m : json_lines(read.out))
    if (m.HasMember("key")) ++seen[m["key"].GetString()];
  CHECK(seen.size() == committed.size());
  for (const auto& [key, n] : seen) {
    CHECK(committed.count(key) == 1);
    CHECK(n == 1);
  }
  // The last committed transaction (7) set the group's offset of partition 0; the aborted ones (3, 6) set nothing.
  std::vector<moonmqd_process*> all{&c.b1, &c.b2, &c.b3};
  const std::string owner = owner_of(all, "tjs", 0);
  REQUIRE(!owner.empty());
  auto fetched = (owner == "b1" ? c.b1 : owner == "b2" ? c.b2 : c.b3).api().Get(
      "/v1/groups/js-group/offsets?topic=tjs&partition=0");
  REQUIRE(fetched);
  CHECK_THAT(fetched->body, Catch::Contains("\"offset\":7"));
}

TEST_CASE("e2e kafka txn: kafkajs copies a topic exactly once, each fetched batch and its offsets in one transaction",
          "[e2e][kafka][txn]") {
  kafka_cluster c;
  REQUIRE(client({"create", c.bootstrap(c.b1), "jin", "3"}).exit_code == 0);
  REQUIRE(client({"create", c.bootstrap(c.b2), "jout", "3"}).exit_code == 0);
  REQUIRE(client({"produce", c.bootstrap(c.b1), "jin", "150"}).exit_code == 0);
  auto copied =
      run_process({"/usr/bin/node", kafkajs, "txn-copy", c.bootstrap(c.b3), "jin", "jout", "js-copier", "js-copy", "150"});
  INFO(tail(copied.out) << tail(copied.err));
  REQUIRE(copied.exit_code == 0);
  auto read = client({"consume", c.bootstrap(c.b1), "jout", "3", "3"});
  INFO(tail(read.err));
  REQUIRE(read.exit_code == 0);
  check_copied_once(read.out, 150, 3);
}
