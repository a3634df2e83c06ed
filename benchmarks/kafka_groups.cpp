// kafka_groups: how fast a consumer group of unmodified Kafka clients (librdkafka) holds every partition again after
// a member leaves, against three moonmqd and, side by side in one run, against librdkafka's own mock cluster (three
// brokers in this process, Kafka's classic group protocol).
//
// Three librdkafka consumers (heartbeat.interval.ms 1000, session.timeout.ms 6000, the default eager assignors)
// subscribe to one topic of six partitions; once every partition is held by exactly one of them, one closes
// (LeaveGroup). Measured: the time from the close until the two left hold all six partitions between them, in ms
// and in heartbeat intervals (target: within two). ROUNDS rounds each way (default 5); median and worst reported.
//
//   kafka_groups [ROUNDS]
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/daemon_process.hpp"

using namespace moonmq::test;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr int partitions = 6;
constexpr int heartbeat_ms = 1000;

/// One consumer in the group, polled on a thread of its own; what it holds, as its rebalance callback was told.
class member {
 public:
  member(const std::string& bootstrap, const std::string& group, const std::string& topic) {
    char error[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
             {"bootstrap.servers", bootstrap},
             {"group.id", group},
             {"heartbeat.interval.ms", std::to_string(heartbeat_ms)},
             {"session.timeout.ms", "6000"},
             {"enable.auto.commit", "false"},
             {"log_level", "3"}})
      if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), error, sizeof error) != RD_KAFKA_CONF_OK) {
        std::fprintf(stderr, "kafka_groups: %s: %s\n", k.c_str(), error);
        std::exit(1);
      }
    rd_kafka_conf_set_opaque(conf, this);
    rd_kafka_conf_set_rebalance_cb(conf, [](rd_kafka_t* rk, rd_kafka_resp_err_t err,
                                            rd_kafka_topic_partition_list_t* list, void* opaque) {
      auto* self = static_cast<member*>(opaque);
      std::lock_guard lock(self->mu_);
      self->held_.clear();
      if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        for (int i = 0; i < list->cnt; ++i) self->held_.insert(list->elems[i].partition);
        rd_kafka_assign(rk, list);
      } else {
        rd_kafka_assign(rk, nullptr);
      }
    });
    rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, error, sizeof error);
    if (!rk_) {
      std::fprintf(stderr, "kafka_groups: %s\n", error);
      std::exit(1);
    }
    rd_kafka_poll_set_consumer(rk_);
    rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, topic.c_str(), RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(rk_, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    poller_ = std::thread([this] {
      while (!stop_)
        if (rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, 50)) rd_kafka_message_destroy(m);
      rd_kafka_consumer_close(rk_);  // leaves the group
      rd_kafka_destroy(rk_);
    });
  }
  ~member() { close(); }
  void close() {
    stop_ = true;
    if (poller_.joinable()) poller_.join();
  }
  std::set<int> held() const {
    std::lock_guard lock(mu_);
    return held_;
  }

 private:
  rd_kafka_t* rk_ = nullptr;
  std::atomic<bool> stop_{false};
  std::thread poller_;
  mutable std::mutex mu_;
  std::set<int> held_;
};

/// Whether `members` hold every partition, each exactly once.
bool all_held(const std::vector<member*>& members) {
  std::multiset<int> held;
  for (const auto* m : members) {
    const auto h = m->held();
    held.insert(h.begin(), h.end());
  }
  if (held.size() != partitions) return false;
  for (int p = 0; p < partitions; ++p)
    if (held.count(p) != 1) return false;
  return true;
}

bool wait_for(const std::function<bool()>& done, double seconds) {
  const auto until = clock_type::now() + std::chrono::duration<double>(seconds);
  while (clock_type::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

/// One round: three members settle, one leaves; milliseconds until the other two hold everything (-1: not within 30
/// s, or the three never settled).
double one_round(const std::string& bootstrap, const std::string& topic, int round) {
  const std::string group = "bench-group-" + std::to_string(round);
  auto a = std::make_unique<member>(bootstrap, group, topic);
  auto b = std::make_unique<member>(bootstrap, group, topic);
  auto c = std::make_unique<member>(bootstrap, group, topic);
  // Settled: all held, and still so a heartbeat later (no rebalance under way).
  const bool settled = wait_for(
      [&] {
        if (!all_held({a.get(), b.get(), c.get()}) || a->held().empty() || b->held().empty() || c->held().empty())
          return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(heartbeat_ms + 200));
        return all_held({a.get(), b.get(), c.get()});
      },
      60);
  if (!settled) return -1;
  const auto left = clock_type::now();
  c->close();
  const bool held = wait_for([&] { return all_held({a.get(), b.get()}); }, 30);
  const double ms = std::chrono::duration<double, std::milli>(clock_type::now() - left).count();
  return held ? ms : -1;
}

struct summary {
  double median = -1, worst = -1;
  int failed = 0;
};

summary measure(const std::string& bootstrap, const std::string& topic, int rounds) {
  std::vector<double> ms;
  summary s;
  for (int r = 0; r < rounds; ++r) {
    const double t = one_round(bootstrap, topic, r);
    if (t < 0) ++s.failed;
    else ms.push_back(t);
  }
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  s.median = ms[ms.size() / 2];
  s.worst = ms.back();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;

  char error[512];
  rd_kafka_conf_t* quiet = rd_kafka_conf_new();
  rd_kafka_conf_set(quiet, "log_level", "3", error, sizeof error);
  rd_kafka_t* host = rd_kafka_new(RD_KAFKA_PRODUCER, quiet, error, sizeof error);
  rd_kafka_mock_cluster_t* mock = rd_kafka_mock_cluster_new(host, 3);
  rd_kafka_mock_topic_create(mock, "groups", partitions, 1);
  const summary mocked = measure(rd_kafka_mock_cluster_bootstraps(mock), "groups", rounds);
  rd_kafka_mock_cluster_destroy(mock);
  rd_kafka_destroy(host);

  temp_dir dir;
  moonmqd_process b1{"b1", dir.path()}, b2{"b2", dir.path()}, b3{"b3", dir.path()};
  std::vector<moonmqd_process*> all{&b1, &b2, &b3};
  for (auto* b : all) b->kafka_port = free_port();
  for (auto* b : all) b->configure(all);
  for (auto* b : all) b->start();
  auto made = b1.api().Post("/v1/topics", "{\"name\":\"groups\",\"partitions\":6}", "application/json");
  if (!made || made->status >= 300) {
    std::fprintf(stderr, "kafka_groups: creating the topic failed: %s\n", made ? made->body.c_str() : "no answer");
    return 1;
  }
  const summary moon = measure("127.0.0.1:" + std::to_string(b1.kafka_port), "groups", rounds);

  std::printf("kafka_groups: 3 librdkafka %s consumers, %d partitions, heartbeat %d ms; one leaves, %d rounds\n",
              rd_kafka_version_str(), partitions, heartbeat_ms, rounds);
  for (const auto& [name, s] : {std::pair{"mock cluster", mocked}, {"moonmqd", moon}})
    std::printf("{\"bench\":\"kafka_groups\",\"way\":\"%s\",\"rebalance_after_leave_ms_median\":%.0f,"
                "\"worst_ms\":%.0f,\"heartbeat_intervals_worst\":%.2f,\"failed_rounds\":%d}\n",
                name, s.median, s.worst, s.worst / heartbeat_ms, s.failed);
  return moon.failed || mocked.failed ? 1 : 0;
}
