// moonmq-torture: real moonmqd processes under a seeded nemesis while a workload runs, then heal, a quiet liveness
// phase, a final drain and the history checker (test/checker/history.hpp). `make torture` runs it; docs/reliability.md
// says what it covers.
//
//   moonmq-torture [--seed N] [--duration S] [--raft] [--brokers N] [--keep DIR]
//
// The workload: idempotent producers (retrying a record with its sequence until it is answered), transactional
// producers (1-3 records over random partitions, then commit or abort), a read_committed reader, hand-driven moves,
// and the balance loop. The nemesis, one fault at a time: kill -9 and restart, SIGSTOP/SIGCONT, and a restart with a
// fault point armed (a crash at a named step of a move, a commit, a write, the N-th time it is reached).
// It prints the seed, each fault, the checker's report, and last one JSON line:
//   {"seed", "duration_s", "raft", "faults": {KIND: COUNT}, "acknowledged", "anomalies": [...]}
// Exit status: 0 when the checker found nothing and the cluster converged, 1 otherwise, 2 for a bad command line.
#include <CLI/CLI.hpp>
#include <rapidjson/document.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "checker/history.hpp"
#include "support/daemon_process.hpp"
#include "torture/netns_lab.hpp"

using namespace moonmq::test;
using namespace std::chrono_literals;

namespace {

constexpr int partitions = 6;
std::atomic<bool> interrupted{false};  ///< SIGINT or SIGTERM
const std::string topic = "torture";

rapidjson::Document parse(const std::string& s) {
  rapidjson::Document d;
  d.Parse(s.c_str(), s.size());
  return d;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

/// The history, one JSON object per line, shared by every workload thread.
class history {
 public:
  void add(std::string line) {
    std::lock_guard lock(mu_);
    lines_ += line + "\n";
  }
  std::string text() {
    std::lock_guard lock(mu_);
    return lines_;
  }

 private:
  std::mutex mu_;
  std::string lines_;
};

/// The brokers, restarted and signalled by the nemesis while the workload talks to them.
struct cluster {
  std::vector<std::unique_ptr<moonmqd_process>> brokers;
  std::mutex mu;  ///< held while a broker is being restarted (its ports stay the same)
  std::vector<bool> stopped;  ///< SIGSTOPped

  httplib::Client client(std::size_t i) {
    httplib::Client c(brokers[i]->host, brokers[i]->api_port);
    c.set_connection_timeout(1s);
    c.set_read_timeout(5s);
    c.set_write_timeout(5s);
    return c;
  }
};

struct options {
  std::uint64_t seed = 0;
  int duration_s = 60;
  bool raft = false;
  int broker_count = 3;
  std::string keep;
  bool sabotage = false;  ///< drop one record from what the drain saw: the checker must report it
  bool network = true;    ///< network namespaces and network faults, when this machine allows them
  std::string history_file;  ///< where to write the history (history-check reads it)
};

class torture {
 public:
  explicit torture(options o) : opt_(std::move(o)) {}

  int run() {
    temp_dir dir;
    const std::string base = opt_.keep.empty() ? dir.path() : opt_.keep;
    std::filesystem::create_directories(base);
    std::string network = "off (--no-network)";
    if (opt_.network) {
      if (auto why = netns_lab::unavailable_reason(); !why.empty()) {
        network = "off (" + why + "): process faults and fault points only";
      } else {
        lab_ = std::make_unique<netns_lab>(opt_.broker_count, static_cast<int>(::getpid()));
        network = "on (a network namespace per broker)";
      }
    }
    std::vector<moonmqd_process*> all;
    for (int i = 0; i < opt_.broker_count; ++i) {
      c_.brokers.push_back(std::make_unique<moonmqd_process>("b" + std::to_string(i + 1), base));
      if (lab_) {
        c_.brokers.back()->host = lab_->address(i + 1);
        c_.brokers.back()->netns = lab_->ns(i + 1);
      }
      all.push_back(c_.brokers.back().get());
    }
    c_.stopped.assign(all.size(), false);
    const std::string raft =
        opt_.raft ? "\"Raft\":{\"Enabled\":true,\"HeartbeatMs\":100,\"ElectionTimeoutMinMs\":1000,"
                    "\"ElectionTimeoutMaxMs\":2000}"
                  : "";
    // Beyond loopback (in namespaces) the client API takes anonymous clients only when told to.
    const std::string server =
        "\"Transactions\":{\"TimeoutMs\":5000},\"Groups\":{\"SessionTimeoutMs\":3000,\"HeartbeatIntervalMs\":500},"
        "\"Autobalance\":{\"Enabled\":true,\"IntervalSeconds\":3,"
        "\"Goals\":[{\"Name\":\"PARTITION_COUNT\"}]}" +
        std::string(lab_ ? ",\"Auth\":{\"AllowAnonymous\":true}" : "");
    for (auto* b : all) b->configure(all, raft, server);
    for (auto* b : all) b->start();
    std::printf("torture: seed %llu, %d s, %d brokers, raft %s, network faults: %s\n",
                static_cast<unsigned long long>(opt_.seed), opt_.duration_s, opt_.broker_count,
                opt_.raft ? "on" : "off", network.c_str());
    if (!create_topic()) return fail("could not create the topic");

    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int i = 0; i < 2; ++i) workers.push_back(worker(1 + i, [this, i] { idempotent_producer(i); }));
    for (int i = 0; i < 2; ++i) workers.push_back(worker(3 + i, [this, i] { transactional_producer(i); }));
    workers.push_back(worker(5, [this] { reader(); }));
    for (int i = 0; i < 2; ++i) workers.push_back(worker(7 + i, [this, i] { group_member(i); }));
    workers.push_back(worker(6, [this] { mover(); }));
    workers.push_back(worker(10, [this] { topic_admin(); }));
    workers.push_back(worker(11, [this] { one_log_watch(); }));
    struct joined {  // the workers stop and are joined however this scope is left
      torture& t;
      std::vector<std::thread>& threads;
      ~joined() {
        t.stop_ = true;
        for (auto& w : threads)
          if (w.joinable()) w.join();
      }
    };
    {
      joined guard{*this, workers};
      std::mt19937_64 nemesis_rng(opt_.seed);
      thread_rng = &nemesis_rng;
      nemesis(start + std::chrono::seconds(opt_.duration_s));
    }

    heal();
    const bool converged = wait_converged();
    drain();
    one_server_each();
    topics_agree();
    if (!opt_.history_file.empty()) std::ofstream(opt_.history_file) << history_.text();
    auto report = moonmq::check::check_history(history_.text());
    if (!report) return fail("the history does not parse: " + report.message());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    {
      std::lock_guard lock(refusals_mu_);
      for (const auto& [why, n] : refusals_) std::printf("torture: refused %zu times: %s\n", n, why.c_str());
      std::printf("torture: group churn: %d members left and joined again, %d stalled past the session timeout\n",
                  members_left_.load(), members_stalled_.load());
    }
    std::printf("torture: checker: %s\n", report->to_json().c_str());
    if (!converged) std::printf("torture: the cluster did not converge after healing\n");
    // The last line, for machines.
    std::string faults = "{";
    for (const auto& [kind, n] : fault_counts_) faults += (faults.size() > 1 ? "," : "") + json_string(kind) + ":" + std::to_string(n);
    faults += "}";
    std::string anomalies = "[";
    for (const auto& a : report->anomalies) {
      anomalies += (anomalies.size() > 1 ? "," : "") + std::string("{\"type\":") + json_string(a.type) +
                   ",\"record\":" + json_string(a.record) + ",\"observations\":[";
      for (std::size_t i = 0; i < a.observations.size(); ++i) anomalies += (i ? "," : "") + a.observations[i];
      anomalies += "]}";
    }
    if (!converged) harness_anomaly("not_converged", "the cluster");
    for (const auto& a : harness_anomalies_) anomalies += (anomalies.size() > 1 ? "," : "") + a;
    anomalies += "]";
    std::printf("{\"seed\":%llu,\"duration_s\":%.1f,\"raft\":%s,\"faults\":%s,\"acknowledged\":%zu,\"anomalies\":%s}\n",
                static_cast<unsigned long long>(opt_.seed), seconds, opt_.raft ? "true" : "false", faults.c_str(),
                report->acknowledged, anomalies.c_str());
    std::fflush(stdout);
    for (auto& b : c_.brokers) b->kill9();  // before their data directory goes
    return report->anomalies.empty() && harness_anomalies_.empty() ? 0 : 1;
  }

 private:
  /// An anomaly the harness saw itself (not from the history): a broker that died on its own, a drain that could
  /// not finish, two servers of one partition, a producer refused for no fault of its own.
  void harness_anomaly(const std::string& type, const std::string& record, const std::string& detail = "") {
    std::lock_guard lock(refusals_mu_);
    harness_anomalies_.push_back("{\"type\":" + json_string(type) + ",\"record\":" + json_string(record) +
                                 (detail.empty() ? "" : ",\"detail\":" + json_string(detail)) + "}");
    std::printf("torture: ANOMALY %s: %s %s\n", type.c_str(), record.c_str(), detail.c_str());
  }

  /// Brokers that ended on their own since last asked (none should: every kill is the nemesis's): reported and
  /// started again.
  void reap_crashes() {
    for (std::size_t b = 0; b < c_.brokers.size(); ++b) {
      auto& broker = *c_.brokers[b];
      int sig = 0;
      if (broker.running() && broker.wait_for_end(std::chrono::milliseconds(0), &sig)) {
        harness_anomaly("broker_crashed", broker.id,
                        sig ? "signal " + std::to_string(sig) + " (see its log)" : "it exited (see its log)");
        restart(b, "");
      }
    }
  }

  /// Counts why the cluster refused a request (status and error), for the summary.
  void refused(const std::string& what, const httplib::Result& r) {
    std::string why = r ? std::to_string(r->status) : "no answer";
    if (r) {
      auto d = parse(r->body);
      if (d.IsObject() && d.HasMember("error") && d["error"].IsString()) why += std::string(" ") + d["error"].GetString();
      // A 500 is a fault of ours, never of the client's: its message is kept whole.
      if (r->status == 500 && d.IsObject() && d.HasMember("message") && d["message"].IsString())
        why += std::string(": ") + d["message"].GetString();
    }
    std::lock_guard lock(refusals_mu_);
    ++refusals_[what + ": " + why];
  }

  int fail(const std::string& why) {
    std::printf("torture: %s\n", why.c_str());
    return 1;
  }

  /// A uniform choice in [0, n) from the calling thread's generator: each thread (the nemesis, every workload
  /// thread) has its own, seeded from the seed and its role, so a seed replays every thread's choices (the
  /// interleaving of the threads and the processes is up to the machine).
  static std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(*thread_rng); }
  std::thread worker(std::uint64_t role, std::function<void()> f) {
    return std::thread([this, role, f = std::move(f)] {
      std::mt19937_64 rng(opt_.seed * 0x9E3779B97F4A7C15ull + role);
      thread_rng = &rng;
      f();
    });
  }

  void note_fault(const std::string& kind, const std::string& what) {
    ++fault_counts_[kind];
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count();
    std::printf("torture: %7.2f s  %s\n", t, what.c_str());
    std::fflush(stdout);
  }

  bool create_topic() {
    for (int attempt = 0; attempt < 50; ++attempt) {
      auto c = c_.client(0);
      auto r = c.Post("/v1/topics", "{\"name\":\"" + topic + "\",\"partitions\":" + std::to_string(partitions) + ",\"placement\":\"local\"}",
                      "application/json");
      if (r && (r->status == 200 || r->status == 409)) return true;
      std::this_thread::sleep_for(200ms);
    }
    return false;
  }

  /// An idempotent producer: each record is retried with its sequence until answered (a retry is deduplicated).
  void idempotent_producer(int n) {
    std::uint64_t id = 0;
    while (!stop_ && id == 0) {
      auto c = c_.client(pick(c_.brokers.size()));
      if (auto r = c.Post("/v1/producers", "{}", "application/json"); r && r->status == 200)
        id = parse(r->body)["producer_id"].GetUint64();
      else
        std::this_thread::sleep_for(100ms);
    }
    std::map<int, std::uint32_t> sequence;
    for (int k = 0; !stop_; ++k) {
      const int p = static_cast<int>(pick(partitions));
      const std::string value = "i" + std::to_string(n) + "-" + std::to_string(k);
      const std::string body = "{\"partition\":" + std::to_string(p) + ",\"records\":[{\"value\":" + json_string(value) +
                               "}],\"producer\":{\"id\":" + std::to_string(id) + ",\"epoch\":0,\"sequence\":" +
                               std::to_string(sequence[p]) + "}}";
      bool answered = false;
      // Until answered: a record whose fate is unknown must be retried with the same sequence, or every later one
      // is out of order. It stops retrying only when the run ends (the record's fate then stays unknown).
      while (!answered) {
        auto c = c_.client(pick(c_.brokers.size()));
        auto r = c.Post(("/v1/topics/" + topic + "/records").c_str(), body, "application/json");
        if (r && r->status == 200) {
          auto d = parse(r->body);
          history_.add("{\"op\":\"produce\",\"topic\":" + json_string(topic) + ",\"partition\":" + std::to_string(p) +
                       ",\"value\":" + json_string(value) + ",\"outcome\":\"ok\",\"offset\":" +
                       std::to_string(d["offsets"][0].GetUint64()) + "}");
          answered = true;
        } else if (stop_) {
          history_.add("{\"op\":\"produce\",\"topic\":" + json_string(topic) + ",\"partition\":" + std::to_string(p) +
                       ",\"value\":" + json_string(value) + ",\"outcome\":\"info\"}");
          return;
        } else {
          refused("idempotent produce", r);
          if (r && r->status == 409) {
            harness_anomaly("producer_refused", value, r->body);
            history_.add("{\"op\":\"produce\",\"topic\":" + json_string(topic) + ",\"partition\":" + std::to_string(p) +
                         ",\"value\":" + json_string(value) + ",\"outcome\":\"info\"}");
            return;  // fenced or out of order: this producer cannot go on
          }
          std::this_thread::sleep_for(50ms);
        }
      }
      ++sequence[p];
    }
  }

  /// A transactional producer: transactions of 1-3 records, committed or aborted at random.
  void transactional_producer(int n) {
    const std::string tid = "tx-" + std::to_string(n);
    std::uint64_t id = 0;
    std::uint32_t epoch = 0;
    auto init = [&] {
      while (!stop_) {
        auto c = c_.client(pick(c_.brokers.size()));
        auto r = c.Post("/v1/producers", "{\"transactional_id\":" + json_string(tid) + "}", "application/json");
        if (r && r->status == 200) {
          auto d = parse(r->body);
          id = d["producer_id"].GetUint64();
          epoch = d["producer_epoch"].GetUint();
          return true;
        }
        std::this_thread::sleep_for(100ms);
      }
      return false;
    };
    if (!init()) return;
    for (int k = 0; !stop_; ++k) {
      const std::string txn = tid + ":" + std::to_string(k);  // the client's own count, not the broker's epoch
      bool broken = false;
      const std::size_t count = 1 + pick(3);
      std::map<int, std::uint32_t> sequence;
      for (std::size_t j = 0; j < count && !broken; ++j) {
        const int p = static_cast<int>(pick(partitions));
        const std::string value = "t" + std::to_string(n) + "-" + std::to_string(k) + "-" + std::to_string(j);
        auto c = c_.client(pick(c_.brokers.size()));
        auto r = c.Post(("/v1/topics/" + topic + "/records").c_str(),
                        "{\"partition\":" + std::to_string(p) + ",\"records\":[{\"value\":" + json_string(value) +
                            "}],\"producer\":{\"id\":" + std::to_string(id) + ",\"epoch\":" + std::to_string(epoch) +
                            ",\"sequence\":" + std::to_string(sequence[p]) +
                            "},\"transaction\":{\"transactional_id\":" + json_string(tid) + "}}",
                        "application/json");
        std::string line = "{\"op\":\"produce\",\"topic\":" + json_string(topic) + ",\"partition\":" + std::to_string(p) +
                           ",\"value\":" + json_string(value) + ",\"txn\":" + json_string(txn);
        if (r && r->status == 200) {
          history_.add(line + ",\"outcome\":\"ok\",\"offset\":" +
                       std::to_string(parse(r->body)["offsets"][0].GetUint64()) + "}");
          ++sequence[p];
        } else {
          refused("transactional produce", r);
          history_.add(line + (r && r->status / 100 == 4 ? ",\"outcome\":\"fail\"}" : ",\"outcome\":\"info\"}"));
          broken = true;  // whatever happened to it, this transaction is aborted
        }
      }
      const bool commit = !broken && pick(3) != 0;
      auto c = c_.client(pick(c_.brokers.size()));
      auto r = c.Post(("/v1/transactions/" + tid + (commit ? "/commit" : "/abort")).c_str(),
                      "{\"producer_id\":" + std::to_string(id) + ",\"producer_epoch\":" + std::to_string(epoch) + "}",
                      "application/json");
      if (r && r->status != 200) refused(commit ? "commit" : "abort", r);
      if (r && r->status == 200) {
        history_.add("{\"op\":\"txn\",\"txn\":" + json_string(txn) + ",\"outcome\":\"" + (commit ? "commit" : "abort") + "\"}");
        epoch = parse(r->body)["producer_epoch"].GetUint();
      } else {
        // A commit's outcome is unknown (or refused: fenced after a timeout, which aborted it); a transaction never
        // asked to commit can only end aborted. A new session aborts whatever is still open.
        history_.add("{\"op\":\"txn\",\"txn\":" + json_string(txn) + ",\"outcome\":\"" + (commit ? "info" : "abort") +
                     "\"}");
        if (!init()) return;
      }
    }
  }

  /// A member of group "g", connected through broker `n` (so it is handed the partitions that broker owns): reads
  /// each assigned partition from its committed offset and commits where it got to, fenced by its member epoch;
  /// now and then it reads the committed offset back. It churns: now and then it leaves and joins again as a new
  /// member, or stalls past the session timeout (3 s), is expired, tries one commit as the zombie it now is, and
  /// joins again.
  void group_member(int n) {
    const std::size_t via = static_cast<std::size_t>(n) % c_.brokers.size();
    std::string member;
    std::uint64_t epoch = 0;
    std::set<int> owned;
    std::map<int, std::uint64_t> position;
    auto offset_line = [&](const char* op, int p, std::uint64_t offset, const char* outcome) {
      history_.add(std::string("{\"op\":\"") + op + "\",\"group\":\"g\",\"topic\":" + json_string(topic) +
                   ",\"partition\":" + std::to_string(p) + ",\"offset\":" + std::to_string(offset) +
                   (outcome ? std::string(",\"outcome\":\"") + outcome + "\"" : "") + "}");
    };
    while (!stop_) {
      auto c = c_.client(via);
      if (!member.empty() && pick(60) == 0) {  // leaves; joins again next time as a new member
        auto left = c.Post("/v1/groups/g/leave", "{\"member_id\":" + json_string(member) + "}", "application/json");
        ++members_left_;
        if (left && left->status == 200) {
          member.clear();
          owned.clear();
          position.clear();
          continue;
        }
      } else if (!member.empty() && !owned.empty() && pick(80) == 0) {  // stalls past the session timeout
        ++members_stalled_;
        for (int i = 0; i < 40 && !stop_; ++i) std::this_thread::sleep_for(100ms);
        // Back as a zombie: its commit at its old epoch is recorded as what it got. One that was taken after its
        // coordinator expired it and rewinds the group's offset is offset_backwards for the checker; one taken
        // before the expiry (a coordinator paused by the nemesis expires late) is a member's commit.
        const int p = *owned.begin();
        if (position.count(p)) {
          auto zombie = c.Post("/v1/groups/g/offsets",
                               "{\"topic\":" + json_string(topic) + ",\"partition\":" + std::to_string(p) +
                                   ",\"offset\":" + std::to_string(position[p]) + ",\"member_id\":" +
                                   json_string(member) + ",\"member_epoch\":" + std::to_string(epoch) + "}",
                               "application/json");
          const char* outcome =
              !zombie ? "info" : zombie->status == 200 ? "ok" : zombie->status / 100 == 4 ? "fail" : "info";
          offset_line("offset_commit", p, position[p], outcome);
        }
      }
      std::string owned_json = "[";
      for (int p : owned)
        owned_json += (owned_json.size() > 1 ? "," : "") + std::string("{\"topic\":") + json_string(topic) +
                      ",\"partition\":" + std::to_string(p) + "}";
      owned_json += "]";
      auto r = member.empty()
                   ? c.Post("/v1/groups/g/join", "{\"topics\":[" + json_string(topic) + "]}", "application/json")
                   : c.Post("/v1/groups/g/heartbeat",
                            "{\"member_id\":" + json_string(member) + ",\"member_epoch\":" + std::to_string(epoch) +
                                ",\"owned\":" + owned_json + "}",
                            "application/json");
      if (!r || r->status != 200) {
        if (r && (r->status == 404 || r->status == 409)) {  // unknown or fenced: join again, holding nothing
          member.clear();
          owned.clear();
        }
        std::this_thread::sleep_for(200ms);
        continue;
      }
      auto d = parse(r->body);
      member = d["member_id"].GetString();
      epoch = d["member_epoch"].GetUint64();
      std::set<int> now;
      for (const auto& a : d["assignment"].GetArray()) now.insert(a["partition"].GetInt());
      for (int p : now)
        if (!owned.count(p)) position.erase(p);  // newly handed: start from the committed offset
      owned = now;
      for (int p : owned) {
        if (!position.count(p)) {
          auto got = c.Get(("/v1/groups/g/offsets?topic=" + topic + "&partition=" + std::to_string(p)).c_str());
          if (!got || got->status != 200) continue;
          auto g = parse(got->body);
          const bool absent = !g.HasMember("offset") || !g["offset"].IsUint64();
          position[p] = absent ? 0 : g["offset"].GetUint64();
          if (!absent) offset_line("offset_read", p, position[p], nullptr);  // "none yet" is not an offset of 0
        }
        auto page = c.Get(("/v1/topics/" + topic + "/partitions/" + std::to_string(p) +
                           "/records?isolation=read_committed&max_bytes=65536&offset=" + std::to_string(position[p]))
                              .c_str());
        if (!page || page->status != 200) continue;
        const std::uint64_t next = parse(page->body)["next_offset"].GetUint64();
        if (next == position[p]) continue;
        auto commit = c.Post("/v1/groups/g/offsets",
                             "{\"topic\":" + json_string(topic) + ",\"partition\":" + std::to_string(p) +
                                 ",\"offset\":" + std::to_string(next) + ",\"member_id\":" + json_string(member) +
                                 ",\"member_epoch\":" + std::to_string(epoch) + "}",
                             "application/json");
        const char* outcome = !commit ? "info" : commit->status == 200 ? "ok" : commit->status / 100 == 4 ? "fail" : "info";
        offset_line("offset_commit", p, next, outcome);
        if (commit && commit->status == 200) position[p] = next;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100 + pick(200)));
    }
  }

  /// A consumer: follows every partition's tail read_committed (a page at a time, from where it stopped), recording
  /// what it saw.
  void reader() {
    std::map<int, std::uint64_t> position;
    while (!stop_) {
      const int p = static_cast<int>(pick(partitions));
      read_partition(p, false, &position[p], 1);
      std::this_thread::sleep_for(20ms);
    }
  }

  /// Reads partition `p` from whichever broker serves it, from `*from` (0 when null) for at most `max_pages` pages;
  /// true when read to its end (the LSO for read_committed). `*from` moves to where it stopped.
  bool read_partition(int p, bool final_read, std::uint64_t* from = nullptr, int max_pages = 1000000) {
    for (std::size_t b = 0; b < c_.brokers.size(); ++b) {
      auto c = c_.client(b);
      std::uint64_t offset = from ? *from : 0;
      bool served = false;
      for (int pages = 0; pages < max_pages; ++pages) {
        auto r = c.Get(("/v1/topics/" + topic + "/partitions/" + std::to_string(p) +
                        "/records?isolation=read_committed&max_bytes=262144&offset=" + std::to_string(offset))
                           .c_str());
        if (!r || r->status != 200) break;
        served = true;
        auto d = parse(r->body);
        std::string records = "[";
        for (const auto& rec : d["records"].GetArray()) {
          // An idempotent producer's record: retried until answered, so acknowledged (a transaction's might not be).
          if (final_read && opt_.sabotage && !sabotaged_ && rec["value"].GetString()[0] == 'i') {
            sabotaged_ = true;
            std::printf("torture: sabotage: left out of the history: %s\n", rec["value"].GetString());
            continue;
          }
          records += (records.size() > 1 ? "," : "") + std::string("{\"offset\":") +
                     std::to_string(rec["offset"].GetUint64()) + ",\"value\":" + json_string(rec["value"].GetString()) + "}";
        }
        records += "]";
        history_.add("{\"op\":\"read\",\"topic\":" + json_string(topic) + ",\"partition\":" + std::to_string(p) +
                     ",\"isolation\":\"committed\",\"final\":" + (final_read ? "true" : "false") +
                     ",\"records\":" + records + "}");
        const std::uint64_t next = d["next_offset"].GetUint64();
        const std::uint64_t end = d.HasMember("last_stable_offset") ? d["last_stable_offset"].GetUint64()
                                                                    : d["end_offset"].GetUint64();
        if (from) *from = next;
        if (final_read) {
          last_lso_[p] = end;
          last_end_[p] = d["end_offset"].GetUint64();
        }
        if (next >= end || next == offset) return true;
        offset = next;
      }
      if (served) return false;  // served here, but not read to its end
    }
    return false;
  }

  /// Moves a random partition to a random broker every couple of seconds (asked of its owner).
  /// Topic administration beside the traffic: every 0.5-2 s a topic "adm-K" of 1-3 partitions is created (spread
  /// over the brokers) through a random broker, grown by one through another, and given one record per partition.
  /// What was acknowledged is checked once the cluster has converged (topics_agree).
  void topic_admin() {
    for (int k = 0; !stop_; ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500 + pick(1500)));
      const std::string name = "adm-" + std::to_string(k);
      const int n = 1 + static_cast<int>(pick(3));
      auto c = c_.client(pick(c_.brokers.size()));
      auto r = c.Post("/v1/topics", "{\"name\":" + json_string(name) + ",\"partitions\":" + std::to_string(n) + "}",
                      "application/json");
      if (!r || r->status != 200) {
        refused("topic create", r);
        continue;
      }
      admin_topic t{n, n, {}};
      auto g = c_.client(pick(c_.brokers.size()))
                   .Post(("/v1/topics/" + name + "/partitions").c_str(), "{\"count\":" + std::to_string(n + 1) + "}",
                         "application/json");
      if (g && g->status == 200)
        t.min_count = t.max_count = n + 1;
      else if (!g || g->status >= 500)
        t.max_count = n + 1;  // its outcome is not known
      if (!g || g->status != 200) refused("topic grow", g);
      for (int p = 0; p < t.min_count && !stop_; ++p) {
        const std::string value = name + "/" + std::to_string(p);
        auto w = c_.client(pick(c_.brokers.size()))
                     .Post(("/v1/topics/" + name + "/records").c_str(),
                           "{\"partition\":" + std::to_string(p) + ",\"records\":[{\"value\":" + json_string(value) + "}]}",
                           "application/json");
        if (w && w->status == 200)
          t.acked.push_back({p, parse(w->body)["offsets"][0].GetUint64(), value});
        else
          refused("topic admin produce", w);
      }
      std::lock_guard lock(admin_mu_);
      admin_topics_[name] = std::move(t);
    }
  }

  /// One log per partition while everything goes on: twice a second, one broker's cluster-wide list of partitions
  /// (/v1/partitions) must show no stray (a log the topic catalog did not make where it is) and no partition served
  /// by two brokers. The brokers of one list answer at slightly different instants, so a partition is reported served
  /// twice only when two lists at least a second apart both say so with the same brokers (a cutover between two
  /// answers looks like two servers for that instant).
  void one_log_watch() {
    std::map<std::string, std::pair<std::string, std::chrono::steady_clock::time_point>> twice;  // tp -> brokers, since
    std::set<std::string> reported;
    while (!stop_) {
      std::this_thread::sleep_for(500ms);
      auto r = c_.client(pick(c_.brokers.size())).Get("/v1/partitions");
      if (!r || r->status != 200) continue;
      auto d = parse(r->body);
      if (!d.IsObject() || !d.HasMember("partitions")) continue;
      const auto now = std::chrono::steady_clock::now();
      if (d.HasMember("strays") && d["strays"].IsArray())
        for (const auto& st : d["strays"].GetArray()) {
          const std::string what = std::string(st["topic"].GetString()) + "-" +
                                   std::to_string(st["partition"].GetInt()) + " on " + st["broker"].GetString();
          if (reported.insert("stray " + what).second) harness_anomaly("stray", what);
        }
      std::map<std::string, std::string> servers;  // tp -> brokers serving it, in this list
      for (const auto& p : d["partitions"].GetArray()) {
        const std::string tp = std::string(p["topic"].GetString()) + "-" + std::to_string(p["partition"].GetInt());
        servers[tp] += std::string(servers[tp].empty() ? "" : " ") + p["owner"].GetString();
      }
      for (auto it = twice.begin(); it != twice.end();)
        it = servers.count(it->first) && servers[it->first] == it->second.first ? std::next(it) : twice.erase(it);
      for (const auto& [tp, who] : servers) {
        if (who.find(' ') == std::string::npos) continue;
        auto [it, fresh] = twice.try_emplace(tp, who, now);
        if (!fresh && now - it->second.second >= 1s && reported.insert("twice " + tp).second)
          harness_anomaly("two_servers", tp, "served by: " + who + " for at least a second");
      }
    }
  }

  /// After the drain: every broker lists the same partition count for every adm- topic (within 20 s: without Raft a
  /// broker that missed a change catches up every 5 s), each topic created has the count acknowledged, each of its
  /// partitions has exactly one server and one log in the cluster (no stray), and each acknowledged record is there.
  void topics_agree() {
    std::map<std::string, admin_topic> created;
    {
      std::lock_guard lock(admin_mu_);
      created = admin_topics_;
    }
    std::map<std::string, std::map<std::string, int>> listed;  // topic -> broker -> partitions
    std::string disagreement;
    for (auto until = std::chrono::steady_clock::now() + 20s; std::chrono::steady_clock::now() < until;) {
      listed.clear();
      disagreement.clear();
      for (std::size_t b = 0; b < c_.brokers.size(); ++b) {
        auto r = c_.client(b).Get("/v1/topics");
        if (!r || r->status != 200) {
          disagreement = c_.brokers[b]->id + " does not list its topics";
          continue;
        }
        auto d = parse(r->body);
        for (const auto& t : d["topics"].GetArray())
          if (std::string(t["name"].GetString()).rfind("adm-", 0) == 0)
            listed[t["name"].GetString()][c_.brokers[b]->id] = t["partitions"].GetInt();
      }
      for (const auto& [name, by] : listed) {
        std::set<int> counts;
        for (const auto& [b, n] : by) counts.insert(n);
        if (by.size() != c_.brokers.size() || counts.size() != 1) disagreement = name;
      }
      if (disagreement.empty()) break;
      std::this_thread::sleep_for(500ms);
    }
    if (!disagreement.empty()) harness_anomaly("topic_disagreement", disagreement, "brokers list it differently");
    for (const auto& [name, t] : created) {
      const int count = listed.count(name) && !listed[name].empty() ? listed[name].begin()->second : 0;
      if (count < t.min_count || count > t.max_count) {
        harness_anomaly("topic_count", name,
                        "listed with " + std::to_string(count) + " partitions, acknowledged " + std::to_string(t.min_count));
        continue;
      }
      std::map<int, std::size_t> server;
      for (int p = 0; p < count; ++p) {
        std::vector<std::size_t> serving;
        for (std::size_t b = 0; b < c_.brokers.size(); ++b) {
          auto r = c_.client(b).Get(("/v1/topics/" + name + "/partitions/" + std::to_string(p) +
                                     "/records?max_bytes=1&offset=0").c_str());
          if (r && r->status == 200) serving.push_back(b);
        }
        if (serving.size() != 1)
          harness_anomaly(serving.empty() ? "no_server" : "two_servers", name + "-" + std::to_string(p));
        else
          server[p] = serving.front();
      }
      for (const auto& [p, offset, value] : t.acked) {
        if (!server.count(p)) continue;
        auto r = c_.client(server[p]).Get(("/v1/topics/" + name + "/partitions/" + std::to_string(p) +
                                           "/records?offset=" + std::to_string(offset)).c_str());
        bool found = false;
        if (r && r->status == 200) {
          auto d = parse(r->body);
          if (d.IsObject() && d.HasMember("records") && d["records"].IsArray() && !d["records"].Empty())
            found = d["records"][0]["value"] == value.c_str() && d["records"][0]["offset"].GetUint64() == offset;
        }
        if (!found) harness_anomaly("topic_record_lost", value, "acknowledged at offset " + std::to_string(offset));
      }
    }
    auto r = c_.client(0).Get("/v1/partitions");
    if (r && r->status == 200) {
      auto d = parse(r->body);
      for (const auto& s : d["strays"].GetArray())
        harness_anomaly("stray", std::string(s["topic"].GetString()) + "-" + std::to_string(s["partition"].GetInt()),
                        std::string("on ") + s["broker"].GetString());
      for (const auto& p : d["partitions"].GetArray())
        if (p.HasMember("conflict"))
          harness_anomaly("two_logs", std::string(p["topic"].GetString()) + "-" + std::to_string(p["partition"].GetInt()),
                          p["conflict"].GetString());
    }
    std::printf("torture: topics: %zu created beside the traffic, all checked\n", created.size());
  }

  void mover() {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500 + pick(1000)));
      const int p = static_cast<int>(pick(partitions));
      const std::string dest = c_.brokers[pick(c_.brokers.size())]->id;
      for (std::size_t b = 0; b < c_.brokers.size(); ++b) {
        auto c = c_.client(b);
        auto r = c.Post("/v1/reassignments",
                        "{\"topic\":" + json_string(topic) + ",\"partition\":" + std::to_string(p) + ",\"dest\":" +
                            json_string(dest) + "}",
                        "application/json");
        if (r && r->status / 100 == 2) break;
      }
    }
  }

  /// One fault at a time until `until`: kill -9, a pause, or a restart with a fault point armed.
  void nemesis(std::chrono::steady_clock::time_point until) {
    began_ = std::chrono::steady_clock::now();
    static const char* points[] = {
        "reassigner.after_reserve", "reassigner.after_copy",   "reassigner.before_cutover",
        "reassigner.after_cutover", "reassigner.after_drain",  "reassigner.before_confirm",
        "reassigner.after_confirm", "reassigner.before_rollback", "reassigner.after_rollback",
        "ownership.before_write",   "ownership.after_write",   "fence.before_write",
        "fence.after_write",        "txn.after_prepare",       "txn.between_markers",
        "txn.before_complete",      "txn.after_marker_write",  "groups.before_persist",
        "groups.after_persist",     "log.before_fsync",        "raft.after_save",
        "raft.before_send"};
    while (std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1000 + pick(2000)));
      reap_crashes();
      if (std::chrono::steady_clock::now() >= until || interrupted) break;
      const std::size_t b = pick(c_.brokers.size());
      auto& broker = *c_.brokers[b];
      if (lab_ && pick(2) == 0) {
        try {
          network_fault(b);
        } catch (const std::exception& e) {
          std::printf("torture: a network fault could not be made: %s\n", e.what());
          try {
            lab_->heal();
          } catch (const std::exception&) {
          }
        }
        continue;
      }
      switch (pick(3)) {
        case 0: {
          note_fault("kill", "kill -9 " + broker.id);
          broker.kill9();
          std::this_thread::sleep_for(std::chrono::milliseconds(200 + pick(1500)));
          restart(b, "");
          break;
        }
        case 1: {
          const auto ms = 500 + pick(3000);
          note_fault("pause", "SIGSTOP " + broker.id + " for " + std::to_string(ms) + " ms");
          broker.send_signal(SIGSTOP);
          std::this_thread::sleep_for(std::chrono::milliseconds(ms));
          broker.send_signal(SIGCONT);
          break;
        }
        default: {
          const std::string point = points[pick(std::size(points))];
          if (point.rfind("raft.", 0) == 0 && !opt_.raft) break;
          const std::string spec = point + "=crash@" + std::to_string(1 + pick(3));
          note_fault("fault_point", "restart " + broker.id + " with " + spec);
          broker.kill9();
          broker.faults = spec;
          try {
            broker.start();
          } catch (const std::exception& e) {
            // The point was reached while starting (the first controller claim writes the fence): fired, if it
            // ended the process as a crash does; otherwise a start-up failure with the point armed.
            if (broker.start_up_signal == SIGKILL) {
              note_fault("fault_point_fired", broker.id + " crashed at " + point + " while starting");
            } else if (std::string(e.what()).find("exited at start-up") != std::string::npos) {
              harness_anomaly("broker_crashed", broker.id,
                              "exited while starting with " + point + " armed (signal " +
                                  std::to_string(broker.start_up_signal) + ")");
            }
            restart(b, "");
            break;
          }
          // It crashes when (and if) the point is reached; then it comes back without it.
          int sig = 0;
          if (broker.wait_for_end(std::chrono::milliseconds(3000 + pick(7000)), &sig)) {
            if (sig != SIGKILL)
              harness_anomaly("broker_crashed", broker.id,
                              "ended with signal " + std::to_string(sig) + " while " + point + " was armed");
            else
              note_fault("fault_point_fired", broker.id + " crashed at " + point);
            std::this_thread::sleep_for(std::chrono::milliseconds(pick(1000)));
          } else {
            broker.kill9();
          }
          restart(b, "");
        }
      }
    }
  }

  /// A network fault around broker `b` for 1-5 s, then the network is whole again.
  void network_fault(std::size_t b) {
    const int i = static_cast<int>(b) + 1;
    const int n = static_cast<int>(c_.brokers.size());
    const int other = 1 + static_cast<int>((b + 1 + pick(c_.brokers.size() - 1)) % c_.brokers.size());
    const auto ms = 1000 + pick(4000);
    std::string what;
    switch (pick(5)) {
      case 0:
        lab_->cut(i, other, true);
        note_fault("partition", what = "cut b" + std::to_string(i) + " <-> b" + std::to_string(other));
        break;
      case 1:
        lab_->cut(i, other, false);
        note_fault("partition_one_way", what = "cut b" + std::to_string(i) + " -> b" + std::to_string(other));
        break;
      case 2: {
        // The controller (the fence holder, or the Raft leader's choice) when a broker names it, else `b`.
        int target = i;
        auto c = c_.client(b);
        if (auto r = c.Get("/v1/cluster"); r && r->status == 200) {
          auto d = parse(r->body);
          if (d.HasMember("controller") && d["controller"].IsObject() && d["controller"].HasMember("id")) {
            const std::string id = d["controller"]["id"].GetString();
            for (int j = 1; j <= n; ++j)
              if (c_.brokers[static_cast<std::size_t>(j - 1)]->id == id) target = j;
          }
        }
        lab_->isolate(target);
        note_fault("isolate", what = "b" + std::to_string(target) + " cut off from every peer");
        break;
      }
      case 3: {
        const int percent = 10 + static_cast<int>(pick(40));
        lab_->lossy(i, percent);
        note_fault("loss", what = std::to_string(percent) + "% loss at b" + std::to_string(i));
        break;
      }
      default: {
        const int kbit = 128 << pick(4);
        lab_->slow(i, kbit);
        note_fault("slow", what = "b" + std::to_string(i) + " sends at " + std::to_string(kbit) + " kbit/s");
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    lab_->heal();
    std::printf("torture:            healed after %zu ms: %s\n", static_cast<std::size_t>(ms), what.c_str());
  }

  void restart(std::size_t b, const std::string& faults) {
    auto& broker = *c_.brokers[b];
    broker.faults = faults;
    for (int attempt = 0; attempt < 5; ++attempt) {
      try {
        broker.start();
        return;
      } catch (const std::exception& e) {
        std::printf("torture: restart of %s failed (%s); again\n", broker.id.c_str(), e.what());
        std::this_thread::sleep_for(500ms);
      }
    }
  }

  /// Every broker running, without fault points, none paused.
  void heal() {
    reap_crashes();
    if (lab_) lab_->heal();
    for (std::size_t b = 0; b < c_.brokers.size(); ++b) {
      auto& broker = *c_.brokers[b];
      broker.send_signal(SIGCONT);
      if (!broker.faults.empty() || !broker.running()) {
        broker.kill9();
        restart(b, "");
      }
    }
    std::printf("torture: healed; waiting for the cluster to converge\n");
  }

  /// The liveness phase: no move unfinished, no transaction in prepare, the group stable (no partition handed to two
  /// members), within 60 s.
  bool wait_converged() {
    for (auto until = std::chrono::steady_clock::now() + 60s; std::chrono::steady_clock::now() < until;) {
      bool quiet = true;
      for (std::size_t b = 0; b < c_.brokers.size() && quiet; ++b) {
        auto c = c_.client(b);
        auto moves = c.Get("/v1/reassignments");
        auto txns = c.Get("/v1/transactions");
        if (!moves || moves->status != 200 || !txns || txns->status != 200) {
          quiet = false;
          break;
        }
        // Locals: a range over a temporary document's array would read freed memory.
        const auto move_list = parse(moves->body);
        const auto txn_list = parse(txns->body);
        // The list is paged (1,000 a page); a run has far fewer ids, and one that had more must not pass unseen.
        if (txn_list.HasMember("more") && txn_list["more"].GetBool()) {
          std::printf("torture: more transactional ids than one page of /v1/transactions\n");
          return false;
        }
        for (const auto& m : move_list["reassignments"].GetArray()) quiet = quiet && m["finished"].GetBool();
        for (const auto& t : txn_list["transactions"].GetArray()) {
          const std::string state = t["state"].GetString();
          quiet = quiet && state.rfind("prepare", 0) != 0 && state != "ongoing";
        }
      }
      if (quiet) {
        // The group is stable: its coordinator answers, and no partition is handed to two members.
        auto g = c_.client(0).Get("/v1/groups/g");
        quiet = g && (g->status == 200 || g->status == 404);
        if (quiet && g->status == 200) {
          const auto group = parse(g->body);
          std::set<int> handed;
          for (const auto& m : group["members"].GetArray())
            for (const auto& a : m["assignment"].GetArray())
              quiet = handed.insert(a["partition"].GetInt()).second && quiet;
        }
      }
      if (quiet) {
        std::printf("torture: converged\n");
        return true;
      }
      std::this_thread::sleep_for(500ms);
    }
    return false;
  }

  /// Reads every partition read_committed to its end, going on from where a broker stopped answering at whichever
  /// broker serves the partition next, for up to 60 s each. Then the LSO must be the end: no transaction is left
  /// open once the cluster has converged.
  void drain() {
    for (int p = 0; p < partitions; ++p) {
      std::uint64_t offset = 0;
      bool done = false;
      for (auto until = std::chrono::steady_clock::now() + 60s; !done && std::chrono::steady_clock::now() < until;) {
        done = read_partition(p, true, &offset);
        if (!done) std::this_thread::sleep_for(200ms);
      }
      if (!done) {
        harness_anomaly("drain_incomplete", topic + "-" + std::to_string(p), "stopped at offset " + std::to_string(offset));
        continue;
      }
      if (last_lso_[p] < last_end_[p])
        harness_anomaly("lso_behind_end", topic + "-" + std::to_string(p),
                        "LSO " + std::to_string(last_lso_[p]) + ", end " + std::to_string(last_end_[p]) +
                            " after the cluster converged: a transaction is still open there");
    }
  }

  /// After the drain: exactly one broker serves each partition.
  void one_server_each() {
    for (int p = 0; p < partitions; ++p) {
      std::vector<std::string> serving;
      for (std::size_t b = 0; b < c_.brokers.size(); ++b) {
        auto c = c_.client(b);
        auto r = c.Get(("/v1/topics/" + topic + "/partitions/" + std::to_string(p) + "/records?max_bytes=1&offset=0").c_str());
        if (r && r->status == 200) serving.push_back(c_.brokers[b]->id);
      }
      if (serving.size() != 1) {
        std::string who;
        for (const auto& s : serving) who += s + " ";
        harness_anomaly(serving.empty() ? "no_server" : "two_servers", topic + "-" + std::to_string(p),
                        "served by: " + who);
      }
    }
  }

  options opt_;
  std::unique_ptr<netns_lab> lab_;  ///< outlives the brokers (declared first, destroyed last)
  cluster c_;
  history history_;
  static thread_local std::mt19937_64* thread_rng;
  std::atomic<bool> stop_{false};
  bool sabotaged_ = false;
  std::map<int, std::uint64_t> last_lso_, last_end_;  ///< per partition, at the drain's last page
  std::vector<std::string> harness_anomalies_;
  struct admin_topic {
    int min_count = 0, max_count = 0;  ///< the partition count acknowledged, and the most it may be (a grow unanswered)
    std::vector<std::tuple<int, std::uint64_t, std::string>> acked;  ///< partition, offset, value
  };
  std::mutex admin_mu_;
  std::map<std::string, admin_topic> admin_topics_;
  std::mutex refusals_mu_;
  std::map<std::string, std::size_t> refusals_;
  std::atomic<int> members_left_{0}, members_stalled_{0};  ///< group churn, printed with the summary
  std::map<std::string, std::size_t> fault_counts_;
  std::chrono::steady_clock::time_point began_ = std::chrono::steady_clock::now();
};

thread_local std::mt19937_64* torture::thread_rng = nullptr;

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  // SIGINT or SIGTERM end the faults early; the round still heals, checks and removes what it made.
  std::signal(SIGINT, [](int) { interrupted = true; });
  std::signal(SIGTERM, [](int) { interrupted = true; });
  // Line by line: a child forked for a command must not inherit (and write again) half a buffer.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  options o;
  o.seed = std::random_device{}();
  CLI::App app{"moonmq-torture: moonmqd under a seeded nemesis, checked by the history checker"};
  app.add_option("--seed", o.seed, "the seed (printed; the same seed replays the same choices)");
  app.add_option("--duration", o.duration_s, "seconds of faults before healing")->check(CLI::Range(1, 86400));
  app.add_flag("--raft", o.raft, "brokers with Cluster.Raft");
  app.add_option("--brokers", o.broker_count, "how many brokers")->check(CLI::Range(2, 9));
  app.add_option("--keep", o.keep, "keep the brokers' data and logs in this directory");
  app.add_flag("--sabotage", o.sabotage, "leave one drained record out of the history (the checker must catch it)");
  app.add_option("--history", o.history_file, "write the recorded history to this file (JSON lines)");
  bool no_network = false;
  app.add_flag("--no-network", no_network, "no network namespaces and no network faults, even as root");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  o.network = !no_network;
  try {
    return torture(o).run();
  } catch (const std::exception& e) {
    std::printf("torture: %s\n", e.what());
    return 1;
  }
}
