// transactions: what transactions and idempotence cost a producer, side by side in one run. Three moonmqd on
// loopback own one partition each; one client on b1 writes units of 100 records of 100 bytes spread over the three
// partitions (three produce requests, two of them forwarded) in four ways that take turns unit by unit:
//   plain        no producer stamp
//   idempotent   stamped with a producer id, epoch and sequences (deduplicated by each owner)
//   transaction  the same inside a transaction, then a commit that answers at its decision (the coordinator's
//                prepare record); the markers are delivered behind it, before the next transaction's first add
//   transaction_wait  the same with a commit that waits for its three markers ("wait": true)
//   transaction_declared  as transaction, with the three partitions declared first in one request
//                (POST /v1/transactions/{tid}/partitions, as a Kafka producer's AddPartitionsToTxn), so that no
//                produce waits for the coordinator
// It prints records/s per way, the commit latency p50/p99, and the ratios the issue names (transaction against
// idempotent, target >= 0.5; idempotent against plain, target >= 0.9). Then PRODUCERS clients write at once, each
// with its own connection and producers, the ways taking turns phase by phase (plain, idempotent, transaction,
// transaction_declared), and the same ratios are printed for them.
//
//   transactions [UNITS_PER_WAY] [PRODUCERS]     defaults 300 and 8
#include <rapidjson/document.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <map>
#include <stdexcept>
#include <thread>

#include "support/daemon_process.hpp"

using namespace moonmq::test;

namespace {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

/// Throws (so the daemons' destructors stop them) unless `r` answered `status`.
void must(const httplib::Result& r, const char* what, int status = 200) {
  if (!r || r->status != status)
    throw std::runtime_error(std::string(what) + " failed: " + (r ? r->body : std::string("no answer")));
}

rapidjson::Document parse(const std::string& s) {
  rapidjson::Document d;
  d.Parse(s.c_str(), s.size());
  return d;
}

void move(httplib::Client& c, int partition, const char* dest) {
  must(c.Post("/v1/reassignments",
              "{\"topic\":\"tx\",\"partition\":" + std::to_string(partition) + ",\"dest\":\"" + dest + "\"}",
              "application/json"),
       "a move", 202);
  for (int i = 0; i < 2000; ++i) {
    auto d = parse(c.Get("/v1/reassignments")->body);
    const auto& l = d["reassignments"];
    if (l[l.Size() - 1]["finished"].GetBool()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("a move did not finish");
}

struct way {
  double seconds = 0;
  std::size_t records = 0;
  std::vector<double> commit_us;
  std::vector<double> produce_us;  ///< per unit: its three produce requests
};

/// The way a unit is written.
enum class kind { plain, idempotent, transaction, transaction_wait, transaction_declared };

struct txn_producer {
  std::string tid;
  std::uint64_t id = 0;
  std::uint32_t epoch = 0;
};

/// One producing client: its connection to b1, its idempotent producer and its transactional producers.
struct producer {
  httplib::Client c;
  std::uint64_t idem_id = 0;
  std::map<int, std::uint32_t> idem_seq;
  std::vector<txn_producer> txn;  ///< one per transactional way
};

const std::vector<int> split{34, 33, 33};

std::string batch(int n) {
  const std::string value(100, 'v');
  std::string records;
  for (int i = 0; i < n; ++i) records += (i ? "," : "") + std::string("{\"value\":\"") + value + "\"}";
  return records;
}

/// Writes one unit (100 records over the three partitions) the way `k` says, timing it into `w`.
void unit(producer& pr, way& w, kind k) {
  static const std::string bodies[3] = {batch(split[0]), batch(split[1]), batch(split[2])};
  auto& c = pr.c;
  const bool transactional = k >= kind::transaction;
  txn_producer* t = transactional ? &pr.txn[static_cast<std::size_t>(k) - static_cast<std::size_t>(kind::transaction)]
                                  : nullptr;
  auto t0 = std::chrono::steady_clock::now();
  if (k == kind::transaction_declared)
    must(c.Post(("/v1/transactions/" + t->tid + "/partitions").c_str(),
                "{\"producer_id\":" + std::to_string(t->id) + ",\"producer_epoch\":" + std::to_string(t->epoch) +
                    ",\"partitions\":[{\"topic\":\"tx\",\"partition\":0},{\"topic\":\"tx\",\"partition\":1},"
                    "{\"topic\":\"tx\",\"partition\":2}]}",
                "application/json"),
         "a declaration of partitions");
  for (int p = 0; p < 3; ++p) {
    std::string body = "{\"partition\":" + std::to_string(p) + ",\"records\":[" + bodies[p] + "]";
    if (k == kind::idempotent) {
      body += ",\"producer\":{\"id\":" + std::to_string(pr.idem_id) + ",\"epoch\":0,\"sequence\":" +
              std::to_string(pr.idem_seq[p]) + "}";
      pr.idem_seq[p] += static_cast<std::uint32_t>(split[static_cast<std::size_t>(p)]);
    } else if (transactional) {
      body += ",\"producer\":{\"id\":" + std::to_string(t->id) + ",\"epoch\":" + std::to_string(t->epoch) +
              ",\"sequence\":0},\"transaction\":{\"transactional_id\":\"" + t->tid + "\"}";
    }
    must(c.Post("/v1/topics/tx/records", body + "}", "application/json"), "a produce");
  }
  w.produce_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  if (transactional) {
    auto a = std::chrono::steady_clock::now();
    auto r = c.Post(("/v1/transactions/" + t->tid + "/commit").c_str(),
                    "{\"producer_id\":" + std::to_string(t->id) + ",\"producer_epoch\":" + std::to_string(t->epoch) +
                        (k == kind::transaction_wait ? ",\"wait\":true}" : "}"),
                    "application/json");
    must(r, "a commit");
    w.commit_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
    t->epoch = parse(r->body)["producer_epoch"].GetUint();
  }
  w.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  w.records += 100;
}

}  // namespace

int run(int units, int producers);

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return run(argc > 1 ? std::atoi(argv[1]) : 300, argc > 2 ? std::atoi(argv[2]) : 8);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "transactions: %s\n", e.what());
    return 1;
  }
}

int run(int units, int producers) {
  temp_dir dir;
  moonmqd_process b1("b1", dir.path()), b2("b2", dir.path()), b3("b3", dir.path());
  std::vector<moonmqd_process*> all{&b1, &b2, &b3};
  for (auto* b : all) b->configure(all);
  for (auto* b : all) b->start();
  auto c = b1.api();
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);
  must(c.Post("/v1/topics", R"({"name":"tx","partitions":3,"placement":"local"})", "application/json"), "create");
  move(c, 1, "b2");
  move(c, 2, "b3");

  // A producer per client, with transactional ids coordinated by b2 (not the broker the clients talk to, so that
  // every coordinator call is forwarded: the harder case).
  int next_tid = 0;
  auto make_producer = [&](int txn_ways) {
    producer pr{b1.api(), 0, {}, {}};
    pr.c.set_keep_alive(true);
    pr.c.set_tcp_nodelay(true);
    pr.idem_id = parse(c.Post("/v1/producers", "{}", "application/json")->body)["producer_id"].GetUint64();
    while (static_cast<int>(pr.txn.size()) < txn_ways) {
      const std::string tid = "bench-" + std::to_string(next_tid++);
      auto txp = parse(c.Post("/v1/producers", "{\"transactional_id\":\"" + tid + "\"}", "application/json")->body);
      if (std::string(parse(c.Get(("/v1/transactions/" + tid).c_str())->body)["coordinator"].GetString()) == "b2")
        pr.txn.push_back({tid, txp["producer_id"].GetUint64(), txp["producer_epoch"].GetUint()});
    }
    return pr;
  };
  producer solo = make_producer(3);

  way plain, idempotent, transaction, transaction_wait, transaction_declared;
  way* const ways[] = {&plain, &idempotent, &transaction, &transaction_wait, &transaction_declared};
  constexpr int way_count = 5;
  for (int i = 0; i < 20; ++i)  // warm-up, not counted
    for (int k = 0; k < way_count; ++k) {
      way scratch;
      unit(solo, scratch, static_cast<kind>(k));
    }
  // The ways take turns unit by unit, so that each sees the same machine.
  for (int done = 0; done < units; ++done)
    for (int k = 0; k < way_count; ++k) unit(solo, *ways[k], static_cast<kind>(k));

  // Many producers at once, as a broker is loaded in production: PRODUCERS clients, each with its own connection
  // and producers, write units of the same shape. The ways take turns phase by phase; in a phase every client
  // writes `per_phase` units, and the way's rate is the records of all its phases over their wall time.
  constexpr int per_phase = 20;
  const int phases = std::max(2, units / std::max(1, producers * per_phase));
  std::vector<producer> crowd;
  for (int i = 0; i < producers; ++i) crowd.push_back(make_producer(3));
  const kind crowd_kinds[] = {kind::plain, kind::idempotent, kind::transaction, kind::transaction_declared};
  way crowd_ways[4];
  for (int phase = -1; phase < phases; ++phase)  // phase -1: warm-up, not counted
    for (int k = 0; k < 4; ++k) {
      std::vector<way> own(static_cast<std::size_t>(producers));
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<std::thread> threads;
      // A client's failure is carried out of its thread and thrown here, so that the daemons are still stopped.
      std::vector<std::exception_ptr> failed(static_cast<std::size_t>(producers));
      for (int i = 0; i < producers; ++i)
        threads.emplace_back([&, i] {
          try {
            for (int n = 0; n < per_phase; ++n)
              unit(crowd[static_cast<std::size_t>(i)], own[static_cast<std::size_t>(i)], crowd_kinds[k]);
          } catch (...) {
            failed[static_cast<std::size_t>(i)] = std::current_exception();
          }
        });
      for (auto& th : threads) th.join();
      for (const auto& e : failed)
        if (e) std::rethrow_exception(e);
      if (phase < 0) continue;
      auto& w = crowd_ways[k];
      w.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (const auto& o : own) {
        w.records += o.records;
        w.commit_us.insert(w.commit_us.end(), o.commit_us.begin(), o.commit_us.end());
      }
    }

  auto rate = [](const way& w) { return static_cast<double>(w.records) / w.seconds; };
  for (auto [name, w] : {std::pair{"plain", &plain}, std::pair{"idempotent", &idempotent},
                         std::pair{"transaction", &transaction}, std::pair{"transaction_wait", &transaction_wait},
                         std::pair{"transaction_declared", &transaction_declared}})
    std::printf("{\"bench\":\"transactions\",\"way\":\"%s\",\"units\":%d,\"records_per_s\":%.0f}\n", name, units,
                rate(*w));
  std::printf("{\"bench\":\"transactions\",\"commit_p50_us\":%.0f,\"commit_p99_us\":%.0f,"
              "\"commit_wait_p50_us\":%.0f,\"commit_wait_p99_us\":%.0f,"
              "\"commit_declared_p50_us\":%.0f,\"commit_declared_p99_us\":%.0f}\n",
              percentile(transaction.commit_us, 0.5), percentile(transaction.commit_us, 0.99),
              percentile(transaction_wait.commit_us, 0.5), percentile(transaction_wait.commit_us, 0.99),
              percentile(transaction_declared.commit_us, 0.5), percentile(transaction_declared.commit_us, 0.99));
  std::printf("{\"bench\":\"transactions\",\"unit_produce_p50_us\":{\"plain\":%.0f,\"idempotent\":%.0f,"
              "\"transaction\":%.0f,\"transaction_wait\":%.0f,\"transaction_declared\":%.0f}}\n",
              percentile(plain.produce_us, 0.5), percentile(idempotent.produce_us, 0.5),
              percentile(transaction.produce_us, 0.5), percentile(transaction_wait.produce_us, 0.5),
              percentile(transaction_declared.produce_us, 0.5));
  std::printf("{\"bench\":\"transactions\",\"transaction_vs_idempotent\":%.2f,"
              "\"transaction_wait_vs_idempotent\":%.2f,\"transaction_declared_vs_idempotent\":%.2f,"
              "\"idempotent_vs_plain\":%.2f}\n",
              rate(transaction) / rate(idempotent), rate(transaction_wait) / rate(idempotent),
              rate(transaction_declared) / rate(idempotent), rate(idempotent) / rate(plain));
  const char* crowd_names[] = {"plain", "idempotent", "transaction", "transaction_declared"};
  for (int k = 0; k < 4; ++k)
    std::printf("{\"bench\":\"transactions\",\"producers\":%d,\"way\":\"%s\",\"records\":%zu,\"records_per_s\":%.0f%s}\n",
                producers, crowd_names[k], crowd_ways[k].records, rate(crowd_ways[k]),
                k >= 2 ? (",\"commit_p50_us\":" + std::to_string(static_cast<int>(percentile(crowd_ways[k].commit_us, 0.5))) +
                          ",\"commit_p99_us\":" + std::to_string(static_cast<int>(percentile(crowd_ways[k].commit_us, 0.99))))
                             .c_str()
                       : "");
  std::printf("{\"bench\":\"transactions\",\"producers\":%d,\"transaction_vs_idempotent\":%.2f,"
              "\"transaction_declared_vs_idempotent\":%.2f,\"idempotent_vs_plain\":%.2f}\n",
              producers, rate(crowd_ways[2]) / rate(crowd_ways[1]), rate(crowd_ways[3]) / rate(crowd_ways[1]),
              rate(crowd_ways[1]) / rate(crowd_ways[0]));
  return 0;
}
