// Brokers in one process, joined by the loopback network: real cluster_service, router and reassigner over
// in-memory stores, driven on one io_context. For fast, deterministic tests of the cluster protocols with faults.
#pragma once

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_future.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "moonmq/cluster/balance_loop.hpp"
#include "moonmq/cluster/cluster_service.hpp"
#include "moonmq/cluster/file_controller_fence.hpp"
#include "moonmq/cluster/local_ownership_table.hpp"
#include "moonmq/cluster/move_journal.hpp"
#include "moonmq/cluster/reassigner.hpp"
#include "moonmq/cluster/topic_directory.hpp"
#include "moonmq/frontend/fetch.hpp"
#include "moonmq/frontend/offsets.hpp"
#include "moonmq/frontend/produce.hpp"
#include "cluster/topic_json.hpp"
#include "support/kept_file.hpp"
#include "support/manual_runtime.hpp"
#include "support/ownership.hpp"
#include "support/test_log.hpp"
#include "moonmq/cluster/router.hpp"
#include "moonmq/core/metrics_registry.hpp"
#include "moonmq/core/offload.hpp"
#include "moonmq/core/system_runtime.hpp"
#include "moonmq/storage/memory_partition_store.hpp"
#include "moonmq/transport/loopback_transport.hpp"

namespace moonmq::test {

struct in_process_broker {
  std::string id;
  storage::memory_partition_store store;
  storage::memory_offset_store offsets;
  storage::memory_state_file* ownership_file = nullptr;
  storage::memory_state_file* journal_file = nullptr;
  storage::memory_state_file* topics_file = nullptr;  ///< DataDir/topics.json (without Raft)
  storage::memory_state_file* stamps_file = nullptr;  ///< DataDir/topic-logs.json
  /// The broker's topic catalog, when the cluster was made `with_topics` (as moonmqd has it: a move's ensure makes
  /// only what the catalog lists, and carries the source's record).
  std::unique_ptr<cluster::topic_directory> topics;
  std::unique_ptr<cluster::ownership_table> ownership;
  std::unique_ptr<cluster::controller_fence> fence;
  std::unique_ptr<cluster::move_journal> journal;
  cluster::traffic counters;
  cluster::partition_gates gates;
  cluster::producer_states producers{store};
  null_logger log;
  std::unique_ptr<cluster::cluster_service> service;
  std::unique_ptr<transport::transport> link;
  std::unique_ptr<transport::peer_client> peers;
  std::unique_ptr<cluster::router> router;
  std::unique_ptr<cluster::reassigner> reassigner;
  metrics_registry metrics;
  std::unique_ptr<cluster::balance_loop> balancer;
  /// The broker's /cluster/group/* routes, when a test gives it consumer groups (empty: 501).
  std::function<transport::response(const transport::request&)> groups;
  /// The broker's /cluster/txn/* routes, when a test gives it transactions (empty: 501).
  std::function<transport::response(const transport::request&)> transactions;

  /// The broker's coordinators, when a test gives it transactions or groups (the front ends call them).
  txn::txn_service* txns = nullptr;
  groups::group_service* group_service = nullptr;
  groups::group_routes* group_routes = nullptr;
  /// The offsets front end's fence; empty: the group coordinator's (a test that must show the fence matters
  /// replaces it).
  frontend::commit_fence commit_fence;

  cluster::cluster_state state() { return {store, offsets, *ownership, *fence, counters, gates, producers, log, metrics}; }
  bool serves(const topic_partition& tp) const { return cluster::serves(*ownership, tp, broker_id(id)); }

  /// The client front ends moonmqd's APIs call, over this broker's parts as they are now (made per call: a restart
  /// replaces the router and the coordinators).
  frontend::produce_frontend produce_frontend() {
    return frontend::produce_frontend(
        {broker_id(id), &store, ownership.get(), router.get(), txns, &metrics, nullptr, {}});
  }
  frontend::fetch_frontend fetch_frontend() {
    return frontend::fetch_frontend({broker_id(id), &store, ownership.get(), &producers, &counters, &metrics, nullptr});
  }
  frontend::offsets_frontend offsets_frontend() {
    return frontend::offsets_frontend(
        {broker_id(id), &store, &offsets, ownership.get(), &gates, group_routes, group_service, &metrics, commit_fence});
  }
};

class in_process_cluster {
 public:
  /// With `replicated`, every broker's ownership table is the Raft-backed one over `log` (a test_log: the log's
  /// rules without elections).
  /// With `single_threaded`, the brokers' blocking work (file reads, journal and table writes, planning) runs on the
  /// reactor too, so that the order in which the test runs its handlers is the whole schedule (the simulation).
  /// With `with_topics`, every broker has a topic directory (topics as cluster metadata: decided through the log
  /// with `replicated`, by each topic's coordinator without it).
  explicit in_process_cluster(int brokers, std::uint32_t batch_bytes = 256 * 1024, std::uint64_t seed = 1,
                              bool replicated = false, bool single_threaded = false, bool with_topics = false)
      : net(seed),
        batch_bytes_(batch_bytes),
        replicated_(replicated),
        single_threaded_(single_threaded),
        with_topics_(with_topics) {
    for (int i = 1; i <= brokers; ++i) add("b" + std::to_string(i));
    for (auto& b : brokers_) wire(*b);
  }

  in_process_broker& operator[](int i) { return *brokers_.at(static_cast<std::size_t>(i - 1)); }
  std::size_t size() const { return brokers_.size(); }

  /// Runs a coroutine to completion on the cluster's io_context.
  template <typename T>
  T run(asio::awaitable<T> work) {
    auto fut = asio::co_spawn(io, as_optional(std::move(work)), asio::use_future);
    while (fut.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      io.run_for(std::chrono::milliseconds(5));
      io.restart();
    }
    return std::move(*fut.get());
  }

  /// Runs the io_context until `done()` holds or `limit` passes; returns whether it holds.
  bool run_until(const std::function<bool()>& done, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      io.run_for(std::chrono::milliseconds(5));
      io.restart();
    }
    return true;
  }

  /// Gives broker `i` a new reassigner built with `o` (its batch size is the cluster's).
  void rebuild_reassigner(int i, cluster::reassigner_options o) {
    auto& b = (*this)[i];
    o.batch_bytes = batch_bytes_;
    o.offsets_retry = std::chrono::milliseconds(0);
    o.rt = rt_;
    b.reassigner = std::make_unique<cluster::reassigner>(o, b.state(), *b.peers, *b.journal, blocking());
  }

  /// Every broker's router reads its handover deadline on `rt` and waits out its pauses there (now and after
  /// restarts): the simulation's manual runtime.
  void set_runtime(runtime& rt) {
    rt_ = &rt;
    for (auto& b : brokers_) {
      b->router = std::make_unique<cluster::router>(b->state(), *b->peers, *rt_);
      b->reassigner = std::make_unique<cluster::reassigner>(reassigner_options_for(*b), b->state(), *b->peers,
                                                             *b->journal, blocking());
    }
  }
  runtime& rt() { return *rt_; }

  /// Where the brokers' blocking work runs: the pool, or the reactor when single-threaded.
  asio::any_io_executor blocking() {
    return single_threaded_ ? asio::any_io_executor(io.get_executor()) : asio::any_io_executor(pool.get_executor());
  }

  status move(int from, const topic_partition& tp, int to, std::optional<cluster::controller_claim> claim = {}) {
    return run((*this)[from].reassigner->move(tp, broker_id((*this)[to].id), claim));
  }

  /// Produces `records` (stamped as given) to `tp` through broker `at`'s produce front end.
  result<cluster::produce_result> produce(int at, const topic_partition& tp, std::vector<storage::record> records) {
    auto fe = (*this)[at].produce_frontend();
    auto r = run(fe.produce_async({tp.topic, tp.partition, std::move(records), std::nullopt, {}}));
    if (!r) return r.refused().err;
    return cluster::produce_result{std::move(r->offsets), std::move(r->broker)};
  }

  /// Gives broker `i` a balance loop with `config` (its peers: every other broker). `clock` drives rates and
  /// back-off (default: the steady clock).
  /// `steady`: the loop's steady clock instead of the cluster's runtime's (a clock the test moves).
  void enable_balancer(int i, autobalancer::autobalance_config config, std::function<time_ms()> steady = {}) {
    auto& b = (*this)[i];
    cluster::balance_loop_options o;
    o.self = broker_id(b.id);
    for (auto& other : brokers_)
      if (other->id != b.id) o.peers.push_back(other->id);
    o.config = std::move(config);
    o.rt = rt_;
    if (steady) {
      overrides_.push_back(std::make_unique<steady_override>(*rt_, std::move(steady)));
      o.rt = overrides_.back().get();
    }
    b.balancer =
        std::move(*cluster::balance_loop::create(std::move(o), b.state(), *b.peers, *b.reassigner, blocking()));
  }

  /// One balance pass on broker `i`.
  cluster::balance_status pass(int i) { return run((*this)[i].balancer->run_pass()); }

  /// Runs the reactor until no move is in progress anywhere (or `limit` passes).
  void settle_moves(std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    auto busy = [&] {
      for (auto& b : brokers_)
        for (const auto& p : b->reassigner->progress())
          if (!p.finished) return true;
      return false;
    };
    while (busy() && std::chrono::steady_clock::now() < deadline) {
      io.run_for(std::chrono::milliseconds(5));
      io.restart();
    }
  }

  /// Takes broker `i` off the network and drops everything built on its tables (wire() builds it again).
  in_process_broker& unwire(int i) {
    auto& b = (*this)[i];
    net.detach(b.id);
    b.topics.reset();  // it holds the ownership table a restart replaces
    b.balancer.reset();
    b.reassigner.reset();
    b.router.reset();
    b.service.reset();
    return b;
  }

  /// Puts `table` in front of broker `i` (wrapping or replacing its ownership table) and rewires it.
  void replace_ownership(int i, std::unique_ptr<cluster::ownership_table> table) {
    auto& b = unwire(i);
    b.ownership = std::move(table);
    wire(b);
  }

  /// The broker restarts: everything in memory is rebuilt from what its "disk" (stores and state files) holds. With
  /// a replicated table, the broker has not caught up with the log until log.catch_up(id).
  void restart(int i) {
    auto& b = unwire(i);
    b.ownership = open_ownership(b, true);
    b.journal = std::move(*cluster::open_move_journal(keep(b.journal_file)));
    wire(b);
  }

  asio::io_context io;
  asio::thread_pool pool{2};
  system_runtime system_rt{io};  ///< the routers' clock and pauses, unless set_runtime says otherwise
  transport::loopback_network net;
  test_log log;

 private:

  void add(const std::string& id) {
    auto b = std::make_unique<in_process_broker>();
    b->id = id;
    files_.push_back(std::make_unique<storage::memory_state_file>(id + "/cluster-assignments.json"));
    b->ownership_file = files_.back().get();
    files_.push_back(std::make_unique<storage::memory_state_file>(id + "/cluster-moves.json"));
    b->journal_file = files_.back().get();
    files_.push_back(std::make_unique<storage::memory_state_file>(id + "/topics.json"));
    b->topics_file = files_.back().get();
    files_.push_back(std::make_unique<storage::memory_state_file>(id + "/topic-logs.json"));
    b->stamps_file = files_.back().get();
    b->ownership = open_ownership(*b, false);
    b->fence = std::move(*cluster::open_file_controller_fence(
        broker_id(id), std::make_unique<storage::memory_state_file>(id + "/controller-epoch.json")));
    b->journal = std::move(*cluster::open_move_journal(keep(b->journal_file)));
    brokers_.push_back(std::move(b));
  }

  std::unique_ptr<cluster::ownership_table> open_ownership(in_process_broker& b, bool lagging) {
    auto local = std::move(*cluster::open_local_ownership_table(broker_id(b.id), keep(b.ownership_file)));
    if (!replicated_) return local;
    auto table = std::make_unique<cluster::raft_ownership_table>(broker_id(b.id), std::move(local));
    log.attach(b.id, *table, lagging);
    return table;
  }

  /// The broker's topic directory, over its kept files (a restart reads them back; with Raft, the log replays).
  void open_topics(in_process_broker& b) {
    b.topics.reset();
    if (!with_topics_) return;
    std::vector<broker_id> all;
    for (const auto& other : brokers_) all.emplace_back(other->id);
    cluster::topic_directory::parts p{broker_id(b.id), all, b.store, *b.ownership, b.gates, b.log};
    p.forget_offsets = [&b](const std::string& topic) { return b.offsets.forget_topic(topic); };
    p.forget_producers = [&b](const std::string& topic) { b.producers.forget_topic(topic); };
    if (replicated_) {
      auto d = cluster::topic_directory::replicated(std::move(p), keep(b.stamps_file));
      if (!d) throw std::runtime_error("topic directory: " + d.message());
      b.topics = std::move(*d);
      b.topics->attach(log.proposer_for(b.id));
      dynamic_cast<cluster::raft_ownership_table&>(*b.ownership).attach_topics(*b.topics);
    } else {
      auto d = cluster::topic_directory::open(std::move(p), keep(b.topics_file), keep(b.stamps_file));
      if (!d) throw std::runtime_error("topic directory: " + d.message());
      b.topics = std::move(*d);
    }
  }

  void wire(in_process_broker& b) {
    open_topics(b);
    b.service = std::make_unique<cluster::cluster_service>(
        cluster::cluster_service_options{broker_id(b.id), "secret", {}, 64u << 20,
                                         cluster::move_control_of(b.reassigner, io.get_executor()), {}, {}, false,
                                         [&b](const transport::request& r) {
                                           if (!b.groups) return transport::error_response(501, "not_implemented", "groups are not available yet on this broker");
                                           return b.groups(r);
                                         },
                                         [&b](const transport::request& r) {
                                           if (!b.transactions)
                                             return transport::error_response(501, "not_implemented", "transactions are not available yet on this broker");
                                           return b.transactions(r);
                                         },
                                         {},
                                         [&b](const std::string& t, std::int32_t n,
                                              const std::optional<cluster::topic_record>& theirs)
                                             -> std::optional<result<std::int32_t>> {
                                           if (!b.topics) return std::nullopt;
                                           return b.topics->ensure_listed(t, n, theirs);
                                         }},
        b.state());
    net.attach(b.id, [svc = b.service.get()](const transport::request& r) { return svc->handle(r); });
    b.link = net.transport_for(b.id);
    b.peers = std::make_unique<transport::peer_client>(
        *b.link, transport::peer_directory{broker_id(b.id), "secret", {}, std::chrono::milliseconds(2000)});
    b.router = std::make_unique<cluster::router>(b.state(), *b.peers, *rt_);
    b.reassigner = std::make_unique<cluster::reassigner>(reassigner_options_for(b), b.state(), *b.peers, *b.journal,
                                                         blocking());
  }

  /// What moonmqd gives a reassigner: the topic's record rides a move's ensure.
  cluster::reassigner_options reassigner_options_for(in_process_broker& b) {
    cluster::reassigner_options o;
    o.batch_bytes = batch_bytes_;
    o.offsets_retry = std::chrono::milliseconds(0);  // at once: the simulation's seeds were tuned to it
    o.rt = rt_;
    if (with_topics_)
      o.topic_record = [&b](const std::string& topic) -> std::optional<std::string> {
        if (!b.topics) return std::nullopt;
        auto r = b.topics->find(topic);
        if (!r) return std::nullopt;
        return cluster::wire::topic_record_body(*r);
      };
    if (with_topics_)
      o.incarnation_of = [&b](const std::string& topic) -> std::uint64_t {
        auto r = b.topics ? b.topics->find(topic) : std::nullopt;
        return !r ? 0 : r->deleted ? UINT64_MAX : r->created;
      };
    return o;
  }

  std::uint32_t batch_bytes_;
  bool replicated_ = false;
  bool single_threaded_ = false;
  bool with_topics_ = false;
  runtime* rt_ = &system_rt;
  std::vector<std::unique_ptr<runtime>> overrides_;  ///< balance loops' clocks (before brokers_: outlive them)
  std::vector<std::unique_ptr<storage::memory_state_file>> files_;
  std::vector<std::unique_ptr<in_process_broker>> brokers_;
};

/// A record with value `v`.
inline storage::record rec(std::string v) { return storage::record{std::nullopt, std::move(v), 1000, 0}; }

/// All of a partition's bytes.
inline std::string log_bytes(storage::partition_store& s, const topic_partition& tp) {
  auto r = s.read(tp, 0, 1u << 30);
  return r ? r->bytes.str() : std::string("<") + r.message() + ">";
}

}  // namespace moonmq::test
