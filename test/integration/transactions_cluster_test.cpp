// Transactions over an in-process cluster: three brokers on the loopback network, each with its transaction
// service (coordinator and owner side), records routed by the real router, partitions moved by the real Reassigner,
// and a clock the test advances. Faults are placed exactly: markers dropped, a coordinator restarted between its
// commit point and the markers, a partition moved with a transaction open on it, a zombie producer. Then seeded runs
// that mix all of these at random and hand what the clients saw to the history checker.
#include <rapidjson/document.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <cstdlib>
#include <random>

#include "checker/history.hpp"
#include "json/writer.hpp"
#include "moonmq/core/fnv1a.hpp"
#include "moonmq/txn/txn_service.hpp"
#include "support/in_process_cluster.hpp"

using namespace moonmq;

namespace {

rapidjson::Document parse(const std::string& s) {
  rapidjson::Document d;
  d.Parse(s.c_str());
  return d;
}

/// A coordinator's disk whose fdatasync can be made to fail (a disk that cannot make anything durable now).
class disk_log final : public storage::keyed_log {
 public:
  explicit disk_log(std::string name) : inner_(std::move(name)) {}
  std::atomic<bool> sync_fails{false};
  std::map<std::string, std::string> entries() const override { return inner_.entries(); }
  status put(const std::string& key, const std::string& value, bool sync) override {
    (void)inner_.put(key, value, false);
    return sync ? this->sync() : status{};
  }
  status sync() override {
    if (sync_fails) return {errc::io_error, name() + ": fdatasync failed"};
    return {};
  }
  std::string name() const override { return inner_.name(); }

 private:
  storage::memory_keyed_log inner_;
};

struct txn_cluster {
  test::in_process_cluster c;
  txn::time_ms now = 1'000'000;
  std::uint64_t next_id = 1000;
  std::vector<broker_id> ids;
  std::vector<std::unique_ptr<disk_log>> disks;
  std::vector<std::unique_ptr<txn::txn_service>> services;

  explicit txn_cluster(int n) : c(n) {
    for (int i = 1; i <= n; ++i) {
      ids.emplace_back(c[i].id);
      disks.push_back(std::make_unique<disk_log>(c[i].id + "/txn-state.log"));
    }
    services.resize(static_cast<std::size_t>(n));
    for (int i = 1; i <= n; ++i) start(i);
  }

  /// Starts (or restarts, from its disk) broker i's transaction service.
  void start(int i) {
    auto& b = c[i];
    b.transactions = nullptr;
    auto svc = txn::txn_service::open(
        {ids, 10'000, [this] { return now; }, [this] { return next_id++; }}, *disks[idx(i)], b.state(), *b.peers);
    REQUIRE(svc);
    services[idx(i)] = std::move(*svc);
    b.transactions = [s = services[idx(i)].get()](const transport::request& r) { return s->handle_cluster(r); };
    b.txns = services[idx(i)].get();
  }

  txn::txn_service& at(int i) { return *services[idx(i)]; }
  int coordinator(const std::string& tid) {
    auto c = services[0]->coordinator_of(tid);
    return static_cast<int>(std::find(ids.begin(), ids.end(), c) - ids.begin()) + 1;
  }
  void tick() {
    for (auto& s : services) s->tick();
  }

  /// What a read_committed reader of `tp` gets from its owner `owner`.
  std::vector<std::string> committed(int owner, const topic_partition& tp) {
    auto& b = c[owner];
    auto view = b.producers.committed(tp, 0);
    REQUIRE(view);
    auto bytes = b.store.read(tp, 0, 64 << 20);
    REQUIRE(bytes);
    std::vector<std::string> out;
    for (const auto& v : storage::decode_frames(bytes->bytes.view(), 0))
      if (view->visible(v)) out.emplace_back(v.value);
    return out;
  }

  static std::size_t idx(int i) { return static_cast<std::size_t>(i - 1); }
};

/// A transactional producer connected to broker `via`.
struct producer {
  txn_cluster& g;
  int via;
  std::string tid;
  std::uint64_t id = 0;
  std::uint32_t epoch = 0;
  std::map<topic_partition, std::uint32_t> sequence;

  producer(txn_cluster& cluster, int broker, std::string transactional_id)
      : g(cluster), via(broker), tid(std::move(transactional_id)) {}

  /// The HTTP status moonmqd's client API answers for the init.
  int init() {
    auto r = g.at(via).init(tid);
    if (!r) return transport::http_status_of(r.code());
    id = r->producer_id;
    epoch = r->epoch;
    sequence.clear();
    return 200;
  }

  /// Produces `values` to `tp` in the transaction through broker `via`'s produce front end (moonmqd's produce).
  frontend::outcome<frontend::produced> send(const topic_partition& tp, const std::vector<std::string>& values) {
    std::vector<storage::record> records;
    for (const auto& v : values) records.push_back({std::nullopt, v, 1, 0});
    auto fe = g.c[via].produce_frontend();
    auto r = g.c.run(fe.produce_async({tp.topic, tp.partition, std::move(records),
                                       storage::producer_stamp{id, epoch, sequence[tp]}, tid}));
    if (r) sequence[tp] += static_cast<std::uint32_t>(values.size());
    return r;
  }

  /// Commits or aborts; the answer's state. The next transaction uses the bumped epoch.
  std::string end(bool commit) {
    auto r = g.at(via).end({tid, id, epoch, commit, false});
    if (!r) return "HTTP " + std::to_string(transport::http_status_of(r.code())) + ": " + r.message();
    epoch = r->epoch;
    sequence.clear();
    return r->state;
  }
};

void place(txn_cluster& g, const std::vector<int>& owners) {
  REQUIRE(g.c[1].store.ensure_topic("t", static_cast<std::int32_t>(owners.size())));
  for (std::size_t p = 0; p < owners.size(); ++p)
    if (owners[p] != 1) REQUIRE(g.c.move(1, {"t", static_cast<std::int32_t>(p)}, owners[p]));
}

}  // namespace

TEST_CASE("in-process transactions: spanning three brokers, each commits or aborts whole, and read_committed never "
          "sees an aborted or open record",
          "[txn][integration]") {
  txn_cluster g(3);
  place(g, {1, 2, 3});
  std::mt19937 rng(7);
  std::map<int, std::vector<std::string>> expected;  // per partition, committed values in order
  producer p(g, 2, "tx-main");
  REQUIRE(p.init() == 200);
  for (int n = 0; n < 20; ++n) {
    p.via = 1 + static_cast<int>(rng() % 3);  // produced through any broker
    std::map<int, std::vector<std::string>> written;
    for (int part = 0; part < 3; ++part) {
      std::vector<std::string> values{"x" + std::to_string(n) + "-" + std::to_string(part) + "a",
                                      "x" + std::to_string(n) + "-" + std::to_string(part) + "b"};
      REQUIRE(p.send({"t", part}, values));
      written[part] = values;
      // While open, a reader sees none of it on any partition.
      for (int q = 0; q < 3; ++q) CHECK(g.committed(q + 1, {"t", q}) == expected[q]);
    }
    const bool commit = rng() % 2 == 0;
    REQUIRE(p.end(commit) == (commit ? "complete_commit" : "complete_abort"));
    if (commit)
      for (auto& [part, values] : written) expected[part].insert(expected[part].end(), values.begin(), values.end());
    for (int q = 0; q < 3; ++q) CHECK(g.committed(q + 1, {"t", q}) == expected[q]);
  }
  // Plain records between transactions are read as usual.
  REQUIRE(g.c.produce(3, {"t", 2}, {test::rec("plain")}));
  expected[2].push_back("plain");
  CHECK(g.committed(3, {"t", 2}) == expected[2]);
  CHECK_FALSE(expected[0].empty());
}

TEST_CASE("in-process transactions: a new session of the same transactional id aborts the open transaction and "
          "fences the zombie everywhere",
          "[txn][integration]") {
  txn_cluster g(3);
  place(g, {1, 2, 3});
  producer zombie(g, 1, "tx-z");
  REQUIRE(zombie.init() == 200);
  REQUIRE(zombie.send({"t", 0}, {"z1"}));
  REQUIRE(zombie.send({"t", 1}, {"z2"}));

  producer fresh(g, 3, "tx-z");
  REQUIRE(fresh.init() == 200);
  CHECK(fresh.id == zombie.id);
  CHECK(fresh.epoch > zombie.epoch);
  // The zombie's open transaction was aborted on every partition it touched.
  CHECK(g.committed(1, {"t", 0}).empty());
  CHECK(g.committed(2, {"t", 1}).empty());
  CHECK(g.c[1].producers.committed({"t", 0}, 0)->open.empty());

  // Everything the zombie tries is refused: produce to an enrolled partition, a new partition, commit.
  std::vector<storage::record> late{{std::nullopt, "late", 1, storage::attr_transactional,
                                     storage::producer_stamp{zombie.id, zombie.epoch, 1}}};
  CHECK(g.c.produce(1, {"t", 0}, late).code() == errc::producer_fenced);
  CHECK(zombie.send({"t", 2}, {"z3"}).code() == errc::producer_fenced);
  CHECK_THAT(zombie.end(true), Catch::Contains("409"));

  REQUIRE(fresh.send({"t", 0}, {"f1"}));
  REQUIRE(fresh.end(true) == "complete_commit");
  CHECK(g.committed(1, {"t", 0}) == std::vector<std::string>{"f1"});
}

TEST_CASE("in-process transactions: a coordinator that restarts after its commit point delivers the markers, and "
          "readers wait at the LSO until then",
          "[txn][integration]") {
  txn_cluster g(3);
  place(g, {1, 2, 3});
  const std::string tid = "tx-restart";
  const int coordinator = g.coordinator(tid);
  producer p(g, coordinator, tid);
  REQUIRE(p.init() == 200);
  for (int part = 0; part < 3; ++part) REQUIRE(p.send({"t", part}, {"v" + std::to_string(part)}));

  // Markers do not get through: the commit is decided (prepare_commit is in the log) but not delivered.
  g.c.net.set_hook([](const std::string&, const std::string&, const transport::request& r) {
    return r.path == "/cluster/txn/markers" ? transport::fate::drop : transport::fate::deliver;
  });
  const std::string state = p.end(true);
  CHECK(state == "prepare_commit");
  for (int q = 0; q < 3; ++q)
    if (q + 1 != coordinator) CHECK(g.committed(q + 1, {"t", q}).empty());  // blocked at the LSO
  auto before = g.at(1).describe(tid);
  REQUIRE(before);
  const auto old_epoch = parse(*before)["coordinator_epoch"].GetUint();

  g.start(coordinator);  // kill -9 and back: only its log remains
  g.c.net.set_hook({});
  g.tick();
  for (int q = 0; q < 3; ++q) CHECK(g.committed(q + 1, {"t", q}) == std::vector<std::string>{"v" + std::to_string(q)});
  auto d = g.at(1).describe(tid);
  REQUIRE(d);
  CHECK(std::string(parse(*d)["state"].GetString()) == "complete_commit");
  // The restarted coordinator has a new epoch, which its markers carried: the process it replaced can end nothing
  // more on the owners that got them (here: a marker as it would have sent for the producer's next transaction).
  // The coordinator's own partition had its marker before the restart.
  CHECK(parse(*d)["coordinator_epoch"].GetUint() == old_epoch + 1);
  for (int q = 0; q < 3; ++q) {
    if (q + 1 == coordinator) continue;
    transport::request m;
    m.path = "/cluster/txn/markers";
    m.body = json::object([&](json::writer& w) {
      json::put(w, "topic", "t");
      json::put(w, "partition", q);
      json::put(w, "producer_id", p.id);
      json::put(w, "producer_epoch", p.epoch + 1);
      json::put(w, "coordinator_epoch", old_epoch);
      json::put(w, "commit", false);
    });
    auto refused = g.at(q + 1).handle_cluster(m);
    CHECK(refused.status == 409);
    CHECK_THAT(refused.body, Catch::Contains("coordinator epoch"));
  }
}

TEST_CASE("in-process transactions: no marker goes out before the commit point is durable, whoever tries to deliver "
          "it",
          "[txn][integration]") {
  txn_cluster g(3);
  place(g, {1, 2, 3});
  const std::string tid = "tx-unsynced";
  const int coordinator = g.coordinator(tid);
  producer p(g, coordinator, tid);
  REQUIRE(p.init() == 200);
  for (int part = 0; part < 3; ++part) REQUIRE(p.send({"t", part}, {"v" + std::to_string(part)}));

  // The prepare record is written but cannot be synced: the commit is not answered as decided, and neither the
  // end nor the ticker sends a marker for it.
  std::atomic<int> markers{0};
  g.c.net.set_hook([&](const std::string&, const std::string&, const transport::request& r) {
    if (r.path == "/cluster/txn/markers") ++markers;
    return transport::fate::deliver;
  });
  g.disks[txn_cluster::idx(coordinator)]->sync_fails = true;
  const std::string state = p.end(true);
  CHECK_THAT(state, Catch::Contains("fdatasync failed"));
  g.tick();
  g.tick();
  CHECK(markers == 0);
  for (int q = 0; q < 3; ++q) CHECK(g.committed(q + 1, {"t", q}).empty());  // blocked at the LSO

  // Once the disk syncs, the ticker delivers what was decided: the commit is whole.
  g.disks[txn_cluster::idx(coordinator)]->sync_fails = false;
  g.tick();
  for (int q = 0; q < 3; ++q) CHECK(g.committed(q + 1, {"t", q}) == std::vector<std::string>{"v" + std::to_string(q)});
  CHECK(markers >= 2);
}

TEST_CASE("in-process transactions: a partition moved with a transaction open keeps it open on the new owner, "
          "and the markers follow it there",
          "[txn][integration]") {
  txn_cluster g(2);
  place(g, {1, 1});
  producer p(g, 1, "tx-move");
  REQUIRE(p.init() == 200);
  REQUIRE(p.send({"t", 0}, {"a"}));
  REQUIRE(p.send({"t", 1}, {"b"}));
  REQUIRE(g.c.move(1, {"t", 1}, 2));
  // The new owner rebuilt the partition's transactions from the copied log: still open, nothing visible.
  auto view = g.c[2].producers.committed({"t", 1}, 0);
  REQUIRE(view);
  CHECK(view->open.count(p.id));
  CHECK(g.committed(2, {"t", 1}).empty());
  // More records of the same transaction go to the new owner (its enrolment is already there).
  REQUIRE(p.send({"t", 1}, {"c"}));
  REQUIRE(p.end(true) == "complete_commit");
  CHECK(g.committed(2, {"t", 1}) == std::vector<std::string>{"b", "c"});
  CHECK(g.committed(1, {"t", 0}) == std::vector<std::string>{"a"});
}

TEST_CASE("in-process transactions: a transaction past its timeout is aborted and its producer fenced, and offsets "
          "in a transaction are written only if it commits",
          "[txn][integration]") {
  txn_cluster g(3);
  place(g, {1, 2, 3});
  producer p(g, 2, "tx-time");
  REQUIRE(p.init() == 200);
  REQUIRE(p.send({"t", 0}, {"slow"}));
  g.now += 10'001;
  g.tick();
  CHECK(g.c[1].producers.committed({"t", 0}, 0)->open.empty());
  CHECK(g.committed(1, {"t", 0}).empty());
  CHECK_THAT(p.end(true), Catch::Contains("409"));

  auto offsets = [&](producer& pr, std::uint64_t offset) {
    return g.at(pr.via).add_offsets({pr.tid, pr.id, pr.epoch, "g", {{{"g", {"t", 2}, offset}, broker_id("b3")}}});
  };
  producer q(g, 1, "tx-offsets");
  REQUIRE(q.init() == 200);
  REQUIRE(q.send({"t", 1}, {"out"}));
  REQUIRE(offsets(q, 7));
  REQUIRE(q.end(false) == "complete_abort");
  CHECK_FALSE(g.c[3].offsets.committed("g", {"t", 2}));
  REQUIRE(q.send({"t", 1}, {"out2"}));
  REQUIRE(offsets(q, 9));
  REQUIRE(q.end(true) == "complete_commit");
  REQUIRE(g.c[3].offsets.committed("g", {"t", 2}));
  CHECK(*g.c[3].offsets.committed("g", {"t", 2}) == 9);
  // The group moves on; a late re-send of the transaction's offset does not rewind it.
  REQUIRE(g.c[3].offsets.commit("g", {"t", 2}, 20));
  transport::request resend;
  resend.method = "POST";
  resend.path = "/cluster/txn/commit_offsets";
  resend.body = R"({"group":"g","topic":"t","partition":2,"offset":9})";
  CHECK(g.at(3).handle_cluster(resend).status == 200);
  CHECK(*g.c[3].offsets.committed("g", {"t", 2}) == 20);
}

namespace {

/// One seeded run for the simulation below: its history (for the checker) and what happened, for a failure message.
struct sim_run {
  std::string history;
  std::string log;
};

sim_run simulate(std::uint64_t seed) {
  sim_run out;
  txn_cluster g(3);
  place(g, {1, 2, 3});
  std::map<int, int> owner{{0, 1}, {1, 2}, {2, 3}};
  std::mt19937_64 rng(seed);
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  auto add = [&](const std::string& line) { out.history += line + "\n"; };

  // Faults decided by the request itself (and the step), so that threads sending markers in parallel cannot change
  // which ones are lost: a seed replays exactly.
  std::atomic<int> step{0};
  std::atomic<int> loss_percent{0};
  g.c.net.set_hook([&](const std::string& from, const std::string& to, const transport::request& r) {
    if (loss_percent.load() == 0) return transport::fate::deliver;
    const auto h = fnv1a(std::to_string(seed) + "|" + std::to_string(step.load()) + "|" + from + ">" + to + "|" +
                         r.path + "|" + r.body);
    if (static_cast<int>(h % 100) >= loss_percent.load()) return transport::fate::deliver;
    return h & 0x100 ? transport::fate::drop : transport::fate::lose_response;
  });

  struct sim_producer {
    producer p;
    bool broken = false;
    int written = 0;
    int transactions = 0;  ///< the client's own count: a transaction's label never depends on the broker's epochs
  };
  std::vector<sim_producer> producers;
  for (int k = 0; k < 2; ++k) producers.push_back({producer(g, 1 + static_cast<int>(pick(3)), "sim" + std::to_string(k))});
  for (auto& s : producers) REQUIRE(s.p.init() == 200);

  for (int n = 0; n < 40; ++n) {
    step = n;
    loss_percent = pick(3) == 0 ? 30 : 0;
    auto& s = producers[pick(producers.size())];
    const std::string txn = s.p.tid + ":" + std::to_string(s.transactions);
    switch (pick(6)) {
      case 0:
      case 1: {  // produce to a random partition
        const topic_partition tp{"t", static_cast<std::int32_t>(pick(3))};
        const std::string value = "s" + std::to_string(seed) + "-" + s.p.tid + "-" + std::to_string(s.written++);
        std::string line = "{\"op\":\"produce\",\"topic\":\"t\",\"partition\":" + std::to_string(tp.partition) +
                           ",\"value\":\"" + value + "\",\"txn\":\"" + txn + "\"";
        auto r = s.p.send(tp, {value});  // the produce front end: join, append or forward, the owner told
        if (r) {
          add(line + ",\"outcome\":\"ok\",\"offset\":" + std::to_string(r->offsets[0]) + "}");
        } else {
          add(line + ",\"outcome\":\"info\"}");  // its answer may be what was lost
          s.broken = true;
        }
        out.log += "step " + std::to_string(n) + ": produce " + value + (r ? " ok" : " failed") + "\n";
        break;
      }
      case 2: {  // end: a broken transaction is aborted
        const bool commit = !s.broken && pick(3) != 0;
        const std::string state = s.p.end(commit);
        out.log += "step " + std::to_string(n) + ": end " + txn + (commit ? " commit: " : " abort: ") + state + "\n";
        if (state.rfind("HTTP", 0) == 0) {
          // A commit's fate is unknown; a transaction never asked to commit can only end aborted.
          add("{\"op\":\"txn\",\"txn\":\"" + txn + "\",\"outcome\":\"" + (commit ? "info" : "abort") + "\"}");
          loss_percent = 0;
          REQUIRE(s.p.init() == 200);  // a new session aborts whatever was left open
        } else {
          add("{\"op\":\"txn\",\"txn\":\"" + txn + "\",\"outcome\":\"" + (commit ? "commit" : "abort") + "\"}");
        }
        s.broken = false;
        ++s.transactions;
        break;
      }
      case 3: {  // a coordinator restarts from its log
        const int i = 1 + static_cast<int>(pick(3));
        g.start(i);
        out.log += "step " + std::to_string(n) + ": restart b" + std::to_string(i) + "\n";
        break;
      }
      case 4: {  // time passes (a transaction older than 10 s is aborted by its coordinator)
        g.now += static_cast<txn::time_ms>(pick(12'000));
        g.tick();
        break;
      }
      default: {  // a partition moves, on a quiet network
        loss_percent = 0;
        const int p = static_cast<int>(pick(3));
        const int to = 1 + static_cast<int>((static_cast<std::size_t>(owner[p]) + pick(2)) % 3);
        if (g.c.move(owner[p], {"t", p}, to)) owner[p] = to;
        out.log += "step " + std::to_string(n) + ": move t-" + std::to_string(p) + " to b" + std::to_string(to) + "\n";
      }
    }
  }

  // Heal: the network whole, every open transaction timed out, every decision delivered.
  loss_percent = 0;
  for (int round = 0; round < 5; ++round) {
    g.now += 11'000;
    g.tick();
  }
  for (int p = 0; p < 3; ++p) {
    const topic_partition tp{"t", p};
    auto& b = g.c[owner[p]];
    auto view = b.producers.committed(tp, 0);
    REQUIRE(view);
    auto bytes = b.store.read(tp, 0, 64 << 20);
    REQUIRE(bytes);
    std::string records = "[";
    for (const auto& v : storage::decode_frames(bytes->bytes.view(), 0))
      if (view->visible(v))
        records += (records.size() > 1 ? "," : "") + std::string("{\"offset\":") + std::to_string(v.offset) +
                   ",\"value\":\"" + std::string(v.value) + "\"}";
    add("{\"op\":\"read\",\"topic\":\"t\",\"partition\":" + std::to_string(p) +
        ",\"isolation\":\"committed\",\"final\":true,\"records\":" + records + "]}");
    CHECK(view->open.empty());  // every transaction resolved
  }
  return out;
}

}  // namespace

TEST_CASE("in-process transactions: seeded runs with lost requests and answers, coordinator restarts, timeouts and "
          "moves leave nothing for the history checker (TXN_SIM_SEEDS, default 2000)",
          "[txn][integration][sim]") {
  const char* env = std::getenv("TXN_SIM_SEEDS");
  const int seeds = env ? std::atoi(env) : 2000;
  for (int seed = 1; seed <= seeds; ++seed) {
    auto run = simulate(static_cast<std::uint64_t>(seed));
    auto report = check::check_history(run.history);
    REQUIRE(report);
    if (std::getenv("TXN_SIM_SHOW")) std::printf("seed %d:\n%s%s\n", seed, run.log.c_str(), run.history.c_str());
    if (!report->anomalies.empty()) {
      INFO("seed " << seed << ":\n" << run.log);
      FAIL_CHECK(report->to_json());
    }
  }
}
