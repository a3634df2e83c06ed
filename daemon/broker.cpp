#include "broker.hpp"

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <asio/thread_pool.hpp>

#include <atomic>
#include <set>
#include <thread>
#include <utility>

#include "api_routes.hpp"
#include "balancer_api.hpp"
#include "broker_metrics.hpp"
#include "client_auth.hpp"
#include "client_listener.hpp"
#include "cluster/topic_json.hpp"
#include "cluster_api.hpp"
#include "cluster_link.hpp"
#include "cluster_listener.hpp"
#include "cluster_view.hpp"
#include "coordinators.hpp"
#include "broker_disk.hpp"
#include "drain_api.hpp"
#include "group_api.hpp"
#include "listener_refusals.hpp"
#include "move_api.hpp"
#include "move_throttle.hpp"
#include "peer_watch.hpp"
#include "prometheus_sink.hpp"
#include "reclaim_api.hpp"
#include "reconcile_api.hpp"
#include "record_api.hpp"
#include "status_api.hpp"
#include "topic_api.hpp"
#include "txn_api.hpp"
#include "moonmq/cluster/balance_loop.hpp"
#include "moonmq/cluster/cluster_metrics.hpp"
#include "moonmq/cluster/cluster_service.hpp"
#include "moonmq/cluster/hand_moves.hpp"
#include "moonmq/cluster/move_journal.hpp"
#include "moonmq/cluster/raft_ownership_table.hpp"
#include "moonmq/cluster/reassigner.hpp"
#include "moonmq/cluster/router.hpp"
#include "moonmq/cluster/stray_reconciler.hpp"
#include "moonmq/cluster/topic_directory.hpp"
#include "moonmq/core/offload.hpp"
#include "moonmq/frontend/fetch.hpp"
#include "moonmq/frontend/http_topic_peers.hpp"
#include "moonmq/frontend/move_requests.hpp"
#include "moonmq/frontend/offsets.hpp"
#include "moonmq/frontend/placement_directory.hpp"
#include "moonmq/frontend/produce.hpp"
#include "moonmq/raft/file_storage.hpp"
#include "moonmq/raft/service.hpp"
#include "moonmq/storage/file_state_file.hpp"
#include "moonmq/transport/http_transport.hpp"

namespace moonmq::daemon {

namespace {

class running_broker final : public broker {
 public:
  running_broker(cluster::server_config cfg, std::shared_ptr<logger> log)
      : cfg_(std::move(cfg)), log_(std::move(log)) {}

  ~running_broker() override { stop(); }

  status open() {
    const std::string& dir = cfg_.data_dir;
    const bool clustered = cfg_.cluster.has_value();
    self_ = broker_id(clustered ? cfg_.cluster->broker_id : std::string("standalone"));
    if (auto s = disk_.open(cfg_, self_, log_); !s) return s;

    if (auto s = link_.open(cfg_, self_, metrics_); !s) return s;
    const auto& peer_ids = link_.peer_ids;
    const auto& tls = link_.tls;
    if (clustered && cfg_.cluster->raft.enabled)
      if (auto s = open_raft(); !s) return s;
    if (!topics_) {
      auto t = cluster::topic_directory::open(topic_parts(), storage::make_file_state_file(dir + "/topics.json"),
                                              storage::make_file_state_file(dir + "/topic-logs.json"));
      if (!t) return t.err();
      topics_ = std::move(*t);
    }
    cluster::cluster_state st = state();
    service_ = std::make_unique<cluster::cluster_service>(
        cluster::cluster_service_options{self_, link_.token, link_.peer_tokens,
                                         clustered ? cfg_.cluster->max_body_bytes : (64u << 20),
                                         move_control(),
                                         raft_ ? std::function<transport::response(const transport::request&)>(
                                                     [this](const transport::request& r) { return raft_->handle(r); })
                                               : nullptr,
                                         peer_ids, tls && tls->verify_peer,
                                         [this](const transport::request& r) { return coordinators_->group_routes().handle_cluster(r); },
                                         [this](const transport::request& r) { return coordinators_->txns().handle_cluster(r); },
                                         [this](const transport::request& r) {
                                           if (r.path.starts_with("/cluster/admin/topics/"))
                                             return topic_api_->handle_cluster(r);
                                           if (r.path == "/cluster/admin/drain") return drain_api_->handle_cluster(r);
                                           if (r.path == "/cluster/admin/reclaim")
                                             return reclaim_api_->handle_cluster(r);
                                           if (r.path == "/cluster/admin/strays")
                                             return reconcile_api_->handle_cluster(r);
                                           return balancer_api_->handle_cluster(r);
                                         },
                                         [this](const std::string& t, std::int32_t n,
                                                const std::optional<cluster::topic_record>& theirs) {
                                           return topics_->ensure_listed(t, n, theirs);
                                         }},
        st);
    router_ = std::make_unique<cluster::router>(st, *link_.peers);
    cluster::reassigner_options ro;
    ro.batch_bytes = clustered ? cfg_.cluster->batch_bytes : 256u * 1024;
    ro.throttle_bytes_per_sec = clustered ? cfg_.cluster->move_throttle_bytes_per_sec : 0;
    // A move that ended is forgotten; one cut short by a stop is not (it never ends): it resumes at the next start.
    ro.on_finished = [this](const cluster::move_progress& p) {
      if (hand_moves_) hand_moves_->finished(p);
    };
    ro.topic_record = [this](const std::string& topic) -> std::optional<std::string> {
      if (!topics_) return std::nullopt;
      auto r = topics_->find(topic);
      if (!r) return std::nullopt;
      return cluster::wire::topic_record_body(*r);
    };
    ro.incarnation_of = [this](const std::string& topic) -> std::uint64_t {
      auto r = topics_ ? topics_->find(topic) : std::nullopt;
      return !r ? 0 : r->deleted ? UINT64_MAX : r->created;
    };
    reassigner_ = std::make_unique<cluster::reassigner>(ro, st, *link_.peers, *disk_.journal, blocking_);
    auto hand = cluster::hand_moves::open({self_, *disk_.store, *disk_.ownership, *disk_.journal, *reassigner_, *log_,
                                           io_.get_executor(), blocking_.get_executor()},
                                          storage::make_file_state_file(dir + "/move-requests.json"));
    if (!hand) return hand.err();
    hand_moves_ = std::move(*hand);
    std::vector<broker_id> brokers{self_};
    for (const auto& p : peer_ids) brokers.emplace_back(p);
    auto coordinators = coordinators::open(
        {&cfg_, self_, brokers, st, link_.peers.get(), blocking_.get_executor(),
         [this] { return local_loads(); },
         log_, &metrics_});
    if (!coordinators) return coordinators.err();
    coordinators_ = std::move(*coordinators);
    auto& directory = coordinators_->directory();
    group_api_ = std::make_unique<group_api>(coordinators_->group_routes());
    txns_ = std::make_unique<frontend::transactions_frontend>(frontend::transactions_parts{
        &coordinators_->txns(),
        [this](const topic_partition& tp) { return cluster::owner_as_seen_by(*disk_.ownership, tp, self_); },
        [this](const std::string& topic, const std::set<std::int32_t>& partitions) {
          return produce_->owners(topic, partitions);
        }});
    txn_api_ = std::make_unique<txn_api>(*txns_);
    coordinators_->start();
    if (auto s = open_moves(); !s) return s;
    status_api_ = std::make_unique<status_api>(status_api_parts{view_.get(), cfg_.host + ":" + std::to_string(cfg_.port),
                                                                disk_.store.get(), disk_.ownership.get(), disk_.fence.get(),
                                                                raft_.get(), &metrics_});
    produce_ = std::make_unique<frontend::produce_frontend>(frontend::produce_parts{
        self_, disk_.store.get(), disk_.ownership.get(), router_.get(), &coordinators_->txns(), &metrics_, &directory,
        io_.get_executor()});
    fetch_ = std::make_unique<frontend::fetch_frontend>(frontend::fetch_parts{
        self_, disk_.store.get(), disk_.ownership.get(), disk_.producers.get(), &counters_, &metrics_, &directory});
    offsets_api_ = std::make_unique<frontend::offsets_frontend>(frontend::offsets_parts{
        self_, disk_.store.get(), disk_.offsets.get(), disk_.ownership.get(), &gates_, &coordinators_->group_routes(),
        &coordinators_->groups(), &metrics_,
        {}});
    record_api_ = std::make_unique<record_api>(record_api_parts{produce_.get(), fetch_.get(), offsets_api_.get()});

    seed_counters(metrics_);
    if (cfg_.autobalance.enabled) {
      cluster::balance_loop_options bo;
      bo.self = self_;
      for (const auto& p : cfg_.cluster->peers) bo.peers.push_back(p.id);
      bo.config = cfg_.autobalance;
      auto loop = cluster::balance_loop::create(std::move(bo), st, *link_.peers, *reassigner_, blocking_);
      if (!loop) return loop.err();
      balancer_ = std::move(*loop);
    }
    auto bapi = balancer_api::open(*view_, balancer_.get(), cfg_.autobalance,
                                   storage::make_file_state_file(dir + "/autobalancer-state.json"),
                                   [this] { return controller_id(); });
    if (!bapi) return bapi.err();
    balancer_api_ = std::move(*bapi);
    drain_options dopt;
    dopt.max_moves = cfg_.autobalance.max_moves_per_broker;
    dopt.excluded = {cfg_.autobalance.excluded_brokers.begin(), cfg_.autobalance.excluded_brokers.end()};
    auto drains = drain_api::open(dopt, *view_, *reassigner_, io_.get_executor(), balancer_.get(),
                                  storage::make_file_state_file(dir + "/drain-state.json"), *log_);
    if (!drains) return drains.err();
    drain_api_ = std::move(*drains);
    peer_watch_ = std::make_unique<peer_watch>(*view_, *log_);
    reclaim_api_ = std::make_unique<reclaim_api>(clustered ? cfg_.cluster->reclaim_after_seconds : 0, *view_, st,
                                                 *disk_.journal, *reassigner_);
    strays_ = std::make_unique<cluster::stray_reconciler>(cluster::stray_reconciler::parts{
        self_, *disk_.store, *disk_.ownership, *disk_.producers, gates_, *router_, *topics_, *log_, [this](const topic_partition& tp) {
          if (reassigner_->busy(tp)) return true;
          const auto pending = disk_.journal->pending();
          return std::any_of(pending.begin(), pending.end(), [&](const auto& m) { return m.partition == tp; });
        }});
    reconcile_api_ = std::make_unique<reconcile_api>(*strays_, *view_);

    io_thread_ = std::thread([this] { io_.run(); });
    if (raft_) raft_->start();

    if (clustered && cfg_.cluster->port) {
      auto l = start_cluster_listener(cfg_, tls, *service_, refusals_, *log_);
      if (!l) return l.err();
      cluster_listener_ = std::move(*l);
      // Without Raft: the topic records decided while this broker was away, from their coordinators (a peer that
      // is not up yet answers at once that it is not).
      if (!raft_) topic_admin_->catch_up();
    }

    api_ = std::make_unique<api_routes>();
    group_api_->routes(*api_);
    txn_api_->routes(*api_);
    status_api_->routes(*api_);
    record_api_->routes(*api_);
    topic_api_->routes(*api_);
    move_api_->routes(*api_);
    cluster_api_->routes(*api_);
    balancer_api_->routes(*api_);
    drain_api_->routes(*api_);
    reclaim_api_->routes(*api_);
    reconcile_api_->routes(*api_);
    auto l = start_client_listener({&cfg_, &client_auth_, api_.get(), &metrics_, &refusals_});
    if (!l) return l.err();
    client_listener_ = std::move(*l);
    log_->info("moonmqd", "broker " + self_.value() + " serving clients on " + cfg_.host + ":" +
                              std::to_string(client_listener_->port()) + ", data in " + cfg_.data_dir);

    if (hand_moves_->anything_to_recover()) asio::co_spawn(io_, hand_moves_->recover(), asio::detached);
    if (!raft_ && cfg_.cluster) asio::co_spawn(io_, topic_catch_up_loop(), asio::detached);
    if (balancer_) {
      asio::co_spawn(io_, balancer_->run(), asio::detached);
      log_->info("moonmqd", "autobalancer on: a pass every " + std::to_string(cfg_.autobalance.interval_seconds) +
                                " s" + (cfg_.autobalance.dry_run ? ", dry run (plans are only logged)" : ""));
    }
    return {};
  }

  void stop() override {
    bool expected = false;
    if (!stopped_.compare_exchange_strong(expected, true)) return;
    if (hand_moves_) hand_moves_->stop();  // a move that ends from here on was cut short: it stays listed
    if (client_listener_) client_listener_->stop();
    if (cluster_listener_) cluster_listener_->stop();
    drain_api_.reset();  // its thread starts moves: gone before the reactor stops
    reclaim_api_.reset();
    peer_watch_.reset();
    if (coordinators_) coordinators_->stop();
    if (balancer_) balancer_->stop();
    if (raft_) raft_->stop();
    work_.reset();
    io_.stop();
    if (io_thread_.joinable()) io_thread_.join();
    blocking_.join();
    raft_pool_.join();
    if (disk_.store)
      for (const auto& tp : disk_.store->list_partitions()) (void)disk_.store->sync(tp);
  }

 private:
  cluster::topic_directory::parts topic_parts() {
    std::vector<broker_id> brokers{self_};
    if (cfg_.cluster)
      for (const auto& p : cfg_.cluster->peers) brokers.emplace_back(p.id);
    auto strand = asio::make_strand(blocking_);
    return {self_,
            std::move(brokers),
            *disk_.store,
            *disk_.ownership,
            gates_,
            *log_,
            [strand](std::function<void()> work) { asio::post(strand, std::move(work)); },
            [this](const std::string& topic) { return disk_.offsets->forget_topic(topic); },
            [this](const std::string& topic) { disk_.producers->forget_topic(topic); }};
  }

  /// With Cluster.Raft: the replicated ownership table over the local sidecar, the Raft service, and the term as
  /// the controller fence.
  status open_raft() {
    const auto& rc = cfg_.cluster->raft;
    auto disk = raft::open_file_storage(cfg_.data_dir, *log_);
    if (!disk) return disk.err();
    raft_disk_ = std::move(*disk);
    auto table = std::make_unique<cluster::raft_ownership_table>(self_, std::move(disk_.ownership));
    raft_table_ = table.get();
    disk_.ownership = std::move(table);
    auto topics = cluster::topic_directory::replicated(
        topic_parts(), storage::make_file_state_file(cfg_.data_dir + "/topic-logs.json"));
    if (!topics) return topics.err();
    topics_ = std::move(*topics);
    raft_table_->attach_topics(*topics_);
    raft::service_options ro;
    ro.self = self_.value();
    for (const auto& p : cfg_.cluster->peers) ro.peers.push_back(p.id);
    ro.heartbeat = std::chrono::milliseconds(rc.heartbeat_ms);
    ro.tick = std::chrono::milliseconds(std::max<std::uint32_t>(5, rc.heartbeat_ms / 10));
    ro.election_min = std::chrono::milliseconds(rc.election_timeout_min_ms);
    ro.election_max = std::chrono::milliseconds(rc.election_timeout_max_ms);
    ro.max_log_entries = rc.max_log_entries;
    ro.propose_timeout = std::chrono::milliseconds(static_cast<long>(cfg_.cluster->peer_timeout_seconds * 1000));
    // Raft's fsyncs get a thread of their own: a move's cutover waits on a blocking-pool thread for its entry to
    // commit, and the commit must never queue behind such waits.
    auto svc = raft::service::open(ro, *raft_disk_, *raft_table_, *link_.peers, io_, raft_pool_, *log_, metrics_);
    if (!svc) return error{svc.code(), "Raft: " + svc.message()};
    raft_ = std::move(*svc);
    raft_table_->attach(*raft_);
    topics_->attach([this](raft::entry_kind k, std::string data) { return raft_->propose_blocking(k, std::move(data)); });
    disk_.fence = std::make_unique<cluster::raft_fence>(self_, *raft_);
    return {};
  }

  /// The cluster-wide view, the move routes, and the copy throttle: `move-throttle.json` (written by PUT
  /// /v1/reassignments/throttle) wins over Cluster.MoveThrottleBytesPerSec, so that a restart keeps what the operator
  /// last set.
  status open_moves() {
    auto throttle = move_throttle::open(storage::make_file_state_file(cfg_.data_dir + "/move-throttle.json"),
                                        *reassigner_, *log_);
    if (!throttle) return throttle.err();
    throttle_ = std::move(*throttle);
    std::vector<cluster::peer_config> peers;
    if (cfg_.cluster) peers = cfg_.cluster->peers;
    view_ = std::make_unique<cluster_view>(self_, peers, *link_.peers, [this] {
      broker_report me;
      me.partitions = local_loads();
      me.held_bytes = cluster::unserved_bytes(*disk_.store, *disk_.ownership, self_);
      me.strays = cluster::collect_strays(*disk_.store, *disk_.ownership);
      return me;
    });
    topic_peers_ = std::make_unique<frontend::http_topic_peers>(*link_.peers, link_.peer_ids);
    frontend::topic_admin_parts tp{self_, {}, topics_.get(), disk_.store.get(), topic_peers_.get(),
                                   [this] { return local_loads(); },
                                   [this](const topic_partition& p) { return disk_.ownership->entry(p); }, cfg_.autobalance};
    for (const auto& id : link_.peer_ids) tp.peers.emplace_back(id);
    topic_admin_ = std::make_unique<frontend::topic_admin>(std::move(tp));
    topic_api_ = std::make_unique<topic_api>(*topic_admin_, self_);
    cluster_api_ = std::make_unique<cluster_api>(
        *view_, [this] { return controller_id(); },
        [this] { return drain_api_ ? drain_api_->draining() : std::set<std::string>{}; },
        [this](const std::string& b) -> std::string {
          if (b == self_.value()) return drain_api_->progress_document();
          auto r = view_->ask(b, transport::get_request("/cluster/admin/drain"));
          return r.ok() ? r.body : std::string();
        });
    move_requests_ = std::make_unique<frontend::move_requests>(frontend::move_request_parts{
        self_, link_.peer_ids, link_.peers.get(), [this] { return local_loads(); },
        [this] { return cluster::collect_strays(*disk_.store, *disk_.ownership); },
        [this](const topic_partition& tp, const broker_id& dest) { return hand_moves_->start(tp, dest); },
        [this](const std::string& b) { return drain_api_ && drain_api_->draining().count(b) > 0; }});
    move_api_ = std::make_unique<move_api>(*view_, *reassigner_, *move_requests_,
                                           [this](std::uint64_t rate) { return throttle_->set(rate); });
    return {};
  }

  /// The partitions this broker serves, with their sizes and rates.
  std::vector<cluster::partition_load> local_loads() {
    return cluster::collect_local_loads(*disk_.store, counters_, *disk_.ownership, self_, disk_.producers.get());
  }

  /// The controller as this broker knows it: the Raft leader, or the holder of the highest fenced claim.
  std::string controller_id() {
    if (raft_) return raft_->status().leader;
    return disk_.fence->highest().controller.value();
  }

  /// The reassigner as the cluster routes reach it; a throttle set by a peer is kept like one set here, and a
  /// hand-driven move forwarded by a peer is kept like one asked here.
  cluster::move_control move_control() {
    auto c = cluster::move_control_of(reassigner_, io_.get_executor());
    c.set_throttle = [this](std::uint64_t rate) { return throttle_->set(rate); };
    c.start = [this](topic_partition tp, broker_id dest, std::optional<cluster::controller_claim> claim) {
      return hand_moves_->start(tp, dest, claim);
    };
    return c;
  }

  cluster::cluster_state state() {
    return {*disk_.store, *disk_.offsets, *disk_.ownership, *disk_.fence, counters_, gates_, *disk_.producers, *log_, metrics_};
  }

  /// Without Raft: every 5 s, the topic records of every coordinator, so that a broker that missed a tell (dropped,
  /// or the coordinator stopped between deciding and telling) does not act on an older record until its next start.
  asio::awaitable<void> topic_catch_up_loop() {
    while (!stopped_) {
      asio::steady_timer t(io_, std::chrono::seconds(5));
      co_await t.async_wait(asio::use_awaitable);
      if (stopped_) co_return;
      co_await offload(blocking_, [this] {
        topic_admin_->catch_up();
        return true;
      });
    }
  }

  cluster::server_config cfg_;
  broker_disk disk_;  ///< after the config: closed last, and its lock released last
  daemon::client_auth client_auth_{cfg_.auth};
  std::shared_ptr<logger> log_;
  broker_id self_;
  cluster::traffic counters_;
  cluster::partition_gates gates_;
  prometheus_sink metrics_;
  listener_refusals refusals_{*log_, metrics_};
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
  asio::thread_pool blocking_{4};
  asio::thread_pool raft_pool_{1};
  cluster_link link_;
  std::unique_ptr<cluster::cluster_service> service_;
  std::unique_ptr<cluster::router> router_;
  std::unique_ptr<coordinators> coordinators_;
  std::unique_ptr<group_api> group_api_;
  std::unique_ptr<frontend::transactions_frontend> txns_;
  std::unique_ptr<txn_api> txn_api_;
  std::unique_ptr<cluster::reassigner> reassigner_;
  std::unique_ptr<cluster::hand_moves> hand_moves_;
  std::unique_ptr<move_throttle> throttle_;
  std::unique_ptr<cluster_view> view_;
  std::unique_ptr<frontend::produce_frontend> produce_;
  std::unique_ptr<frontend::fetch_frontend> fetch_;
  std::unique_ptr<frontend::offsets_frontend> offsets_api_;
  std::unique_ptr<record_api> record_api_;
  std::unique_ptr<status_api> status_api_;
  std::unique_ptr<frontend::move_requests> move_requests_;
  std::unique_ptr<move_api> move_api_;
  std::unique_ptr<cluster_api> cluster_api_;
  std::unique_ptr<cluster::topic_directory> topics_;
  std::unique_ptr<frontend::http_topic_peers> topic_peers_;
  std::unique_ptr<frontend::topic_admin> topic_admin_;
  std::unique_ptr<topic_api> topic_api_;
  std::unique_ptr<balancer_api> balancer_api_;
  std::unique_ptr<drain_api> drain_api_;
  std::unique_ptr<reclaim_api> reclaim_api_;
  std::unique_ptr<cluster::stray_reconciler> strays_;
  std::unique_ptr<reconcile_api> reconcile_api_;
  std::unique_ptr<peer_watch> peer_watch_;
  std::unique_ptr<cluster::balance_loop> balancer_;
  std::unique_ptr<raft::storage> raft_disk_;
  cluster::raft_ownership_table* raft_table_ = nullptr;
  std::unique_ptr<raft::service> raft_;
  std::unique_ptr<transport::http_listener> cluster_listener_;
  std::unique_ptr<api_routes> api_;
  std::unique_ptr<transport::http_listener> client_listener_;
  std::thread io_thread_;
  std::atomic<bool> stopped_{false};
};

}  // namespace

result<std::unique_ptr<broker>> broker::start(const cluster::server_config& config, std::shared_ptr<logger> log) {
  auto b = std::make_unique<running_broker>(config, std::move(log));
  if (auto s = b->open(); !s) {
    b->stop();
    return s.err();
  }
  return std::unique_ptr<broker>(std::move(b));
}

}  // namespace moonmq::daemon
