// The whole-cluster simulation's world (see cluster_sim.hpp): the in-process cluster with each broker's
// transaction and group services, the reactor run one handler at a time, and the clients' state.
#pragma once

#include <rapidjson/document.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "moonmq/cluster/local_loads.hpp"
#include "moonmq/frontend/coordinator_jobs.hpp"
#include "moonmq/frontend/topic_admin.hpp"
#include "moonmq/groups/group_routes.hpp"
#include "moonmq/groups/group_service.hpp"
#include "moonmq/txn/txn_service.hpp"
#include "support/group_placements.hpp"
#include "support/in_process_cluster.hpp"
#include "support/manual_runtime.hpp"

namespace moonmq::test {

/// A deliberate fault in what the simulation reports, to show that the checker sees what it must.
enum class sim_sabotage {
  none,
  drop_acknowledged,  ///< the final reads leave out the first acknowledged record
  read_aborted,       ///< read_committed reads ignore the abort index
  unfenced_commit,    ///< the offsets front end commits without asking the group's coordinator
};

struct cluster_sim_options {
  std::uint64_t seed = 1;
  bool replicated = false;  ///< the Raft-backed ownership table (over test_log) instead of local tables and the fence
  int steps = 60;
  sim_sabotage sabotage = sim_sabotage::none;
  /// A group member's session: short runs need members expired within them; long runs that look for late commits
  /// need members that outlive a stall.
  std::int64_t session_ms = 3000;
};

struct cluster_sim_run {
  std::string history;                  ///< JSON lines for check::check_history
  std::string log;                      ///< what happened, step by step (the same for every run of a seed)
  std::vector<std::string> violations;  ///< the simulation's own findings: two servers, no server, not converged
  std::map<std::string, int> faults;    ///< injected, by kind
};

namespace sim_detail {

using topic_holding_t = frontend::topic_holding;

inline rapidjson::Document parse(const std::string& s) {
  rapidjson::Document d;
  d.Parse(s.c_str(), s.size());
  return d;
}

constexpr int brokers = 3;
constexpr int partitions = 4;
const std::string topic = "t";
const std::string group = "g";

/// The simulated cluster: in_process_cluster plus each broker's transaction and group services.
class world {
 public:
  explicit world(const cluster_sim_options& o)
      : opt(o),
        c(brokers, 2048, o.seed, o.replicated, /*single_threaded=*/true, /*with_topics=*/true),
        rng(o.seed * 7919 + 17) {
    // A produce that meets a handover waits on the simulation's clock, which moves when nothing else can run (see
    // run()): a seed replays whatever the machine's speed.
    c.set_runtime(rt);
    for (int i = 1; i <= brokers; ++i) {
      ids.emplace_back(c[i].id);
      txn_disks.push_back(std::make_unique<storage::memory_keyed_log>(c[i].id + "/txn-state.log"));
      group_disks.push_back(std::make_unique<storage::memory_keyed_log>(c[i].id + "/group-state.log"));
    }
    jobs.resize(brokers);
    txns.resize(brokers);
    group_services.resize(brokers);
    group_routes.resize(brokers);
    for (int i = 1; i <= brokers; ++i) start_coordinators(i);
  }

  /// Starts (or restarts, from their files) broker i's transaction and group coordinators.
  void start_coordinators(int i) {
    auto& b = c[i];
    b.transactions = nullptr;
    b.groups = nullptr;
    jobs[idx(i)] = {};  // stopped before the services their ticks use
    txns[idx(i)].reset();
    auto t = txn::txn_service::open({ids, 10'000, [this] { return now; }, [this] { return next_producer_id++; }},
                                    *txn_disks[idx(i)], b.state(), *b.peers);
    if (!t) throw std::runtime_error("txn_service: " + t.message());
    txns[idx(i)] = std::move(*t);
    b.transactions = [s = txns[idx(i)].get()](const transport::request& r) { return s->handle_cluster(r); };
    b.txns = txns[idx(i)].get();
    group_routes[idx(i)].reset();
    group_services[idx(i)].reset();
    auto g = groups::group_service::open(
        {ids[idx(i)], {opt.session_ms, 500}, [this] { return "m" + std::to_string(next_member_id++); }},
        *group_disks[idx(i)], placements_of(c), now, b.log);
    if (!g) throw std::runtime_error("group_service: " + g.message());
    group_services[idx(i)] = std::move(*g);
    group_routes[idx(i)] =
        std::make_unique<groups::group_routes>(*group_services[idx(i)], *b.peers, ids, [this] { return now; });
    b.groups = [r = group_routes[idx(i)].get()](const transport::request& req) { return r->handle_cluster(req); };
    b.group_service = group_services[idx(i)].get();
    b.group_routes = group_routes[idx(i)].get();
    // The schedule moonmqd runs (frontend/coordinator_jobs), on the simulation's clock.
    jobs[idx(i)] = frontend::schedule_coordinators(rt, *group_services[idx(i)], *group_routes[idx(i)], *txns[idx(i)],
                                                   nullptr);
    if (opt.sabotage == sim_sabotage::unfenced_commit)  // every commit is let through, fenced or not
      b.commit_fence = [](const std::string&, const std::string&, std::uint64_t, const topic_partition&,
                          const std::function<status()>& write) { return write(); };
  }

  // The runtime's waiting coroutines go while the reactor they resume on (c.io) is still here.
  ~world() {
    for (auto& j : jobs) j.stop();
    rt.drop_pending();
  }
  world(const world&) = delete;
  world& operator=(const world&) = delete;

  void start_balancer() {
    autobalancer::autobalance_config config;
    config.enabled = true;
    config.dry_run = false;
    config.interval_seconds = 1;
    config.goals = {{"PARTITION_COUNT", {}, {}, {}}};
    c.enable_balancer(1, config);  // on the simulation's runtime
  }


  /// Runs `work` to completion, one handler at a time (nothing else decides how far the reactor gets).
  template <typename T>
  T run(asio::awaitable<T> work) {
    auto done = std::make_shared<std::optional<T>>();
    asio::co_spawn(c.io, run_into(std::move(work), done), asio::detached);
    const time_ms started = now;  // an operation that outlasts a minute of the simulation's time never finishes
    for (std::size_t idle = 0; !*done;) {
      if (c.io.poll_one() > 0) continue;
      c.io.restart();
      // Nothing else can run: the oldest held request goes now, or the log's held entries commit (what the
      // operation waits for may be held). Failing both, time passes to what is next due on the simulation's clock
      // (a handover pause, the coordinators' ticks); then to the reactor's own timers.
      if (c.net.held() > 0) {
        release(1);
      } else if (c.log.held() > 0) {
        c.log.release();
      } else if (auto due = rt.next_due(); due && *due - started < 60'000) {
        rt.advance_to(*due);
      } else {
        c.io.run_one_for(std::chrono::milliseconds(1));
        c.io.restart();
        if (++idle > 20'000) throw std::runtime_error("an awaited operation never finished");
      }
    }
    return std::move(**done);
  }

  /// Runs up to `n` ready handlers (the background: moves, a balance pass, held requests let go).
  void advance(std::size_t n) {
    for (std::size_t k = 0; k < n; ++k)
      if (c.io.poll_one() == 0) {
        c.io.restart();
        break;
      }
  }

  /// Lets up to `n` held requests go; counts them.
  void release(std::size_t n = SIZE_MAX) {
    const std::size_t before = c.net.held();
    c.net.release_held(n);
    released += before - c.net.held();
  }

  /// Broker i's reassigner resolves its journal in the background (the broker is not restarted meanwhile).
  void spawn_recover(int i) {
    ++recovering[idx(i)];
    asio::co_spawn(
        c.io,
        [](cluster::reassigner& r, int& count) -> asio::awaitable<void> {
          (void)co_await r.recover();
          --count;
        }(*c[i].reassigner, recovering[idx(i)]),
        asio::detached);
  }

  bool moving() {
    for (int i = 1; i <= brokers; ++i)
      for (const auto& p : c[i].reassigner->progress())
        if (!p.finished) return true;
    return false;
  }

  /// A link cut between brokers a and b (the network's partition(), remembered: a topic's coordinator does not reach
  /// a broker it is cut from).
  void cut(int a, int b) {
    c.net.partition(c[a].id, c[b].id);
    cuts.insert({std::min(a, b), std::max(a, b)});
  }
  void heal() {
    c.net.heal();
    cuts.clear();
  }
  bool reaches(int a, int b) const { return a == b || !cuts.count({std::min(a, b), std::max(a, b)}); }

  /// How broker `self`'s topic admin front end reaches the others in the simulation: directly, where the network
  /// lets it (moonmqd's goes over /cluster/admin/topics/*, frontend/http_topic_peers.hpp).
  struct sim_topic_peers final : frontend::topic_peers {
    world& w;
    int self;
    sim_topic_peers(world& into, int from) : w(into), self(from) {}

    std::vector<topic_holding_t> holdings(const std::string& name, std::uint32_t partitions) override {
      std::vector<topic_holding_t> out;
      for (int j = 1; j <= brokers; ++j) {
        if (j == self) continue;
        if (w.reaches(self, j)) {
          out.push_back(w.admin_of(j).holding(name, partitions));
        } else {
          topic_holding_t h;
          h.broker = w.ids[idx(j)];
          h.answered = false;
          h.silence = "cut off";
          out.push_back(std::move(h));
        }
      }
      return out;
    }
    frontend::outcome<frontend::topic_decision> forward(const broker_id& coordinator,
                                                        const frontend::topic_admin_request& r) override {
      const int j = w.index_of(coordinator);
      if (!w.reaches(self, j)) return error{errc::unavailable, "coordinator b" + std::to_string(j) + " unreachable"};
      return w.admin_of(j).decide(r);
    }
    std::vector<std::string> tell(const cluster::topic_record& r) override {
      std::vector<std::string> missed;
      for (int j = 1; j <= brokers; ++j)
        if (j != self && (!w.reaches(self, j) || !w.admin_of(j).learn(r))) missed.push_back(w.c[j].id);
      return missed;
    }
    std::vector<std::pair<broker_id, cluster::topic_catalog>> catalogs() override {
      std::vector<std::pair<broker_id, cluster::topic_catalog>> out;
      for (int j = 1; j <= brokers; ++j)
        if (j != self && w.reaches(self, j)) out.emplace_back(w.ids[idx(j)], w.c[j].topics->catalog());
      return out;
    }
    std::vector<frontend::peer_serving> serving() override {
      std::vector<frontend::peer_serving> out;
      for (int j = 1; j <= brokers; ++j) {
        if (j == self) continue;
        frontend::peer_serving s{w.ids[idx(j)], w.reaches(self, j), "cut off", {}};
        if (s.answered) s.partitions = w.local_loads(j);
        out.push_back(std::move(s));
      }
      return out;
    }
    result<std::optional<cluster::ownership_entry>> own_entry(const broker_id& peer, const topic_partition& tp) override {
      const int j = w.index_of(peer);
      if (!w.reaches(self, j)) return error{errc::unavailable, "cut off"};
      return w.c[j].ownership->entry(tp);
    }
    status claim(const broker_id& peer, const frontend::topic_claim& c) override {
      const int j = w.index_of(peer);
      if (!w.reaches(self, j)) return error{errc::unavailable, "cut off"};
      return w.admin_of(j).claim(c);
    }
  };

  std::vector<cluster::partition_load> local_loads(int i) {
    auto& b = c[i];
    return cluster::collect_local_loads(b.store, b.counters, *b.ownership, broker_id(b.id), &b.producers);
  }

  /// Broker i's topic admin front end, over its tables as they are now (a restart replaces them).
  frontend::topic_admin admin_of(int i) {
    auto& link = *topic_links.emplace(i, std::make_unique<sim_topic_peers>(*this, i)).first->second;
    frontend::topic_admin_parts p{ids[idx(i)], {}, c[i].topics.get(), &c[i].store, &link,
                                  [this, i] { return local_loads(i); },
                                  [this, i](const topic_partition& tp) { return c[i].ownership->entry(tp); }, {}};
    for (int j = 1; j <= brokers; ++j)
      if (j != i) p.peers.push_back(ids[idx(j)]);
    return frontend::topic_admin(std::move(p));
  }
  std::map<int, std::unique_ptr<sim_topic_peers>> topic_links;

  /// Topics as cluster metadata (docs/cluster.md, "Topics"): a change asked of broker `via`, through the topic admin
  /// front end moonmqd's routes call. Returns what happened, in words.
  std::string change_topic(int via, frontend::topic_admin_request r) {
    const std::string what = std::string(frontend::topic_admin_op_name(r.op)) + " " + r.name;
    auto d = admin_of(via).submit(std::move(r));
    if (!d) return what + " via b" + std::to_string(via) + ": " + d.message();
    std::string owners;
    for (const auto& o : d->record.owners) owners += " " + o.value();
    return what + " via b" + std::to_string(via) + ": version " + std::to_string(d->record.version) + "," + owners +
           (d->not_yet_told.empty() ? "" : ", " + std::to_string(d->not_yet_told.size()) + " not told");
  }

  /// Without Raft: every broker learns the records of the topics each broker it reaches coordinates (moonmqd's
  /// catch-up loop).
  void catch_up_topics() {
    if (opt.replicated) return;
    for (int i = 1; i <= brokers; ++i) admin_of(i).catch_up();
  }

  /// The newest record of `name` any broker has.
  std::optional<cluster::topic_record> newest(const std::string& name) {
    std::optional<cluster::topic_record> out;
    for (int i = 1; i <= brokers; ++i)
      if (auto r = c[i].topics->find(name); r && (!out || r->version > out->version)) out = r;
    return out;
  }

  /// The brokers that hold a log of `tp` and serve it (a broker without the log serves nothing of it, whatever its
  /// table says).
  std::vector<int> log_servers(const topic_partition& tp) {
    std::vector<int> out;
    for (int i = 1; i <= brokers; ++i) {
      auto n = c[i].store.partition_count(tp.topic);
      if (n && tp.partition < *n && c[i].serves(tp)) out.push_back(i);
    }
    return out;
  }

  int index_of(const broker_id& id) const {
    for (int i = 1; i <= brokers; ++i)
      if (ids[idx(i)] == id) return i;
    return 1;
  }

  /// The brokers that serve `tp` now.
  std::vector<int> servers(const topic_partition& tp) {
    std::vector<int> out;
    for (int i = 1; i <= brokers; ++i)
      if (c[i].serves(tp)) out.push_back(i);
    return out;
  }

  std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); }

  /// Time passes: what is due meanwhile runs, in order (the coordinators' ticks among it).
  void pass(std::int64_t ms) { rt.advance_to(now + ms); }

  static std::size_t idx(int i) { return static_cast<std::size_t>(i - 1); }

  cluster_sim_options opt;
  manual_runtime rt;  ///< the simulation's clock and schedule: before everything that reads or schedules on it
  time_ms& now = rt.now;
  in_process_cluster c;
  std::mt19937_64 rng;
  std::uint64_t next_producer_id = 1000;
  std::uint64_t next_member_id = 1;
  std::vector<broker_id> ids;
  std::vector<std::unique_ptr<storage::memory_keyed_log>> txn_disks;
  std::vector<std::unique_ptr<storage::memory_keyed_log>> group_disks;
  std::vector<std::unique_ptr<txn::txn_service>> txns;
  std::vector<std::unique_ptr<groups::group_service>> group_services;
  std::vector<std::unique_ptr<groups::group_routes>> group_routes;
  std::vector<frontend::coordinator_jobs> jobs;  ///< per broker; reset before the services above
  std::set<std::pair<int, int>> cuts;                          ///< links cut (see cut())
  bool balancing = false;                                      ///< a balance pass is running in the background
  std::size_t released = 0;                                    ///< held requests let go (each one delayed)
  std::vector<int> recovering = std::vector<int>(brokers, 0);  ///< background recover() runs, per broker

 private:
  template <typename T>
  static asio::awaitable<void> run_into(asio::awaitable<T> work, std::shared_ptr<std::optional<T>> done) {
    done->emplace(co_await std::move(work));
  }
};

/// What a read_committed reader of `tp` gets from broker `at`, from `from` on: records and where the read ended.
struct committed_read {
  std::vector<std::pair<std::uint64_t, std::string>> records;
  std::uint64_t next = 0;
  bool open = false;  ///< a transaction is still open on the partition
};

inline std::optional<committed_read> read_committed(in_process_broker& b, const topic_partition& tp, std::uint64_t from,
                                                    sim_sabotage sabotage) {
  auto view = b.producers.committed(tp, 0);
  if (!view) return std::nullopt;
  if (sabotage == sim_sabotage::read_aborted) view->aborted.clear();
  auto bytes = b.store.read(tp, 0, 64u << 20);
  if (!bytes) return std::nullopt;
  committed_read out;
  out.next = std::max(from, view->last_stable_offset);
  out.open = !view->open.empty();
  for (const auto& v : storage::decode_frames(bytes->bytes.view(), 0))
    if (v.offset >= from && view->visible(v)) out.records.emplace_back(v.offset, std::string(v.value));
  return out;
}

/// The same through broker `b`'s fetch front end (read_committed), as a consumer of moonmqd reads.
inline std::optional<committed_read> fetch_committed(in_process_broker& b, const topic_partition& tp,
                                                     std::uint64_t from) {
  auto got = b.fetch_frontend().fetch({tp, from, 64u << 10, true});
  if (!got) return std::nullopt;
  committed_read out;
  out.next = got->next_offset;
  for (const auto& v : got->records) out.records.emplace_back(v.offset, std::string(v.value));
  return out;
}

inline std::string read_line(const topic_partition& tp, const committed_read& r, bool final) {
  std::string records = "[";
  for (const auto& [offset, value] : r.records)
    records += (records.size() > 1 ? "," : "") + std::string("{\"offset\":") + std::to_string(offset) +
               ",\"value\":\"" + value + "\"}";
  return "{\"op\":\"read\",\"topic\":\"" + tp.topic + "\",\"partition\":" + std::to_string(tp.partition) +
         ",\"isolation\":\"committed\"" + (final ? ",\"final\":true" : "") + ",\"records\":" + records + "]}";
}

/// An idempotent producer: each record is retried with its sequence, through any broker, until it is answered.
struct idempotent_producer {
  std::uint64_t id = 0;
  std::map<int, std::uint32_t> next_sequence;
  struct pending_record {
    int partition;
    std::string value;
    std::uint32_t sequence;
  };
  std::optional<pending_record> pending;
  int written = 0;
};

/// A transactional producer (as the daemon's produce route and client API drive the services).
struct transactional_producer {
  std::string tid;
  int via = 1;
  std::uint64_t id = 0;
  std::uint32_t epoch = 0;
  std::map<int, std::uint32_t> sequence;
  bool broken = false;
  bool ready = false;  ///< has a session
  int written = 0;
  int transactions = 0;  ///< the client's own count, for the history's transaction labels
};

/// A group member with its connection on broker `via`.
struct member {
  int via = 1;
  std::string id;
  std::uint64_t epoch = 0;
  std::set<int> owned;
  /// What a read left to commit on a later step (another member may have taken the partition meanwhile), with the
  /// identity it read under: a commit speaks for that read, not for whoever the member is by then.
  struct pending_commit {
    int partition = 0;
    std::uint64_t upto = 0;
    std::string member_id;
    std::uint64_t epoch = 0;
  };
  std::optional<pending_commit> to_commit;
  bool joined = false;
  int silent_until_step = -1;  ///< it sends nothing until then (a stalled consumer, expired by its coordinator)
};

}  // namespace sim_detail

}  // namespace moonmq::test
