// The operator's surface against real moonmqd processes: moonmqctl as a process, the cluster-wide routes asked of a
// broker that does not hold the partition, a move throttled, watched, cancelled (rolled back) and redone, the
// throttle kept across a restart, the balancer paused everywhere, and the start-up refusals an operator meets.
#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include <map>
#include <set>
#include <thread>

#include "support/eventually.hpp"
#include "support/certificates.hpp"
#include "support/daemon_process.hpp"
#include "support/process.hpp"

using namespace moonmq::test;

namespace {

rapidjson::Document parse(const std::string& s) {
  rapidjson::Document d;
  d.Parse(s.c_str(), s.size());
  return d;
}

struct three_brokers {
  temp_dir dir;
  moonmqd_process b1{"b1", dir.path()};
  moonmqd_process b2{"b2", dir.path()};
  moonmqd_process b3{"b3", dir.path()};
  three_brokers() {
    for (auto* b : {&b1, &b2, &b3}) b->configure({&b1, &b2, &b3}, "\"BatchBytes\": 65536");
    for (auto* b : {&b1, &b2, &b3}) b->start();
  }
};

process_result ctl(const moonmqd_process& b, std::vector<std::string> args) {
  std::vector<std::string> argv{MOONMQ_CTL_BIN, "--broker", b.host + ":" + std::to_string(b.api_port)};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv);
}

/// moonmqctl --json ... parsed; the command must succeed.
rapidjson::Document ctl_json(const moonmqd_process& b, std::vector<std::string> args) {
  args.insert(args.begin(), "--json");
  auto r = ctl(b, args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto d = parse(r.out);
  REQUIRE(d.IsObject());
  return d;
}

/// The move `id` as any broker lists it (all moves, finished ones too).
rapidjson::Document find_move(const moonmqd_process& asked, std::uint64_t id) {
  auto d = ctl_json(asked, {"moves", "--all"});
  rapidjson::Document m;
  for (const auto& x : d["reassignments"].GetArray())
    if (x["id"].GetUint64() == id) m.CopyFrom(x, m.GetAllocator());
  return m;
}

template <typename F>
void wait_until(F done, const char* what, int seconds = 30) {
  if (!eventually(done, std::chrono::seconds(seconds))) FAIL("timed out waiting for " << what);
}

void produce(const moonmqd_process& b, int count, std::size_t size) {
  auto c = b.api();
  for (int i = 0; i < count; i += 20) {
    std::string body = "{\"partition\":0,\"records\":[";
    for (int k = i; k < i + 20; ++k) body += (k > i ? "," : "") + std::string("{\"value\":\"") + std::string(size, 'v') + "\"}";
    auto r = c.Post("/v1/topics/orders/records", body + "]}", "application/json");
    REQUIRE(r);
    REQUIRE(r->status == 200);
  }
}

}  // namespace

TEST_CASE("e2e: moonmqctl moves a partition from a broker that does not hold it, throttled, cancelled and redone",
          "[e2e][operator]") {
  three_brokers c;
  {
    auto api = c.b1.api();
    auto r = api.Post("/v1/topics", R"({"name":"orders","partitions":2,"placement":"local"})", "application/json");
    REQUIRE(r);
    REQUIRE(r->status == 200);
  }
  produce(c.b1, 2000, 1000);  // ~2 MB in partition 0

  // The whole cluster from b3, which has never heard of the topic.
  auto brokers = ctl_json(c.b3, {"brokers"});
  REQUIRE(brokers["brokers"].Size() == 3);
  for (const auto& b : brokers["brokers"].GetArray()) CHECK(b["reachable"].GetBool());
  auto parts = ctl_json(c.b3, {"partitions", "--topic", "orders"});
  REQUIRE(parts["partitions"].Size() == 2);
  CHECK(std::string(parts["partitions"][0]["owner"].GetString()) == "b1");
  CHECK(parts["partitions"][0]["size_bytes"].GetUint64() > 2'000'000);
  auto table = ctl(c.b3, {"topics"});
  CHECK(table.exit_code == 0);
  CHECK_THAT(table.out, Catch::Contains("orders") && Catch::Contains("b1:2"));

  // A throttle low enough that the copy is still running when cancelled: every broker takes it.
  auto t = ctl(c.b2, {"throttle", "256K"});
  INFO(t.out << t.err);
  REQUIRE(t.exit_code == 0);
  CHECK_THAT(t.out, Catch::Contains("b1") && Catch::Contains("b2") && Catch::Contains("b3"));
  auto shown = ctl_json(c.b3, {"throttle"});
  for (const auto& b : shown["brokers"].GetArray()) CHECK(b["bytes_per_sec"].GetUint64() == 256 * 1024);

  // Asked of b3, started on b1 (the owner).
  auto started = ctl_json(c.b3, {"move", "orders", "0", "b2"});
  CHECK(std::string(started["source"].GetString()) == "b1");
  const std::uint64_t id = started["id"].GetUint64();
  std::uint64_t seen = 0;
  wait_until([&] {
    auto m = find_move(c.b2, id);
    if (!m.IsObject() || std::string(m["step"].GetString()) != "copy") return false;
    const std::uint64_t now = m["bytes_copied"].GetUint64();
    if (seen == 0 && now > 0) seen = now;
    return seen > 0 && now > seen;  // the progress moves
  }, "the copy to make progress");
  {
    auto m = find_move(c.b2, id);
    CHECK(m["rate_bytes_per_sec"].GetDouble() > 0);
    CHECK(m["eta_seconds"].GetDouble() > 0);
    CHECK(std::string(m["source"].GetString()) == "b1");
    auto human = ctl(c.b3, {"moves"});
    CHECK_THAT(human.out, Catch::Contains("orders-0") && Catch::Contains("copy") && Catch::Contains("%"));
  }

  // A watcher, from b3, while the copy makes 800 KB more progress (about three seconds at the throttle).
  process_result watched;
  std::thread watcher([&] { watched = ctl(c.b3, {"moves", "--watch"}); });
  struct joiner {
    std::thread& t;
    ~joiner() {
      if (t.joinable()) t.join();
    }
  } join_watcher{watcher};
  for (int more = 0; more < 4; ++more) {  // several of the watcher's one-second frames
    const std::uint64_t before = find_move(c.b2, id)["bytes_copied"].GetUint64();
    wait_until([&] { return find_move(c.b2, id)["bytes_copied"].GetUint64() > before + 200'000; }, "more progress");
  }

  // Cancelled from b2, which is neither the source nor the asked broker of the start.
  auto cancelled = ctl(c.b2, {"cancel", std::to_string(id)});
  INFO(cancelled.out << cancelled.err);
  REQUIRE(cancelled.exit_code == 0);
  CHECK_THAT(cancelled.out, Catch::Contains("on b1"));
  wait_until([&] { return std::string(find_move(c.b3, id)["step"].GetString()) == "cancelled"; }, "the rollback");
  CHECK_THAT(find_move(c.b3, id)["error"].GetString(), Catch::Contains("was discarded"));
  // The watcher ended with the move's outcome; its first frame showed no rate (one sample), later ones did.
  watcher.join();
  INFO(watched.out << watched.err);
  CHECK(watched.exit_code == 1);  // the move it watched did not happen
  CHECK_THAT(watched.out, Catch::Contains("move " + std::to_string(id) + " of orders-0 to b2: cancelled"));
  std::vector<std::string> rows;  // the orders-0 row of each frame
  for (std::size_t at = 0; (at = watched.out.find("\x1b[H\x1b[2J", at)) != std::string::npos; at += 4) {
    const auto row = watched.out.find("orders-0", at);
    if (row != std::string::npos) rows.push_back(watched.out.substr(row, watched.out.find('\n', row) - row));
  }
  REQUIRE(rows.size() >= 2);
  CHECK_THAT(rows.front(), !Catch::Contains("/s"));
  CHECK_THAT(rows[1], Catch::Contains("/s"));
  parts = ctl_json(c.b1, {"partitions", "--topic", "orders"});
  for (const auto& p : parts["partitions"].GetArray()) CHECK(std::string(p["owner"].GetString()) == "b1");
  CHECK(parts["partitions"].Size() == 2);  // one owner each: b2 does not serve its discarded copy
  // Cancelling again: it has ended.
  auto again = ctl(c.b1, {"cancel", std::to_string(id)});
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.err, Catch::Contains("already ended"));

  // Unthrottled, the same move completes.
  REQUIRE(ctl(c.b1, {"throttle", "0"}).exit_code == 0);
  auto redo = ctl_json(c.b1, {"move", "orders", "0", "b2"});
  const std::uint64_t id2 = redo["id"].GetUint64();
  wait_until([&] { return find_move(c.b1, id2)["finished"].GetBool(); }, "the second move");
  CHECK(find_move(c.b1, id2)["succeeded"].GetBool());
  parts = ctl_json(c.b3, {"partitions", "--topic", "orders"});
  CHECK(std::string(parts["partitions"][0]["owner"].GetString()) == "b2");
}

TEST_CASE("e2e: moonmqctl refuses bad requests with the broker's reason and documented exit codes",
          "[e2e][operator]") {
  three_brokers c;
  {
    auto api = c.b1.api();
    REQUIRE(api.Post("/v1/topics", R"({"name":"orders","partitions":1,"placement":"local"})", "application/json")->status == 200);
  }
  auto unknown = ctl(c.b2, {"move", "nope", "0", "b3"});
  CHECK(unknown.exit_code == 1);
  CHECK_THAT(unknown.err, Catch::Contains("404") && Catch::Contains("nope-0"));
  auto nobody = ctl(c.b2, {"move", "orders", "0", "b9"});
  CHECK(nobody.exit_code == 1);
  CHECK_THAT(nobody.err, Catch::Contains("unknown broker 'b9'"));
  auto there = ctl(c.b2, {"move", "orders", "0", "b1"});
  CHECK(there.exit_code == 1);
  CHECK_THAT(there.err, Catch::Contains("409") && Catch::Contains("already on b1"));
  auto no_move = ctl(c.b3, {"cancel", "12345"});
  CHECK(no_move.exit_code == 1);
  CHECK_THAT(no_move.err, Catch::Contains("no move 12345"));
  CHECK(ctl(c.b1, {"throttle", "fast"}).exit_code == 2);
  auto nonsense = ctl(c.b1, {"no-such-command"});
  CHECK(nonsense.exit_code == 2);
  CHECK_THAT(nonsense.err, Catch::Contains("unknown command 'no-such-command'"));
  auto typo = ctl(c.b1, {"stauts"});
  CHECK(typo.exit_code == 2);
  CHECK_THAT(typo.err, Catch::Contains("did you mean 'status'?"));
  auto down = run_process({MOONMQ_CTL_BIN, "--broker", "127.0.0.1:1", "brokers"});
  CHECK(down.exit_code == 3);
  CHECK_THAT(down.err, Catch::Contains("cannot reach") && Catch::Contains("could not connect"));
  // Global options anywhere on the line; a broker without a port is a usage mistake; under --json, errors are JSON.
  auto after = ctl(c.b1, {"status", "--json"});
  CHECK(after.exit_code == 0);
  CHECK(parse(after.out).IsObject());
  CHECK(run_process({MOONMQ_CTL_BIN, "--broker", "localhost", "status"}).exit_code == 2);
  auto refused = ctl(c.b2, {"move", "nope", "0", "b3", "--json"});
  CHECK(refused.exit_code == 1);
  auto e = parse(refused.err);
  REQUIRE(e.IsObject());
  CHECK(e["status"].GetInt() == 404);
  CHECK_THAT(e["message"].GetString(), Catch::Contains("nope-0"));
  // A topic nobody has is an error, not an empty table.
  auto missing = ctl(c.b1, {"partitions", "--topic", "nope"});
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.err, Catch::Contains("topic 'nope'"));
  CHECK(ctl(c.b1, {"partitions", "--topic", "orders"}).exit_code == 0);
  auto unreachable = run_process({MOONMQ_CTL_BIN, "brokers", "--json", "--broker", "127.0.0.1:1"});
  CHECK(unreachable.exit_code == 3);
  CHECK(std::string(parse(unreachable.err)["error"].GetString()) == "unreachable");
  // A move asked for when nothing is wrong: nothing is left behind.
  auto moves = ctl_json(c.b2, {"moves", "--all"});
  CHECK(moves["reassignments"].Size() == 0);
}

TEST_CASE("e2e: the throttle and the balancer's pause are kept across a restart, on every broker",
          "[e2e][operator]") {
  three_brokers c;
  REQUIRE(ctl(c.b3, {"throttle", "1M"}).exit_code == 0);
  auto paused = ctl(c.b3, {"balancer", "pause"});
  INFO(paused.out << paused.err);
  REQUIRE(paused.exit_code == 0);
  CHECK_THAT(paused.out, Catch::Contains("applied on: b3, b1, b2"));
  REQUIRE(c.b1.terminate() == 0);
  c.b1.start();
  auto shown = ctl_json(c.b2, {"throttle"});
  for (const auto& b : shown["brokers"].GetArray()) CHECK(b["bytes_per_sec"].GetUint64() == 1024 * 1024);
  CHECK(ctl_json(c.b1, {"balancer", "status"})["paused"].GetBool());
  REQUIRE(ctl(c.b1, {"balancer", "resume"}).exit_code == 0);
  CHECK_FALSE(ctl_json(c.b2, {"balancer", "status"})["paused"].GetBool());
  auto status = ctl(c.b1, {"status"});
  CHECK(status.exit_code == 0);
  CHECK_THAT(status.out, Catch::Contains("3 of 3 reachable"));
  // One broker down: the view says so, and status fails.
  c.b3.kill9();
  auto partial = ctl(c.b1, {"brokers"});
  CHECK_THAT(partial.out, Catch::Contains("UNREACHABLE"));
  CHECK(ctl(c.b1, {"status"}).exit_code == 1);
}

TEST_CASE("e2e: a second broker on the same data directory is refused at start, naming the holder",
          "[e2e][operator]") {
  temp_dir dir;
  moonmqd_process b1("b1", dir.path());
  b1.configure({&b1});
  b1.start();
  moonmqd_process twin("b1", dir.path());  // same data directory, other ports
  twin.config_path = dir.path() + "/twin.json";
  twin.log_path = dir.path() + "/twin.log";
  twin.configure({&twin});
  auto r = run_process({MOONMQ_DAEMON_BIN, "--config", twin.config_path});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.out + r.err, Catch::Contains("is in use by another moonmqd (pid"));
  // The port of a running broker: exit 2 with the reason.
  moonmqd_process clash("b9", dir.path());
  clash.api_port = b1.api_port;
  clash.configure({&clash});
  auto p = run_process({MOONMQ_DAEMON_BIN, "--config", clash.config_path});
  CHECK(p.exit_code == 2);
  CHECK_THAT(p.out + p.err, Catch::Contains("already in use"));
}

TEST_CASE("e2e: a drained broker gives every partition away, whole, and receives nothing until undrained",
          "[e2e][operator][drain]") {
  three_brokers c;
  {
    auto api = c.b1.api();
    REQUIRE(api.Post("/v1/topics", R"({"name":"orders","partitions":4,"placement":"local"})", "application/json")->status == 200);
    for (int p = 0; p < 4; ++p)
      for (int i = 0; i < 10; ++i) {
        std::string body = "{\"partition\":" + std::to_string(p) + ",\"records\":[{\"value\":\"" +
                           std::string(2000 + 500 * p, 'd') + "\"}]}";
        REQUIRE(api.Post("/v1/topics/orders/records", body, "application/json")->status == 200);
      }
  }
  std::map<int, std::uint64_t> sizes;
  auto before = ctl_json(c.b2, {"partitions"});  // a local: the loop reads into it
  for (const auto& p : before["partitions"].GetArray()) sizes[p["partition"].GetInt()] = p["size_bytes"].GetUint64();
  REQUIRE(sizes.size() == 4);

  auto drained = ctl(c.b3, {"drain", "b1", "--watch"});
  INFO(drained.out << drained.err);
  REQUIRE(drained.exit_code == 0);
  CHECK_THAT(drained.out, Catch::Contains("b1 is drained"));

  std::set<std::string> owners;
  auto parts = ctl_json(c.b2, {"partitions"});
  REQUIRE(parts["partitions"].Size() == 4);
  for (const auto& p : parts["partitions"].GetArray()) {
    owners.insert(p["owner"].GetString());
    CHECK(p["size_bytes"].GetUint64() == sizes[p["partition"].GetInt()]);  // every byte moved with it
  }
  CHECK(owners == std::set<std::string>{"b2", "b3"});  // spread by bytes, not piled on one broker
  auto brokers = ctl(c.b2, {"brokers"});
  CHECK_THAT(brokers.out, Catch::Contains("drained"));
  auto onto = ctl(c.b2, {"move", "orders", "0", "b1"});
  CHECK(onto.exit_code == 1);
  CHECK_THAT(onto.err, Catch::Contains("b1 is draining"));

  REQUIRE(ctl(c.b2, {"undrain", "b1"}).exit_code == 0);
  CHECK_FALSE(ctl_json(c.b3, {"brokers"})["brokers"][1]["draining"].GetBool());
  auto back = ctl_json(c.b2, {"move", "orders", "0", "b1"});
  const std::uint64_t id = back["id"].GetUint64();
  wait_until([&] { return find_move(c.b1, id)["finished"].GetBool(); }, "the move back");
  CHECK(find_move(c.b1, id)["succeeded"].GetBool());
}

TEST_CASE("e2e: a move interrupted by a stop resumes after the restart from the copy already made, but a cancelled one "
          "does not", "[e2e][operator][resume]") {
  three_brokers c;
  {
    auto api = c.b1.api();
    REQUIRE(api.Post("/v1/topics", R"({"name":"orders","partitions":2,"placement":"local"})", "application/json")->status == 200);
  }
  produce(c.b1, 2000, 1000);
  REQUIRE(ctl(c.b1, {"throttle", "256K"}).exit_code == 0);
  const std::uint64_t first = ctl_json(c.b1, {"move", "orders", "0", "b2"})["id"].GetUint64();
  wait_until([&] { return find_move(c.b1, first)["bytes_copied"].GetUint64() > 300'000; }, "part of the copy");
  REQUIRE(c.b1.terminate() == 0);  // SIGTERM in the middle of the copy
  REQUIRE(ctl(c.b2, {"throttle", "0"}).exit_code == 1);  // b1 is down: not applied everywhere (exit 1, listed)
  c.b1.start();
  // Listed at once under its id, before it resumes (step resuming) or as it runs again: never "no moves".
  {
    auto now = find_move(c.b1, first);
    INFO("the move right after the restart");
    REQUIRE(now.IsObject());
    CHECK_FALSE(now["finished"].GetBool());
  }
  REQUIRE(ctl(c.b1, {"throttle", "0"}).exit_code == 0);
  // The restarted b1 starts the move again by itself, under the same id, and it resumes from the prefix b2 already
  // holds.
  rapidjson::Document resumed;
  wait_until([&] {
    auto d = ctl_json(c.b1, {"moves", "--all"});
    for (const auto& m : d["reassignments"].GetArray())
      if (std::string(m["source"].GetString()) == "b1" && m["finished"].GetBool() && m["succeeded"].GetBool()) {
        resumed.CopyFrom(m, resumed.GetAllocator());
        return true;
      }
    return false;
  }, "the resumed move");
  CHECK(resumed["id"].GetUint64() == first);
  CHECK(resumed["resumed_from"].GetUint64() > 300'000);
  CHECK(std::string(ctl_json(c.b3, {"partitions", "--topic", "orders"})["partitions"][0]["owner"].GetString()) ==
        "b2");
  CHECK_THAT(slurp(c.b1.log_path), Catch::Contains("resuming the interrupted move of orders-0 to b2"));

  // Cancelled, then stopped: nothing starts again (b2 now runs the move of orders-0, which it serves).
  REQUIRE(ctl(c.b1, {"throttle", "64K"}).exit_code == 0);
  const std::uint64_t id = ctl_json(c.b1, {"move", "orders", "0", "b3"})["id"].GetUint64();
  CHECK_THAT(slurp(c.b2.data_dir + "/move-requests.json"), Catch::Contains("\"dest\":\"b3\""));
  REQUIRE(ctl(c.b1, {"cancel", std::to_string(id)}).exit_code == 0);
  wait_until([&] { return find_move(c.b2, id)["finished"].GetBool(); }, "the cancel");
  wait_until([&] { return slurp(c.b2.data_dir + "/move-requests.json").find("b3") == std::string::npos; },
             "the cancelled move to be forgotten");
  REQUIRE(c.b2.terminate() == 0);
  c.b2.start();
  auto after = ctl_json(c.b2, {"moves", "--all"});  // a local: the loop reads into it
  bool kept = false;
  for (const auto& m : after["reassignments"].GetArray()) {
    if (std::string(m["source"].GetString()) != "b2") continue;
    CHECK(m["finished"].GetBool());  // nothing of b2's runs again
    if (m["id"].GetUint64() == id) kept = !m["succeeded"].GetBool();
  }
  CHECK(kept);  // the cancelled move is still in b2's history after its restart
  CHECK_THAT(slurp(c.b2.data_dir + "/move-history.json"), Catch::Contains("\"id\":" + std::to_string(id)));
}

TEST_CASE("e2e: the copy a move leaves behind is reclaimed by hand, or on its own after ReclaimAfterSeconds",
          "[e2e][operator][reclaim]") {
  temp_dir dir;
  moonmqd_process b1("b1", dir.path()), b2("b2", dir.path());
  b1.configure({&b1, &b2}, "\"ReclaimAfterSeconds\": 0");  // b1 keeps copies until asked
  b2.configure({&b1, &b2}, "\"ReclaimAfterSeconds\": 1");  // b2 gives them back after a second
  b1.start();
  b2.start();
  {
    auto api = b1.api();
    REQUIRE(api.Post("/v1/topics", R"({"name":"orders","partitions":1,"placement":"local"})", "application/json")->status == 200);
  }
  produce(b1, 200, 1000);
  const std::uint64_t id = ctl_json(b1, {"move", "orders", "0", "b2"})["id"].GetUint64();
  wait_until([&] { return find_move(b1, id)["finished"].GetBool(); }, "the move");
  REQUIRE(find_move(b1, id)["succeeded"].GetBool());

  auto listed = ctl_json(b2, {"reclaim", "b1", "--list"});
  REQUIRE(listed["copies"].Size() == 1);
  CHECK(listed["copies"][0]["eligible"].GetBool());
  const std::uint64_t size = listed["copies"][0]["size_bytes"].GetUint64();
  CHECK(size > 200'000);
  auto human = ctl(b2, {"reclaim", "b1"});
  INFO(human.out << human.err);
  REQUIRE(human.exit_code == 0);
  CHECK_THAT(human.out, Catch::Contains("1 copies"));
  CHECK(ctl_json(b1, {"reclaim", "b1", "--list"})["copies"].Size() == 0);
  // Every byte is still served by b2.
  auto parts = ctl_json(b1, {"partitions"});
  CHECK(std::string(parts["partitions"][0]["owner"].GetString()) == "b2");
  CHECK(parts["partitions"][0]["size_bytes"].GetUint64() == size);

  // Back to b1: b2's copy goes by itself about a second later.
  const std::uint64_t back = ctl_json(b1, {"move", "orders", "0", "b1"})["id"].GetUint64();
  wait_until([&] { return find_move(b2, back)["finished"].GetBool(); }, "the move back");
  REQUIRE(find_move(b2, back)["succeeded"].GetBool());
  wait_until([&] { return ctl_json(b2, {"reclaim", "b2", "--list"})["copies"].Size() == 0; }, "the timed reclaim");
  CHECK_THAT(slurp(b2.log_path), Catch::Contains("reclaimed") && Catch::Contains("idle for"));
  CHECK(ctl_json(b2, {"partitions"})["partitions"][0]["size_bytes"].GetUint64() == size);
}

TEST_CASE("e2e: a TLS broker and a plain one say so at once, on both sides, instead of timing out",
          "[e2e][operator][tls]") {
  temp_dir dir;
  auto certs = make_certificates(dir.path());
  moonmqd_process b1("b1", dir.path()), b2("b2", dir.path());
  b1.configure({&b1, &b2}, mutual_tls_section(certs, "b1"));
  b2.configure({&b1, &b2});  // forgot Tls
  b1.start();
  b2.start();
  auto from_tls = ctl_json(b1, {"brokers"});
  auto from_plain = ctl_json(b2, {"brokers"});
  // Said by the other side, not found by waiting out the peer timeout.
  CHECK_THAT(from_tls["brokers"][1]["error"].GetString(), !Catch::Contains("no answer within"));
  CHECK_THAT(from_plain["brokers"][1]["error"].GetString(), !Catch::Contains("no answer within"));
  CHECK_THAT(from_tls["brokers"][1]["error"].GetString(), Catch::Contains("is Cluster.Tls set on it too?"));
  CHECK_THAT(from_plain["brokers"][1]["error"].GetString(),
             Catch::Contains("tls_required") && Catch::Contains("set Cluster.Tls on the calling broker too"));
  wait_until([&] { return slurp(b2.log_path).find("a TLS client reached this plain listener") != std::string::npos; },
             "b2's log line");
  wait_until([&] { return slurp(b1.log_path).find("a plain HTTP client reached this TLS listener") != std::string::npos; },
             "b1's log line");
}

TEST_CASE("e2e: a peer whose address does not resolve, or that does not answer, is named in the log soon after start",
          "[e2e][operator][peers]") {
  temp_dir dir;
  moonmqd_process b1("b1", dir.path()), typo("b2", dir.path()), down("b3", dir.path());
  typo.host = "nowhere.invalid";  // never started; b1 lists it under a name that does not resolve
  b1.configure({&b1, &typo, &down});
  b1.start();
  wait_until([&] { return slurp(b1.log_path).find("peer b2's address nowhere.invalid") != std::string::npos; },
             "the resolution warning");
  wait_until([&] { return slurp(b1.log_path).find("peer b3 at 127.0.0.1") != std::string::npos; },
             "the reachability warning");
  CHECK_THAT(slurp(b1.log_path), Catch::Contains("cannot be resolved") && Catch::Contains("does not answer"));
  // b3 comes up: said once.
  down.configure({&b1, &down});
  down.start();
  wait_until([&] { return slurp(b1.log_path).find("peer b3 at") != std::string::npos &&
                          slurp(b1.log_path).find("answers again") != std::string::npos; },
             "b3 answering again", 60);
}

TEST_CASE("e2e: broker metrics count produce and fetch per topic, bytes held and request latency by route, and pass "
          "promtool", "[e2e][operator][metrics]") {
  three_brokers c;
  auto api = c.b1.api();
  REQUIRE(api.Post("/v1/topics", R"({"name":"orders","partitions":2,"placement":"local"})", "application/json")->status == 200);
  produce(c.b1, 40, 100);  // 40 records of 100 bytes
  REQUIRE(api.Get("/v1/topics/orders/partitions/0/records?offset=0&max_bytes=1048576")->status == 200);
  REQUIRE(api.Get("/v1/topics/orders/partitions/0/records?offset=0&max_bytes=1048576")->status == 200);
  REQUIRE(api.Get("/no/such/route/a/b/c")->status == 404);
  // A request is counted once its answer has been written (the server's logger runs after it): the last one may not
  // be counted yet when /metrics is asked right after, so wait for it.
  auto m = api.Get("/metrics");
  eventually(
      [&] {
        if (!m || m->body.find("route=\"unmatched\"") != std::string::npos) return true;
        m = api.Get("/metrics");
        return false;
      },
      std::chrono::seconds(5), std::chrono::milliseconds(20));
  REQUIRE(m);
  REQUIRE(m->status == 200);
  const std::string& text = m->body;
  INFO(text);
  for (const char* line : {"moonmq_broker_produced_records_total{topic=\"orders\"} 40",
                           "moonmq_broker_produced_bytes_total{topic=\"orders\"} 4000",
                           "moonmq_broker_fetched_records_total{topic=\"orders\"} 80",
                           "moonmq_broker_partitions{state=\"served\"} 2",
                           "moonmq_http_request_duration_seconds_count{code=\"200\",method=\"POST\","
                           "route=\"/v1/topics/{}/records\"} 2",
                           "route=\"unmatched\""})
    CHECK(text.find(line) != std::string::npos);
  CHECK(text.find("moonmq_broker_stored_bytes{state=\"served\"}") != std::string::npos);
  CHECK(text.find("/no/such") == std::string::npos);  // a path that is no route never becomes a label
  REQUIRE(std::string(MOONMQ_PROMTOOL) != "");
  auto checked = run_process({MOONMQ_PROMTOOL, "check", "metrics"}, text);
  INFO(checked.out << checked.err);
  CHECK(checked.exit_code == 0);
}

TEST_CASE("e2e: moonmqctl plan runs the planner on the live cluster the balancer measured, and moves nothing",
          "[e2e][operator][plan]") {
  temp_dir dir;
  moonmqd_process b1("b1", dir.path()), b2("b2", dir.path());
  const std::string balancer = "\"Autobalance\": {\"Enabled\": true, \"DryRun\": true, \"IntervalSeconds\": 1}";
  b1.configure({&b1, &b2}, "", balancer);
  b2.configure({&b1, &b2});
  b1.start();
  b2.start();
  auto api = b1.api();
  REQUIRE(api.Post("/v1/topics", R"({"name":"orders","partitions":4,"placement":"local"})", "application/json")->status == 200);
  for (int p = 0; p < 4; ++p)
    for (int i = 0; i < 5; ++i)
      REQUIRE(api.Post("/v1/topics/orders/records",
                       "{\"partition\":" + std::to_string(p) + ",\"records\":[{\"value\":\"" +
                           std::string(20000, 'p') + "\"}]}",
                       "application/json")
                  ->status == 200);
  // The snapshot route: 404 with the reason on a broker without the balancer, then b1's once a pass measured.
  auto none = ctl(b2, {"plan"});
  CHECK(none.exit_code == 1);
  CHECK_THAT(none.err, Catch::Contains("the balancer is off on this broker"));
  wait_until([&] {
    auto r = api.Get("/v1/autobalancer/snapshot");
    if (!r || r->status != 200) return false;
    auto d = parse(r->body);
    std::size_t orders = 0;
    for (const auto& p : d["partitions"].GetArray()) orders += std::string(p["topic"].GetString()) == "orders";
    return orders == 4;
  }, "a pass that measured the topic");
  auto text = ctl(b1, {"plan", "--converge"});
  INFO(text.out << text.err);
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("b1") && Catch::Contains("b2"));
  auto json = ctl_json(b1, {"plan", "--converge"});
  REQUIRE(json.HasMember("actions"));
  CHECK(json["actions"].Size() >= 1);  // everything is on b1: the disk goal moves some to b2
  // A dry run of the planner: nothing moved.
  CHECK(ctl_json(b1, {"moves", "--all"})["reassignments"].Size() == 0);
  auto last = ctl(b1, {"plan", "--last"});
  CHECK(last.exit_code == 0);
}

TEST_CASE("e2e: a broker that never had a topic routes produces to its owner and points fetches there",
          "[e2e][operator][routing]") {
  three_brokers c;
  auto b1 = c.b1.api();
  REQUIRE(b1.Post("/v1/topics", R"({"name":"orders","partitions":3,"placement":"local"})", "application/json")->status == 200);
  auto b3 = c.b3.api();
  auto chosen = b3.Post("/v1/topics/orders/records", R"({"partition":2,"records":[{"value":"via b3"}]})",
                        "application/json");
  REQUIRE(chosen);
  INFO(chosen->body);
  REQUIRE(chosen->status == 200);
  CHECK(std::string(parse(chosen->body)["broker"].GetString()) == "b1");
  auto keyed = b3.Post("/v1/topics/orders/records", R"({"records":[{"key":"k","value":"keyed via b3"}]})",
                       "application/json");
  REQUIRE(keyed);
  INFO(keyed->body);
  CHECK(keyed->status == 200);
  auto fetched = b3.Get("/v1/topics/orders/partitions/2/records?offset=0");
  REQUIRE(fetched);
  CHECK(fetched->status == 421);
  CHECK(std::string(parse(fetched->body)["owner"].GetString()) == "b1");
  auto at_owner = b1.Get("/v1/topics/orders/partitions/2/records?offset=0");
  CHECK_THAT(at_owner->body, Catch::Contains("via b3"));
  // A topic nobody has is still a 404.
  auto nowhere = b3.Post("/v1/topics/nope/records", R"({"records":[{"value":"x"}]})", "application/json");
  CHECK(nowhere->status == 404);
  // b3 knows the topic from the cluster's catalog, on b1, and never created a log of it by routing to it.
  CHECK_THAT(b3.Get("/v1/topics")->body, Catch::Contains(R"("name":"orders","partitions":3,"version":1,"owners":["b1","b1","b1"])"));
  CHECK(b3.Get("/v1/partitions?topic=orders")->body.find("\"b3\"") == std::string::npos);
}

TEST_CASE("e2e: a destination's drained copy whose confirm is pending is never reclaimed", "[e2e][operator][reclaim]") {
  temp_dir dir;
  moonmqd_process b1("b1", dir.path()), b2("b2", dir.path());
  b1.configure({&b1, &b2});
  b2.configure({&b1, &b2}, "\"ReclaimAfterSeconds\": 0");
  b1.faults = "reassigner.after_drain=pause=4000";  // drained to b2, then 4 s before the confirm is sent
  b1.start();
  b2.start();
  {
    auto api = b1.api();
    REQUIRE(api.Post("/v1/topics", R"({"name":"orders","partitions":1,"placement":"local"})", "application/json")->status == 200);
  }
  produce(b1, 100, 1000);
  const std::uint64_t id = ctl_json(b1, {"move", "orders", "0", "b2"})["id"].GetUint64();
  wait_until([&] {
    auto m = find_move(b1, id);
    return std::string(m["step"].GetString()) == "drain" &&
           m["bytes_copied"].GetUint64() == m["bytes_total"].GetUint64();
  }, "the drained move waiting before its confirm");
  // b2 holds every byte, unconfirmed: b1 no longer serves it (in handover) and nothing may delete b2's copy.
  auto listed = ctl_json(b2, {"reclaim", "b2", "--list"});
  REQUIRE(listed["copies"].Size() == 1);
  CHECK_FALSE(listed["copies"][0]["eligible"].GetBool());
  CHECK_THAT(listed["copies"][0]["held_by"].GetString(), Catch::Contains("running"));
  auto r = ctl(b2, {"reclaim", "b2"});
  INFO(r.out << r.err);
  CHECK_THAT(r.out, Catch::Contains("reclaimed 0 B"));
  // The confirm goes out: b2 serves all of it.
  wait_until([&] {
    auto d = ctl_json(b1, {"partitions"});
    return d["partitions"].Size() == 1 && std::string(d["partitions"][0]["owner"].GetString()) == "b2";
  }, "the confirm by recovery");
  CHECK(ctl_json(b1, {"partitions"})["partitions"][0]["size_bytes"].GetUint64() > 100'000);
}

TEST_CASE("e2e: moonmqctl describes a group and a transaction from any broker, asking their coordinators, and "
          "lists the whole cluster's with each one's coordinator",
          "[e2e][operator]") {
  three_brokers c;
  auto api = c.b1.api();
  REQUIRE(api.Post("/v1/topics", R"({"name":"orders","partitions":2,"placement":"local"})", "application/json")->status ==
          200);
  auto joined = api.Post("/v1/groups/gd/join", R"({"topics":["orders"]})", "application/json");
  REQUIRE(joined);
  REQUIRE(joined->status == 200);
  const std::string member = parse(joined->body)["member_id"].GetString();
  REQUIRE(api.Post("/v1/producers", R"({"transactional_id":"td"})", "application/json")->status == 200);
  for (auto* b : {&c.b1, &c.b2, &c.b3}) {
    auto g = ctl(*b, {"groups", "describe", "gd"});
    INFO(g.out << g.err);
    CHECK(g.exit_code == 0);
    CHECK_THAT(g.out, Catch::Contains("group gd, coordinator") && Catch::Contains(member));
    auto t = ctl(*b, {"transactions", "describe", "td"});
    INFO(t.out << t.err);
    CHECK(t.exit_code == 0);
    CHECK_THAT(t.out, Catch::Contains("transactional id td, coordinator") && Catch::Contains("state empty"));
  }
  CHECK(ctl(c.b2, {"groups", "describe", "nobody"}).exit_code == 1);
  CHECK(ctl(c.b2, {"transactions", "describe", "nothing"}).exit_code == 1);

  // The lists are the cluster's, whichever broker is asked: more groups and ids, so that several coordinators hold
  // some, each listed once with its coordinator.
  std::map<std::string, std::string> coordinator_of;
  for (int i = 0; i < 6; ++i) {
    const std::string g = "g" + std::to_string(i), t = "t" + std::to_string(i);
    REQUIRE(api.Post("/v1/groups/" + g + "/join", R"({"topics":["orders"]})", "application/json")->status == 200);
    REQUIRE(api.Post("/v1/producers", "{\"transactional_id\":\"" + t + "\"}", "application/json")->status == 200);
    coordinator_of[g] = parse(api.Get(("/v1/groups/" + g).c_str())->body)["coordinator"].GetString();
    coordinator_of[t] = parse(api.Get(("/v1/transactions/" + t).c_str())->body)["coordinator"].GetString();
  }
  std::set<std::string> coordinators;
  for (const auto& [name, b] : coordinator_of) coordinators.insert(b);
  CHECK(coordinators.size() >= 2);
  for (auto* b : {&c.b1, &c.b2, &c.b3}) {
    auto groups = ctl_json(*b, {"groups"});
    std::map<std::string, std::string> listed;
    for (const auto& g : groups["groups"].GetArray()) listed[g["group"].GetString()] = g["coordinator"].GetString();
    CHECK(listed.size() == 7);  // gd and g0..g5
    for (int i = 0; i < 6; ++i) CHECK(listed["g" + std::to_string(i)] == coordinator_of["g" + std::to_string(i)]);
    auto txns = ctl_json(*b, {"transactions"});
    std::map<std::string, std::string> ids;
    for (const auto& t : txns["transactions"].GetArray())
      ids[t["transactional_id"].GetString()] = t["coordinator"].GetString();
    CHECK(ids.size() == 7);  // td and t0..t5
    for (int i = 0; i < 6; ++i) CHECK(ids["t" + std::to_string(i)] == coordinator_of["t" + std::to_string(i)]);
    auto table = ctl(*b, {"transactions"});
    CHECK_THAT(table.out, Catch::Contains("COORDINATOR") && Catch::Contains("t5"));
  }
  CHECK(ctl_json(c.b2, {"groups", "--local"})["coordinator"].GetString() == std::string("b2"));
  // Paged: three names a page, each page the next three in byte order across coordinators, `next` where to go on;
  // moonmqctl follows the pages to the end, and a broker's own list pages too.
  {
    std::vector<std::string> pages_read;
    std::string after;
    int pages = 0;
    while (true) {
      auto p = api.Get(("/v1/groups?scope=cluster&limit=3" + (after.empty() ? "" : "&after=" + after)).c_str());
      REQUIRE(p);
      REQUIRE(p->status == 200);
      auto d = parse(p->body);
      CHECK(d["groups"].Size() <= 3);
      for (const auto& g : d["groups"].GetArray()) pages_read.push_back(g["group"].GetString());
      ++pages;
      if (!d.HasMember("next")) break;
      after = d["next"].GetString();
      REQUIRE(pages < 10);
    }
    CHECK(pages == 3);
    CHECK(pages_read == std::vector<std::string>{"g0", "g1", "g2", "g3", "g4", "g5", "gd"});
    CHECK(api.Get("/v1/groups?scope=cluster&limit=0")->status == 400);
    CHECK(api.Get("/v1/transactions?limit=10001")->status == 400);
    auto t = ctl_json(c.b3, {"transactions", "--page", "2"});
    CHECK(t["transactions"].Size() == 7);
    CHECK_FALSE(t.HasMember("next"));
    auto g = ctl_json(c.b3, {"groups", "--page", "1"});
    CHECK(g["groups"].Size() == 7);
    std::size_t local = 0;
    for (auto* b : {&c.b1, &c.b2, &c.b3}) local += ctl_json(*b, {"groups", "--local", "--page", "1"})["groups"].Size();
    CHECK(local == 7);
  }
  // A broker down: the list says so, on stderr, and lists what the others coordinate.
  c.b3.kill9();
  auto partial = ctl(c.b1, {"groups"});
  INFO(partial.out << partial.err);
  CHECK(partial.exit_code == 0);
  CHECK_THAT(partial.err, Catch::Contains("warning: b3 did not answer"));
  // Read a page at a time, the same: every page's silence counts.
  auto paged = ctl(c.b1, {"groups", "--page", "2"});
  CHECK(paged.exit_code == 0);
  CHECK_THAT(paged.err, Catch::Contains("warning: b3 did not answer"));
  CHECK(paged.out == partial.out);
  for (int i = 0; i < 6; ++i)
    if (coordinator_of["g" + std::to_string(i)] != "b3") CHECK_THAT(partial.out, Catch::Contains("g" + std::to_string(i)));
  // A peer's silence is carried as fields, not as its body inside a message; the CLI shows both.
  auto silent = c.b1.api().Get("/v1/brokers/b3/drain");
  REQUIRE(silent);
  INFO(silent->body);
  CHECK(silent->status == 503);
  auto e = parse(silent->body);
  CHECK(std::string(e["error"].GetString()) == "unavailable");
  CHECK(std::string(e["message"].GetString()) == "b3 did not answer");
  CHECK(std::string(e["peer"]["id"].GetString()) == "b3");
  CHECK(std::string(e["peer"]["error"].GetString()) == "unreachable");
  CHECK_THAT(e["peer"]["message"].GetString(), !Catch::Contains("{"));
  auto shown = ctl(c.b1, {"brokers"});
  INFO(shown.out);
  CHECK_THAT(shown.out, Catch::Contains("UNREACHABLE") && !Catch::Contains("{\"error"));
  // The CLI keeps the fields: under --json the error line carries the peer's, in words without it.
  auto as_json = ctl(c.b1, {"--json", "reclaim", "b3", "--list"});
  INFO(as_json.err);
  CHECK(as_json.exit_code != 0);
  auto j = parse(as_json.err);
  REQUIRE(j.IsObject());
  CHECK(std::string(j["error"].GetString()) == "unavailable");
  CHECK(j["status"].GetInt() == 503);
  REQUIRE(j.HasMember("peer"));
  CHECK(std::string(j["peer"]["id"].GetString()) == "b3");
  CHECK(std::string(j["peer"]["error"].GetString()) == "unreachable");
  auto in_words = ctl(c.b1, {"reclaim", "b3", "--list"});
  CHECK_THAT(in_words.err, Catch::Contains("b3 did not answer (b3: unreachable: "));
}

TEST_CASE("e2e: moonmqctl loads, balancer status and plan answer alike from every broker: a broker that is not the "
          "controller asks it",
          "[e2e][operator]") {
  temp_dir dir;
  moonmqd_process b1{"b1", dir.path()}, b2{"b2", dir.path()}, b3{"b3", dir.path()};
  const std::string balance =
      "\"Autobalance\":{\"Enabled\":true,\"IntervalSeconds\":1,\"DryRun\":true,"
      "\"Goals\":[{\"Name\":\"PARTITION_COUNT\"}]}";
  for (auto* b : {&b1, &b2, &b3}) b->configure({&b1, &b2, &b3}, "", balance);
  for (auto* b : {&b1, &b2, &b3}) b->start();
  REQUIRE(b1.api().Post("/v1/topics", R"({"name":"orders","partitions":3,"placement":"local"})", "application/json")
              ->status == 200);
  // Without Raft every loop claims the controller's role at its first pass, and all but the last claim are
  // superseded once they hear of it. Then every broker answers the standing controller's state: the same id, a
  // claim not superseded, a measured cluster.
  std::string controller;
  wait_until([&] {
    std::set<std::string> ids;
    for (auto* b : {&b1, &b2, &b3}) {
      auto d = ctl_json(*b, {"balancer", "status"});
      const auto& c = d["controller"];
      if (c["superseded"].GetBool() || d["passes"].GetUint64() == 0 || d["brokers"].Size() != 3) return false;
      ids.insert(c["id"].GetString());
    }
    if (ids.size() != 1) return false;
    controller = *ids.begin();
    return true;
  }, "every broker answering one standing controller's state", 60);
  for (auto* b : {&b1, &b2, &b3}) {
    auto status = ctl_json(*b, {"balancer", "status"});
    INFO(b->id);
    CHECK(std::string(status["controller"]["id"].GetString()) == controller);
    CHECK(status["passes"].GetUint64() > 0);
    CHECK_FALSE(status.HasMember("controller_silent"));
    auto loads = ctl(*b, {"loads"});
    INFO(loads.out << loads.err);
    CHECK(loads.exit_code == 0);
    CHECK_THAT(loads.out, Catch::Contains("b1") && Catch::Contains("b2") && Catch::Contains("b3"));
    CHECK_THAT(loads.out, !Catch::Contains("no pass"));
  }
  // The controller down: a broker that asks it says it answers alone (until another becomes controller).
  moonmqd_process* down = controller == "b1" ? &b1 : controller == "b2" ? &b2 : &b3;
  moonmqd_process* other = down == &b1 ? &b2 : &b1;
  down->kill9();
  auto alone = ctl(*other, {"balancer", "status"});
  INFO(alone.out << alone.err);
  CHECK(alone.exit_code == 0);
  // Either it still takes the dead one for the controller and says it did not answer, or another took over.
  const bool said_silent = alone.out.find("did not answer") != std::string::npos;
  const bool taken_over = alone.out.find("controller:  " + down->id + " ") == std::string::npos;
  CHECK((said_silent || taken_over));
}

TEST_CASE("e2e: moonmqctl topics create, describe, grow and delete, from any broker, for the whole cluster",
          "[e2e][operator]") {
  three_brokers c;
  auto made = ctl(c.b2, {"topics", "create", "ledger", "--partitions", "3"});
  INFO(made.out << made.err);
  REQUIRE(made.exit_code == 0);
  CHECK_THAT(made.out, Catch::Contains("created ledger (3 partitions"));
  auto again = ctl(c.b3, {"topics", "create", "ledger", "--partitions", "3"});
  CHECK(again.exit_code == 1);  // the name is taken, whichever broker is asked
  auto described = ctl(c.b3, {"topics", "describe", "ledger"});
  INFO(described.out << described.err);
  REQUIRE(described.exit_code == 0);
  CHECK_THAT(described.out, Catch::Contains("topic ledger: 3 partitions"));
  CHECK_THAT(described.out, !Catch::Contains("NOT SERVED"));
  auto as_json = ctl_json(c.b1, {"topics", "describe", "ledger"});
  CHECK(as_json["partitions"]["partitions"].Size() == 3);
  auto grown = ctl(c.b1, {"topics", "grow", "ledger", "5"});
  INFO(grown.out << grown.err);
  REQUIRE(grown.exit_code == 0);
  CHECK_THAT(grown.out, Catch::Contains("ledger has 5 partitions"));
  CHECK(ctl_json(c.b2, {"topics", "describe", "ledger"})["partitions"]["partitions"].Size() == 5);
  CHECK(ctl(c.b2, {"topics", "grow", "ledger", "2"}).exit_code == 1);  // never fewer
  auto deleted = ctl(c.b3, {"topics", "delete", "ledger"});
  INFO(deleted.out << deleted.err);
  REQUIRE(deleted.exit_code == 0);
  auto gone = ctl(c.b1, {"topics", "describe", "ledger"});
  CHECK(gone.exit_code == 1);
  CHECK_THAT(gone.err, Catch::Contains("no topic ledger"));
}
