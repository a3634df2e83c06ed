// kafka_clients: an unmodified Kafka client (librdkafka) producing to and consuming from three moonmqd over their
// Kafka listeners, side by side in one run with the same client against librdkafka's own in-memory mock cluster
// (rd_kafka_mock_cluster_new, three brokers: the client's ceiling on this machine) and with the same bytes through
// moonmqd's HTTP API.
//
// Each way: RECORDS records of 1 KiB over three partitions (one per broker).
// - produce: a librdkafka producer with acks=all, idempotence and linger.ms=5, as fast as it takes them; records/s
//   from the first send to the last delivery report (after an untimed first record per partition, so that learning
//   the leaders is not timed); three runs of a third of the records against each cluster, in turns, and the
//   median of each;
// - consume: a librdkafka consumer in assign mode reads them back: from the mock, what it kept (only a partition's
//   last few MiB), and from moonmqd as many records twice: from each partition's last records, as the mock's (the
//   figure compared), and from the beginning, with the rest of the log behind them (a backlog: see
//   measure_consumers); records/s from the first record to the last, 24 reads of each, in every order in turn, and
//   the median of each;
// - latency: the producer again at half the peak rate it reached, for a third as many records; p50 and p99 from
//   send to delivery report.
// The HTTP way sends the same records as JSON, 64 per request, one connection per partition to its owner, and reads
// them back with GET, 1 MiB per request.
// Beside them, the rate at which this machine writes the same bytes to three new files with no broker at all: a
// ceiling for any broker that keeps its log in files (the mock keeps its own in memory). Before the clusters start,
// the page cache is given memory the machine has used before (use_page_cache_memory).
//
// Transactions: the producer idempotent, then with a transactional.id committing every 100 ms and every 10 ms,
// 5 x RECORDS records each, a 16 MiB queue, after an untimed first send; records/s and the ratio to the idempotent
// run, and each commit's latency (p50, p99).
//
//   kafka_clients [RECORDS]      (default 60000)
// For looking closer, the transactional producer takes KAFKA_CLIENTS_TXN_DEBUG (e.g. "eos,protocol"), the consumer
// KAFKA_CLIENTS_DEBUG (librdkafka's debug contexts, e.g. "fetch") and
// KAFKA_CLIENTS_PARTITION_FETCH_BYTES (max.partition.fetch.bytes) and the transactional producer's queue
// KAFKA_CLIENTS_TXN_QUEUE_KB (queue.buffering.max.kbytes, default 16384) from the environment; KAFKA_CLIENTS_STATS=1 has the
// producer print librdkafka's per-broker statistics every second (round trip, time queued, time in flight), and
// KAFKA_CLIENTS_PRODUCE_ONLY=1 runs only the producer's peak against the mock cluster and moonmqd (a profile's run);
// KAFKA_CLIENTS_READ_ALL=N, after the producer's peaks, reads every record back from moonmqd N times instead of the
// rest.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <rapidjson/document.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <functional>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "memory_policy.hpp"
#include "support/daemon_process.hpp"

using namespace moonmq::test;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr int partitions = 3;
constexpr std::size_t record_bytes = 1024;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

struct figures {
  double produce_per_s = 0;
  double consume_per_s = 0;  ///< moonmqd's: over each partition's last records, as many as the mock kept
  double consume_backlog_per_s = 0;  ///< moonmqd's from the beginning, the log's rest behind (measure_consumers)
  double p50_ms = 0, p99_ms = 0;
  double latency_rate = 0;  ///< records/s the latency run was paced at
  long failed = 0;
  long consumed = 0;  ///< records the consumer read (and was timed over)
};

void must(rd_kafka_conf_res_t r, const char* what, const char* error) {
  if (r != RD_KAFKA_CONF_OK) {
    std::fprintf(stderr, "kafka_clients: %s: %s\n", what, error);
    std::exit(1);
  }
}

rd_kafka_conf_t* settings(const std::string& bootstrap, const std::map<std::string, std::string>& extra) {
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  must(rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), error, sizeof error), "bootstrap", error);
  for (const auto& [k, v] : extra) must(rd_kafka_conf_set(conf, k.c_str(), v.c_str(), error, sizeof error), k.c_str(), error);
  return conf;
}

/// What the delivery callback sees: the send time of each record (its opaque is its index).
struct delivery_state {
  std::vector<clock_type::time_point> sent;
  std::vector<double> latency_ms;
  std::atomic<long> delivered{0}, failed{0};
};

void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* state = static_cast<delivery_state*>(opaque);
  if (m->err) {
    if (state->failed++ < 3) std::fprintf(stderr, "kafka_clients: delivery failed: %s\n", rd_kafka_err2str(m->err));
    return;
  }
  const auto i = reinterpret_cast<std::uintptr_t>(m->_private);
  if (!state->latency_ms.empty())
    state->latency_ms[i] = std::chrono::duration<double, std::milli>(clock_type::now() - state->sent[i]).count();
  ++state->delivered;
}

/// Sends `count` records (paced to `rate` records/s when not 0); returns the records/s it reached.
double produce(const std::string& bootstrap, const std::string& topic, long count, double rate, delivery_state& state) {
  char error[512];
  rd_kafka_conf_t* conf = settings(bootstrap, {{"acks", "all"},
                                               {"enable.idempotence", "true"},
                                               {"linger.ms", "5"},
                                               {"message.timeout.ms", "120000"},
                                               {"queue.buffering.max.kbytes", "262144"}});
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  if (std::getenv("KAFKA_CLIENTS_STATS")) {
    // librdkafka's own view of each broker: round trip, time queued before sending, time in flight.
    char error[512];
    rd_kafka_conf_set(conf, "statistics.interval.ms", "1000", error, sizeof error);
    rd_kafka_conf_set_stats_cb(conf, [](rd_kafka_t*, char* json, std::size_t, void*) {
      rapidjson::Document d;
      d.Parse(json);
      if (d.HasParseError() || !d.HasMember("brokers")) return 0;
      for (const auto& b : d["brokers"].GetObject()) {
        const auto& v = b.value;
        if (!v.HasMember("rtt") || v["nodeid"].GetInt() < 0 || v["rtt"]["cnt"].GetInt() == 0) continue;
        std::fprintf(stderr, "kafka_clients: %s rtt avg %.2f ms p99 %.2f ms, queued avg %.2f ms, outbuf avg %.2f ms, "
                     "produce requests %ld\n", b.name.GetString(), v["rtt"]["avg"].GetDouble() / 1000,
                     v["rtt"]["p99"].GetDouble() / 1000, v["int_latency"]["avg"].GetDouble() / 1000,
                     v["outbuf_latency"]["avg"].GetDouble() / 1000, static_cast<long>(v["tx"].GetInt64()));
      }
      return 0;
    });
  }
  rd_kafka_conf_set_opaque(conf, &state);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
  if (!rk) {
    std::fprintf(stderr, "kafka_clients: producer: %s\n", error);
    std::exit(1);
  }
  const std::string value(record_bytes, 'v');
  // Untimed: one record per partition, delivered, so that the timed run does not count the producer learning the
  // topic's leaders (a metadata round trip and a connection per broker), on either cluster.
  for (int p = 0; p < partitions; ++p)
    if (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(p),
                          RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      std::fprintf(stderr, "kafka_clients: the first send failed\n");
      std::exit(1);
    }
  rd_kafka_flush(rk, 60'000);
  state.delivered = 0;
  state.sent.assign(static_cast<std::size_t>(count), {});
  if (rate > 0) state.latency_ms.assign(static_cast<std::size_t>(count), -1);
  const auto start = clock_type::now();
  for (long i = 0; i < count; ++i) {
    if (rate > 0) {
      const auto due = start + std::chrono::duration_cast<clock_type::duration>(
                                   std::chrono::duration<double>(static_cast<double>(i) / rate));
      while (clock_type::now() < due) rd_kafka_poll(rk, 0);
    }
    const std::string key = "k" + std::to_string(i);
    state.sent[static_cast<std::size_t>(i)] = clock_type::now();
    for (;;) {
      const rd_kafka_resp_err_t err = rd_kafka_producev(
          rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(static_cast<std::int32_t>(i % partitions)),
          RD_KAFKA_V_KEY(key.data(), key.size()), RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(i)), RD_KAFKA_V_END);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
      if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        std::fprintf(stderr, "kafka_clients: produce: %s\n", rd_kafka_err2str(err));
        std::exit(1);
      }
      rd_kafka_poll(rk, 10);
    }
    rd_kafka_poll(rk, 0);
  }
  rd_kafka_flush(rk, 120'000);
  const double elapsed = seconds_since(start);
  rd_kafka_destroy(rk);
  return static_cast<double>(state.delivered.load()) / elapsed;
}

/// Reads every partition from the beginning until `count` records came (`count` < 0: as many as the watermarks say,
/// for the mock cluster, whose offsets count records and which keeps only the last few MiB of a partition); records/s
/// from the first record to the last, and the records read. `tail_bytes` > 0: each partition from that many bytes
/// before its end instead (moonmqd's offsets are byte positions; a fetch inside a record starts at the next one).
/// Every partition is assigned at an offset taken from its watermarks before the consumer starts, so that no
/// partition's first fetch waits for an offset query while another's records are already timed.
std::pair<double, long> consume(const std::string& bootstrap, const std::string& topic, long count,
                                std::int64_t tail_bytes = 0) {
  char error[512];
  std::map<std::string, std::string> extra{
      {"group.id", "kafka-clients-bench"}, {"enable.auto.commit", "false"}, {"fetch.max.bytes", "52428800"}};
  if (const char* debug = std::getenv("KAFKA_CLIENTS_DEBUG")) extra["debug"] = debug;
  if (const char* bytes = std::getenv("KAFKA_CLIENTS_PARTITION_FETCH_BYTES")) extra["max.partition.fetch.bytes"] = bytes;
  rd_kafka_conf_t* conf = settings(bootstrap, extra);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, error, sizeof error);
  if (!rk) {
    std::fprintf(stderr, "kafka_clients: consumer: %s\n", error);
    std::exit(1);
  }
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(partitions);
  long available = 0;
  for (int p = 0; p < partitions; ++p) {
    std::int64_t low = 0, high = 0;
    if (const auto e = rd_kafka_query_watermark_offsets(rk, topic.c_str(), p, &low, &high, 10'000)) {
      std::fprintf(stderr, "kafka_clients: watermarks of partition %d: %s\n", p, rd_kafka_err2str(e));
      std::exit(1);
    }
    available += static_cast<long>(high - low);
    rd_kafka_topic_partition_list_add(parts, topic.c_str(), p)->offset =
        tail_bytes > 0 ? std::max(low, high - tail_bytes) : low;
  }
  rd_kafka_assign(rk, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  if (count < 0) count = available;
  long seen = 0, errors = 0;
  auto start = clock_type::now();
  auto last_progress = start;
  while (seen < count && seconds_since(last_progress) < 30) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (!m) continue;
    if (!m->err) {
      if (seen++ == 0) start = clock_type::now();
      last_progress = clock_type::now();
    } else if (errors++ < 3) {
      std::fprintf(stderr, "kafka_clients: consume: %s\n", rd_kafka_message_errstr(m));
    }
    rd_kafka_message_destroy(m);
  }
  const double elapsed = seconds_since(start);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  if (seen < count) std::fprintf(stderr, "kafka_clients: read %ld of %ld records back\n", seen, count);
  return {static_cast<double>(seen) / elapsed, seen};
}

constexpr int consume_runs = 24;  ///< four times each of the six orders of the three reads

constexpr int produce_runs = 3;

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/// The producer's peak against the mock cluster and moonmqd, in turns whose order alternates (mock, moonmqd, moonmqd,
/// mock, ...), `produce_runs` times each with a third of the records (`topic`, new, with three partitions, must exist
/// on both): the median of each. One run's rate differs from the next by up to a third on two cores, the mock
/// cluster's by up to half; in turns, a slow spell of the machine weighs on both, and alternating the order favours
/// neither. Each cluster takes `records` records in the timed runs, as the consumer and the disk saw before the runs
/// were split, and a tenth more in its warm-up run.
void measure_peaks(const std::string& mock, const std::string& moon, const std::string& topic, long records,
                   figures& mocked, figures& moonf) {
  std::vector<double> mock_rates, moon_rates, mock_cpu, moon_cpu;
  // First an untimed run against each, a tenth of the records: a new process's first run was the slowest, at about
  // half the rate of the later ones (its allocator and the kernel's caches warming).
  for (const std::string* bootstrap : {&mock, &moon}) {
    delivery_state warm_up;
    produce(*bootstrap, topic, records / 10, 0, warm_up);
  }
  for (int i = 0; i < produce_runs; ++i) {
    const auto mock_run = std::tuple{&mock, &mock_rates, &mock_cpu, &mocked};
    const auto moon_run = std::tuple{&moon, &moon_rates, &moon_cpu, &moonf};
    const auto order = i % 2 == 0 ? std::array{mock_run, moon_run} : std::array{moon_run, mock_run};
    for (auto [bootstrap, rates, cpu, f] : order) {
      delivery_state peak;
      const double before = process_cpu_seconds();
      rates->push_back(produce(*bootstrap, topic, records / produce_runs, 0, peak));
      cpu->push_back(process_cpu_seconds() - before);
      f->failed += peak.failed;
    }
  }
  mocked.produce_per_s = percentile(mock_rates, 0.50);
  moonf.produce_per_s = percentile(moon_rates, 0.50);
  // This process's CPU time per run: the client's, and against the mock cluster the mock's too (it runs in here).
  auto show = [](const char* name, const std::vector<double>& rates, const std::vector<double>& cpu) {
    std::printf(" %s", name);
    for (std::size_t i = 0; i < rates.size(); ++i) std::printf(" %.0f (%.2f s)", rates[i], cpu[i]);
  };
  std::printf("kafka_clients: produce peaks, records/s (this process's CPU time):");
  show("mock cluster", mock_rates, mock_cpu);
  show("; moonmqd", moon_rates, moon_cpu);
  std::printf("\n");
}

/// After the peaks, the consumer against the mock cluster and moonmqd in turns whose order alternates, as the peaks do,
/// `consume_runs` reads each by a new consumer: the median of each. The mock keeps about 5 MiB a partition, so a read
/// takes tens of milliseconds and its rate swings with whatever else the two cores do; in turns, a slow spell of the
/// machine (the kernel writing back what moonmqd's producers wrote, say) weighs on both. The mock's consumer reads
/// what it kept, and moonmqd's as many records two ways, so that all are timed over as many records:
/// - from each partition's last records, as the mock's consumer reads (the last timed run's, in batches as full as
///   the mock's): the figure compared with the mock's;
/// - from the beginning of each partition, with the rest of the log behind them. This consumer does more work in the
///   same time: while the timed records are polled, librdkafka goes on fetching what follows them, up to
///   queued.max.messages.kbytes (64 MiB a partition), and parses it on the same two cores; the mock has nothing past
///   what is timed, and the read of the last records a quarter more. Started as far from the end as six times that
///   quarter, the read of the last records ran as slowly as this one (docs/performance.md).
void measure_consumers(const std::string& mock, const std::string& moon, const std::string& topic, figures& mocked,
                       figures& moonf) {
  std::vector<double> mock_rates, backlog_rates, tail_rates;
  // An untimed read from each first, as for the producer: the first read was the slowest, by up to four times.
  const long kept = consume(mock, topic, -1).second;
  consume(moon, topic, kept);
  // A quarter more than each partition's share of what the mock kept, in moonmqd's frames (a record's frame is about
  // 60 bytes more than its value): at least as many records as the mock's consumer reads.
  const auto tail_bytes =
      static_cast<std::int64_t>(kept / partitions * 5 / 4) * static_cast<std::int64_t>(record_bytes + 64);
  auto read_mock = [&] {
    double per_s = 0;
    std::tie(per_s, mocked.consumed) = consume(mock, topic, -1);
    mock_rates.push_back(per_s);
  };
  auto read_backlog = [&] { backlog_rates.push_back(consume(moon, topic, kept).first); };
  auto read_tail = [&] {
    double per_s = 0;
    std::tie(per_s, moonf.consumed) = consume(moon, topic, kept, tail_bytes);
    tail_rates.push_back(per_s);
  };
  // Every order of the three in turn, so that each stands first, second and last equally often: which read came just
  // before changed a read's rate by up to a third.
  std::array<std::function<void()>, 3> reads{read_mock, read_backlog, read_tail};
  std::array<int, 3> order{0, 1, 2};
  for (int i = 0; i < consume_runs; ++i) {
    for (int k : order) reads[static_cast<std::size_t>(k)]();
    std::next_permutation(order.begin(), order.end());
  }
  mocked.consume_per_s = percentile(mock_rates, 0.50);
  moonf.consume_per_s = percentile(tail_rates, 0.50);
  moonf.consume_backlog_per_s = percentile(backlog_rates, 0.50);
  std::printf("kafka_clients: consumer reads, records/s: mock cluster");
  for (double r : mock_rates) std::printf(" %.0f", r);
  std::printf("; moonmqd, the last records");
  for (double r : tail_rates) std::printf(" %.0f", r);
  std::printf("; moonmqd from the beginning");
  for (double r : backlog_rates) std::printf(" %.0f", r);
  std::printf("\n");
}

/// Last, against one bootstrap: the producer at half its peak for a third as many records; p50 and p99.
void measure_latency(const std::string& bootstrap, const std::string& topic, long records, figures& f) {
  delivery_state paced;
  f.latency_rate = f.produce_per_s / 2;
  produce(bootstrap, topic, records / 3, f.latency_rate, paced);
  f.failed += paced.failed;
  std::vector<double> ms;
  for (double v : paced.latency_ms)
    if (v >= 0) ms.push_back(v);
  f.p50_ms = percentile(ms, 0.50);
  f.p99_ms = percentile(ms, 0.99);
}

/// The same records through the HTTP API: 64 per request, one connection per partition to its owner.
figures measure_http(const std::vector<moonmqd_process*>& brokers, const std::string& topic,
                     const std::vector<std::string>& owners, long records) {
  figures f;
  std::map<std::string, moonmqd_process*> by_id;
  for (auto* b : brokers) by_id[b->id] = b;
  const std::string value(record_bytes, 'v');
  std::atomic<long> failed{0};
  const auto start = clock_type::now();
  std::vector<std::thread> writers;
  for (int p = 0; p < partitions; ++p)
    writers.emplace_back([&, p] {
      auto c = by_id.at(owners[static_cast<std::size_t>(p)])->api();
      c.set_keep_alive(true);
      std::string body;
      for (long i = p; i < records;) {
        body = "{\"partition\":" + std::to_string(p) + ",\"records\":[";
        for (int n = 0; n < 64 && i < records; ++n, i += partitions)
          body += (n ? ",{\"key\":\"k" : "{\"key\":\"k") + std::to_string(i) + "\",\"value\":\"" + value + "\"}";
        body += "]}";
        auto r = c.Post("/v1/topics/" + topic + "/records", body, "application/json");
        if (!r || r->status != 200) ++failed;
      }
    });
  for (auto& t : writers) t.join();
  f.produce_per_s = static_cast<double>(records) / seconds_since(start);
  f.failed = failed;
  std::atomic<long> seen{0};
  const auto read_start = clock_type::now();
  std::vector<std::thread> readers;
  for (int p = 0; p < partitions; ++p)
    readers.emplace_back([&, p] {
      auto c = by_id.at(owners[static_cast<std::size_t>(p)])->api();
      c.set_keep_alive(true);
      std::uint64_t offset = 0;
      for (;;) {
        auto r = c.Get("/v1/topics/" + topic + "/partitions/" + std::to_string(p) +
                       "/records?max_bytes=1048576&offset=" + std::to_string(offset));
        if (!r || r->status != 200) break;
        rapidjson::Document d;
        d.Parse(r->body.c_str());
        if (d.HasParseError() || !d.HasMember("records") || d["records"].Empty()) break;
        seen += static_cast<long>(d["records"].Size());
        offset = d["next_offset"].GetUint64();
      }
    });
  for (auto& t : readers) t.join();
  f.consume_per_s = static_cast<double>(seen) / seconds_since(read_start);
  if (seen != records) std::fprintf(stderr, "kafka_clients: HTTP read %ld of %ld records back\n", seen.load(), records);
  return f;
}

/// A transactional producer: `count` records as fast as it takes them, committing whenever `interval_ms` has passed
/// since its transaction began (0: the same producer idempotent, without a transactional id, flushing at the end);
/// the records/s from the first send to the last commit, and each commit's latency in `commit_ms`. nullopt: a call
/// failed. Its queue holds 16 MiB, so that a transaction's records are those sent in its interval, not queued
/// ahead of the broker.
std::optional<double> produce_transactional(const std::string& bootstrap, const std::string& topic, long count,
                                            int interval_ms, const std::string& txn_id,
                                            std::vector<double>& commit_ms) {
  char error[512];
  std::map<std::string, std::string> extra{{"acks", "all"},
                                           {"enable.idempotence", "true"},
                                           {"linger.ms", "5"},
                                           {"message.timeout.ms", "60000"},  // at most transaction.timeout.ms
                                           {"queue.buffering.max.kbytes", std::getenv("KAFKA_CLIENTS_TXN_QUEUE_KB")
                                                                              ? std::getenv("KAFKA_CLIENTS_TXN_QUEUE_KB")
                                                                              : "16384"}};
  if (interval_ms > 0) extra["transactional.id"] = txn_id;
  rd_kafka_conf_t* conf = settings(bootstrap, extra);
  delivery_state state;
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  rd_kafka_conf_set_opaque(conf, &state);
  if (const char* debug = std::getenv("KAFKA_CLIENTS_TXN_DEBUG"))
    must(rd_kafka_conf_set(conf, "debug", debug, error, sizeof error), "debug", error);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
  if (!rk) {
    std::fprintf(stderr, "kafka_clients: transactional producer: %s\n", error);
    std::exit(1);
  }
  auto ok = [&](rd_kafka_error_t* e, const char* what) {
    if (!e) return true;
    std::fprintf(stderr, "kafka_clients: %s: %s\n", what, rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
    return false;
  };
  std::optional<double> out;
  const std::string value(record_bytes, 'v');
  // A first transaction of one record per partition, untimed: the client learns the topic's leaders and registers
  // with the coordinator (a second, on the idempotent producer's side, that its first send pays too).
  const bool txn = interval_ms > 0;
  bool warm = !txn || (ok(rd_kafka_init_transactions(rk, 30'000), "init_transactions") &&
                       ok(rd_kafka_begin_transaction(rk), "begin_transaction"));
  for (int p = 0; warm && p < partitions; ++p)
    warm = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(p),
                             RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                             RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR_NO_ERROR;
  warm = warm && (txn ? ok(rd_kafka_commit_transaction(rk, 60'000), "commit_transaction (warm-up)")
                      : rd_kafka_flush(rk, 60'000) == RD_KAFKA_RESP_ERR_NO_ERROR);
  state.delivered = 0;
  if (warm) {
    const auto start = clock_type::now();
    bool failed = false;
    long i = 0;
    while (i < count && !failed) {
      if (txn && !ok(rd_kafka_begin_transaction(rk), "begin_transaction")) break;
      const auto began = clock_type::now();
      while (i < count && (!txn || seconds_since(began) * 1000 < interval_ms)) {
        const std::string key = "k" + std::to_string(i);
        const rd_kafka_resp_err_t err = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(static_cast<std::int32_t>(i % partitions)),
            RD_KAFKA_V_KEY(key.data(), key.size()), RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
          rd_kafka_poll(rk, 10);
          continue;
        }
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
          std::fprintf(stderr, "kafka_clients: transactional produce: %s\n", rd_kafka_err2str(err));
          failed = true;
          break;
        }
        ++i;
        rd_kafka_poll(rk, 0);
      }
      if (!txn) {
        failed = failed || rd_kafka_flush(rk, 120'000) != RD_KAFKA_RESP_ERR_NO_ERROR;
        break;
      }
      const auto committing = clock_type::now();
      if (!failed && !ok(rd_kafka_commit_transaction(rk, 60'000), "commit_transaction")) failed = true;
      commit_ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - committing).count());
    }
    if (!failed && i == count) out = static_cast<double>(state.delivered.load()) / seconds_since(start);
  }
  rd_kafka_destroy(rk);
  return out;
}

void print_row(const char* way, const figures& f) {
  std::printf("%-28s %12.0f %12.0f %14.0f %9.2f %9.2f %7ld\n", way, f.produce_per_s, f.consume_per_s, f.latency_rate,
              f.p50_ms, f.p99_ms, f.failed);
}

/// The rate at which this machine takes a broker's log writes into the kernel's page cache: three threads (as three
/// brokers) each write their third of `records` records to a new file under `dir` in 1 MiB writes, no fsync; in
/// records/s. On a virtual machine whose memory the host hands out on first touch, new page-cache pages cost far more
/// than the copy itself, and no broker that keeps its log in files can produce faster than this. The files stay until
/// `dir` goes, so that no later way writes into the pages they free.
double page_cache_records_per_s(const std::string& dir, long records) {
  const std::size_t each = static_cast<std::size_t>(records) * record_bytes / 3;
  const std::string chunk(1 << 20, 'x');
  std::vector<std::thread> writers;
  std::atomic<bool> failed{false};
  const auto start = clock_type::now();
  for (int w = 0; w < 3; ++w)
    writers.emplace_back([&, w] {
      const std::string path = dir + "/page-cache-probe-" + std::to_string(w);
      std::FILE* f = std::fopen(path.c_str(), "wb");
      if (!f) {
        failed = true;
        return;
      }
      std::setvbuf(f, nullptr, _IONBF, 0);
      for (std::size_t done = 0; done < each; done += chunk.size())
        if (std::fwrite(chunk.data(), 1, std::min(chunk.size(), each - done), f) == 0) failed = true;
      std::fclose(f);
    });
  for (auto& t : writers) t.join();
  const double s = seconds_since(start);
  return failed ? 0 : static_cast<double>(records) / s;
}

/// Writes `bytes` to a new file in `dir` and removes it: the page cache then takes memory this machine has used
/// before. On this virtual machine the first write to memory not used since it booted ran at about a fifth of the
/// rate of a write to memory used before (1,340 MB/s against 7,000 MB/s, 2 GB through write()), a cost the mock
/// cluster, which keeps a few MiB it reuses, never pays, and a broker that has run a while no longer does.
bool use_page_cache_memory(const std::string& dir, std::size_t bytes) {
  const std::string path = dir + "/page-cache-warm-up";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  std::setvbuf(f, nullptr, _IONBF, 0);
  const std::string chunk(1 << 20, 'w');
  bool ok = true;
  for (std::size_t done = 0; done < bytes && ok; done += chunk.size()) {
    const std::size_t n = std::min(chunk.size(), bytes - done);
    ok = std::fwrite(chunk.data(), 1, n, f) == n;
  }
  std::fclose(f);
  return std::remove(path.c_str()) == 0 && ok;
}

/// A topic with a partition on each broker, made through b1's HTTP API; its owners by partition (empty: failed).
std::vector<std::string> make_topic(moonmqd_process& b1, const std::string& name) {
  auto made = b1.api().Post("/v1/topics", "{\"name\":\"" + name + "\",\"partitions\":3}", "application/json");
  rapidjson::Document d;
  if (made) d.Parse(made->body.c_str());
  std::vector<std::string> owners;
  if (!made || made->status >= 300 || d.HasParseError() || !d.HasMember("owners") || !d["owners"].IsArray()) {
    std::fprintf(stderr, "kafka_clients: creating %s failed: %s\n", name.c_str(), made ? made->body.c_str() : "no answer");
    return owners;
  }
  for (const auto& o : d["owners"].GetArray()) owners.emplace_back(o.GetString());
  return owners;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  const long records = argc > 1 ? std::atol(argv[1]) : 60000;
  // This process (the client, and the mock cluster) keeps freed memory as moonmqd does: with glibc's defaults the
  // in-process mock cluster paid page faults for its buffers that moonmqd no longer pays (docs/performance.md).
  moonmq::daemon::keep_freed_memory();

  // librdkafka's mock cluster: three brokers in this process.
  char error[512];
  rd_kafka_conf_t* quiet = rd_kafka_conf_new();
  rd_kafka_conf_set(quiet, "log_level", "3", error, sizeof error);  // no warning that it has no bootstrap servers
  rd_kafka_t* host = rd_kafka_new(RD_KAFKA_PRODUCER, quiet, error, sizeof error);
  rd_kafka_mock_cluster_t* mock = rd_kafka_mock_cluster_new(host, 3);
  rd_kafka_mock_topic_create(mock, "bench", partitions, 1);
  // One partition per broker, as on moonmqd. The mock places each partition's leader on a broker drawn at random, and
  // two or three partitions on one broker let the client send them in one request on one connection: a lighter load
  // for the client than one connection per partition (its broker threads each poll while their requests are out).
  for (int p = 0; p < partitions; ++p)
    if (rd_kafka_mock_partition_set_leader(mock, "bench", p, p + 1) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      std::fprintf(stderr, "kafka_clients: cannot place the mock's partition %d\n", p);
      return 1;
    }
  // Three moonmqd, a partition on each, beside the mock cluster; the Kafka listener, then the HTTP API on a topic of
  // its own.
  temp_dir dir;
  // What the files take up to the HTTP run, and a fifth more: moonmqd's logs for the peaks and the paced run (1.43
  // times the records, each frame about 1.1 KiB), the page-cache probe's files (the records' bytes) and the HTTP
  // topic's log (the records again). The transactions part writes more, on both sides of its ratio alike.
  if (!use_page_cache_memory(dir.path(), static_cast<std::size_t>(records) * (record_bytes + 100) * 4)) {
    std::fprintf(stderr, "kafka_clients: cannot write to %s\n", dir.path().c_str());
    return 1;
  }
  moonmqd_process b1{"b1", dir.path()}, b2{"b2", dir.path()}, b3{"b3", dir.path()};
  std::vector<moonmqd_process*> all{&b1, &b2, &b3};
  for (auto* b : all) b->kafka_port = free_port();
  for (auto* b : all) b->configure(all);
  for (auto* b : all) b->start();
  if (make_topic(b1, "bench").size() != partitions) return 1;
  const std::string mock_bootstrap = rd_kafka_mock_cluster_bootstraps(mock);
  const std::string moon_bootstrap = "127.0.0.1:" + std::to_string(b1.kafka_port);
  figures mocked, moon;
  measure_peaks(mock_bootstrap, moon_bootstrap, "bench", records, mocked, moon);
  if (std::getenv("KAFKA_CLIENTS_PRODUCE_ONLY")) {
    std::printf("kafka_clients: produce only, %ld records in %d runs: mock cluster %.0f/s, moonmqd %.0f/s "
                "(medians), ratio %.2f\n", records, produce_runs, mocked.produce_per_s, moon.produce_per_s,
                moon.produce_per_s / mocked.produce_per_s);
    rd_kafka_mock_cluster_destroy(mock);
    rd_kafka_destroy(host);
    return moon.failed || mocked.failed ? 1 : 0;
  }
  if (const char* reads = std::getenv("KAFKA_CLIENTS_READ_ALL")) {
    // A profile's run of moonmqd's fetch: every record read back from moonmqd, READS times.
    for (int i = 0, n = std::atoi(reads); i < n; ++i) {
      // What the peaks sent (each run also sends an untimed first record per partition, not counted here).
      const long sent = records / 10 + produce_runs * (records / produce_runs);
      const auto [per_s, seen] = consume(moon_bootstrap, "bench", sent);
      std::printf("kafka_clients: read all: %ld records at %.0f/s\n", seen, per_s);
    }
    rd_kafka_mock_cluster_destroy(mock);
    rd_kafka_destroy(host);
    return 0;
  }
  measure_consumers(mock_bootstrap, moon_bootstrap, "bench", mocked, moon);
  measure_latency(mock_bootstrap, "bench", records, mocked);
  rd_kafka_mock_cluster_destroy(mock);
  rd_kafka_destroy(host);
  measure_latency(moon_bootstrap, "bench", records, moon);
  const double page_cache = page_cache_records_per_s(dir.path(), records);
  const auto http_owners = make_topic(b1, "bench-http");
  if (http_owners.size() != partitions) return 1;
  const figures http = measure_http(all, "bench-http", http_owners, records);

  std::printf("kafka_clients: %ld records of %zu B over %d partitions on 3 brokers; librdkafka %s\n", records,
              record_bytes, partitions, rd_kafka_version_str());
  std::printf("%-28s %12s %12s %14s %9s %9s %7s\n", "way", "produce/s", "consume/s", "latency at/s", "p50 ms",
              "p99 ms", "failed");
  print_row("librdkafka -> mock cluster", mocked);
  print_row("librdkafka -> moonmqd", moon);
  print_row("HTTP API -> moonmqd", http);
  std::printf("%-28s %12.0f   (the same bytes written to three new files, no broker: this machine's ceiling for "
              "any broker that writes its log to files)\n", "page cache, 3 writers", page_cache);
  std::printf("(each Kafka consumer timed over %ld records, what the mock cluster kept, the median of %d reads; the "
              "HTTP reader over all %ld)\n", mocked.consumed, consume_runs, records);
  std::printf("librdkafka -> moonmqd, from the beginning with the rest of the log behind: consume/s %.0f, %.2f of the "
              "mock's (moonmqd's consume/s above: each partition's last records, as the mock's)\n",
              moon.consume_backlog_per_s, moon.consume_backlog_per_s / mocked.consume_per_s);
  std::printf("{\"bench\":\"kafka_clients\",\"records\":%ld,\"produce_ratio\":%.2f,\"consume_ratio\":%.2f,"
              "\"consume_backlog_ratio\":%.2f,\"p99_ms\":%.2f,\"mock_p99_ms\":%.2f,\"http_produce_ratio\":%.2f,"
              "\"page_cache_per_s\":%.0f,\"produce_to_page_cache\":%.2f}\n",
              records, moon.produce_per_s / mocked.produce_per_s, moon.consume_per_s / mocked.consume_per_s,
              moon.consume_backlog_per_s / mocked.consume_per_s, moon.p99_ms, mocked.p99_ms,
              http.produce_per_s / moon.produce_per_s, page_cache,
              page_cache > 0 ? moon.produce_per_s / page_cache : 0.0);

  // Transactions (issue 31): the same producer idempotent, then transactional committing every 100 ms and every
  // 10 ms, each on a topic of its own, in this run.
  const long txn_records = records * 5;
  bool txn_failed = false;
  if (make_topic(b1, "bench-idem").size() != partitions) return 1;
  std::vector<double> no_commits;
  const auto idem = produce_transactional("127.0.0.1:" + std::to_string(b1.kafka_port), "bench-idem", txn_records, 0,
                                          "", no_commits);
  if (!idem) return 1;
  const double idem_per_s = *idem;
  std::printf("\n%-34s %12s %8s %12s %12s\n", "transactions (librdkafka -> moonmqd)", "records/s", "ratio",
              "commit p50", "commit p99");
  std::printf("%-34s %12.0f %8s %12s %12s\n", "idempotent, no transactions", idem_per_s, "1.00", "-", "-");
  double ratio_100 = 0, p50_100 = 0, p99_100 = 0;
  for (int interval : {100, 10}) {
    const std::string topic = "bench-txn-" + std::to_string(interval);
    if (make_topic(b1, topic).size() != partitions) return 1;
    std::vector<double> commit_ms;
    auto per_s = produce_transactional("127.0.0.1:" + std::to_string(b1.kafka_port), topic, txn_records, interval,
                                       "bench-" + std::to_string(interval), commit_ms);
    if (!per_s) {
      txn_failed = true;
      continue;
    }
    const std::string way = "transactional, commit every " + std::to_string(interval) + " ms";
    std::printf("%-34s %12.0f %8.2f %9.2f ms %9.2f ms\n", way.c_str(), *per_s, *per_s / idem_per_s,
                percentile(commit_ms, 0.50), percentile(commit_ms, 0.99));
    if (interval == 100) {
      ratio_100 = *per_s / idem_per_s;
      p50_100 = percentile(commit_ms, 0.50);
      p99_100 = percentile(commit_ms, 0.99);
    }
  }
  std::printf("{\"bench\":\"kafka_clients_transactions\",\"records\":%ld,\"ratio_at_100ms\":%.2f,"
              "\"commit_p50_ms\":%.2f,\"commit_p99_ms\":%.2f}\n",
              txn_records, ratio_100, p50_100, p99_100);
  return moon.failed || mocked.failed || http.failed || txn_failed ? 1 : 0;
}
