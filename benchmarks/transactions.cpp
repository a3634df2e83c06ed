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
// idempotent, target >= 0.5; idempotent against plain, target >= 0.9).
//
//   transactions [UNITS_PER_WAY]     default 300
#include <rapidjson/document.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
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

}  // namespace

int run(int units);

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return run(argc > 1 ? std::atoi(argv[1]) : 300);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "transactions: %s\n", e.what());
    return 1;
  }
}

int run(int units) {
  temp_dir dir;
  moonmqd_process b1("b1", dir.path()), b2("b2", dir.path()), b3("b3", dir.path());
  std::vector<moonmqd_process*> all{&b1, &b2, &b3};
  for (auto* b : all) b->configure(all);
  for (auto* b : all) b->start();
  auto c = b1.api();
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);
  must(c.Post("/v1/topics", R"({"name":"tx","partitions":3})", "application/json"), "create");
  move(c, 1, "b2");
  move(c, 2, "b3");

  auto idem = parse(c.Post("/v1/producers", "{}", "application/json")->body);
  const std::uint64_t idem_id = idem["producer_id"].GetUint64();
  struct txn_producer {
    std::string tid;
    std::uint64_t id;
    std::uint32_t epoch;
  };
  // Two transactional ids coordinated by b2 (not the broker the client talks to, so every coordinator call is
  // forwarded), one for each transactional way.
  std::vector<txn_producer> txn_producers;
  for (int n = 0; txn_producers.size() < 3; ++n) {
    const std::string tid = "bench-" + std::to_string(n);
    auto txp = parse(c.Post("/v1/producers", "{\"transactional_id\":\"" + tid + "\"}", "application/json")->body);
    if (std::string(parse(c.Get(("/v1/transactions/" + tid).c_str())->body)["coordinator"].GetString()) == "b2")
      txn_producers.push_back({tid, txp["producer_id"].GetUint64(), txp["producer_epoch"].GetUint()});
  }
  std::map<int, std::uint32_t> idem_seq;
  const std::string value(100, 'v');

  auto batch = [&](int n) {
    std::string records;
    for (int i = 0; i < n; ++i) records += (i ? "," : "") + std::string("{\"value\":\"") + value + "\"}";
    return records;
  };
  const std::vector<int> split{34, 33, 33};
  std::map<int, std::string> bodies;
  for (int p = 0; p < 3; ++p) bodies[p] = batch(split[static_cast<std::size_t>(p)]);

  way plain, idempotent, transaction, transaction_wait, transaction_declared;
  way* const ways[] = {&plain, &idempotent, &transaction, &transaction_wait, &transaction_declared};
  constexpr int way_count = 5;
  auto unit = [&](way& w, int kind) {
    auto t0 = std::chrono::steady_clock::now();
    if (kind == 4) {
      const auto& t = txn_producers[2];
      must(c.Post(("/v1/transactions/" + t.tid + "/partitions").c_str(),
                  "{\"producer_id\":" + std::to_string(t.id) + ",\"producer_epoch\":" + std::to_string(t.epoch) +
                      ",\"partitions\":[{\"topic\":\"tx\",\"partition\":0},{\"topic\":\"tx\",\"partition\":1},"
                      "{\"topic\":\"tx\",\"partition\":2}]}",
                  "application/json"),
           "a declaration of partitions");
    }
    for (int p = 0; p < 3; ++p) {
      std::string body = "{\"partition\":" + std::to_string(p) + ",\"records\":[" + bodies[p] + "]";
      if (kind == 1) {
        body += ",\"producer\":{\"id\":" + std::to_string(idem_id) + ",\"epoch\":0,\"sequence\":" +
                std::to_string(idem_seq[p]) + "}";
        idem_seq[p] += static_cast<std::uint32_t>(split[static_cast<std::size_t>(p)]);
      } else if (kind >= 2) {
        const auto& t = txn_producers[static_cast<std::size_t>(kind == 4 ? 2 : kind - 2)];
        body += ",\"producer\":{\"id\":" + std::to_string(t.id) + ",\"epoch\":" + std::to_string(t.epoch) +
                ",\"sequence\":0},\"transaction\":{\"transactional_id\":\"" + t.tid + "\"}";
      }
      must(c.Post("/v1/topics/tx/records", body + "}", "application/json"), "a produce");
    }
    w.produce_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    if (kind >= 2) {
      auto& t = txn_producers[static_cast<std::size_t>(kind == 4 ? 2 : kind - 2)];
      auto a = std::chrono::steady_clock::now();
      auto r = c.Post(("/v1/transactions/" + t.tid + "/commit").c_str(),
                      "{\"producer_id\":" + std::to_string(t.id) + ",\"producer_epoch\":" + std::to_string(t.epoch) +
                          (kind == 3 ? ",\"wait\":true}" : "}"),
                      "application/json");
      must(r, "a commit");
      w.commit_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
      t.epoch = parse(r->body)["producer_epoch"].GetUint();
    }
    w.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    w.records += 100;
  };
  for (int i = 0; i < 20; ++i)  // warm-up, not counted
    for (int k = 0; k < way_count; ++k) {
      way scratch;
      unit(scratch, k);
    }
  // The ways take turns unit by unit, so that each sees the same machine.
  for (int done = 0; done < units; ++done)
    for (int k = 0; k < way_count; ++k) unit(*ways[k], k);

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
  return 0;
}
