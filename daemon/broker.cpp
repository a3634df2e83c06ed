#include "broker.hpp"

#include <httplib.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_future.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "api_reply.hpp"
#include "client_auth.hpp"
#include "client_listener.hpp"
#include "listener_refusals.hpp"
#include "balancer_api.hpp"
#include "cluster_api.hpp"
#include "cluster_view.hpp"
#include "coordinators.hpp"
#include "data_dir_lock.hpp"
#include "drain_api.hpp"
#include "group_api.hpp"
#include "move_api.hpp"
#include "move_requests.hpp"
#include "peer_watch.hpp"
#include "prometheus_sink.hpp"
#include "broker_metrics.hpp"
#include "reclaim_api.hpp"
#include "reconcile_api.hpp"
#include "record_api.hpp"
#include "status_api.hpp"
#include "topic_api.hpp"
#include "txn_api.hpp"
#include "cluster/topic_json.hpp"
#include "cluster/wire_json.hpp"
#include "json/object_reader.hpp"
#include "json/writer.hpp"
#include "moonmq/cluster/balance_loop.hpp"
#include "moonmq/groups/group_metrics.hpp"
#include "moonmq/txn/txn_metrics.hpp"
#include "moonmq/txn/txn_service.hpp"
#include "moonmq/storage/file_keyed_log.hpp"
#include "moonmq/cluster/cluster_metrics.hpp"
#include "moonmq/cluster/cluster_service.hpp"
#include "moonmq/cluster/file_controller_fence.hpp"
#include "moonmq/cluster/local_ownership_table.hpp"
#include "moonmq/cluster/move_journal.hpp"
#include "moonmq/cluster/raft_ownership_table.hpp"
#include "moonmq/cluster/reassigner.hpp"
#include "moonmq/cluster/router.hpp"
#include "moonmq/cluster/topic_directory.hpp"
#include "moonmq/frontend/placement_directory.hpp"
#include "moonmq/core/offload.hpp"
#include "moonmq/core/topic_name.hpp"
#include "moonmq/raft/file_storage.hpp"
#include "moonmq/raft/service.hpp"
#include "moonmq/storage/durable_offset_store.hpp"
#include "moonmq/storage/file_partition_store.hpp"
#include "moonmq/storage/file_state_file.hpp"
#include "moonmq/transport/http_transport.hpp"
#include "storage/posix_file.hpp"

namespace moonmq::daemon {

namespace {


using json_writer = json::writer;
using json::put;



class running_broker final : public broker {
 public:
  running_broker(cluster::server_config cfg, std::shared_ptr<logger> log)
      : cfg_(std::move(cfg)), log_(std::move(log)) {}

  ~running_broker() override { stop(); }

  status open() {
    const std::string& dir = cfg_.data_dir;
    if (auto s = posix::make_directories(dir); !s) return s;
    if (auto s = dir_lock_.acquire(dir); !s) return s;
    auto policy = storage::parse_fsync_policy(cfg_.storage.fsync);
    auto store = storage::open_file_partition_store(
        {dir, *policy, cfg_.storage.fsync_interval_ms, log_,
         static_cast<std::int32_t>(cfg_.limits.max_partitions_per_topic), cfg_.limits.max_partitions_per_broker,
         cfg_.limits.max_open_partition_files});
    if (!store) return store.err();
    store_ = std::move(*store);
    producers_ = std::make_unique<cluster::producer_states>(*store_, cfg_.limits.max_producers_per_partition);
    auto offsets = storage::open_durable_offset_store(dir, log_);
    if (!offsets) return offsets.err();
    offsets_ = std::move(*offsets);

    const bool clustered = cfg_.cluster.has_value();
    self_ = broker_id(clustered ? cfg_.cluster->broker_id : std::string("standalone"));
    auto table =
        cluster::open_local_ownership_table(self_, storage::make_file_state_file(dir + "/cluster-assignments.json"));
    if (!table) return table.err();
    ownership_ = std::move(*table);
    if (!clustered || !cfg_.cluster->raft.enabled) {
      auto fence =
          cluster::open_file_controller_fence(self_, storage::make_file_state_file(dir + "/controller-epoch.json"));
      if (!fence) return fence.err();
      fence_ = std::move(*fence);
    }
    auto journal = cluster::open_move_journal(storage::make_file_state_file(dir + "/cluster-moves.json"));
    if (!journal) return journal.err();
    journal_ = std::move(*journal);

    std::map<std::string, std::string> peer_tokens;
    std::vector<std::string> peer_ids;
    transport::http_transport_options topt;
    std::optional<transport::tls_options> tls;
    if (clustered) {
      for (const auto& p : cfg_.cluster->peers) {
        peer_tokens[p.id] = p.token;
        peer_ids.push_back(p.id);
        topt.peers.push_back({p.id, p.host, p.port});
      }
      if (cfg_.cluster->tls)
        tls = transport::tls_options{cfg_.cluster->tls->cert_file, cfg_.cluster->tls->key_file,
                                     cfg_.cluster->tls->ca_file, cfg_.cluster->tls->verify_peer};
      topt.tls = tls;
    }
    auto made = transport::make_http_transport(topt);
    if (!made) return error{made.code(), "cluster TLS: " + made.message()};
    transport_ = std::move(*made);
    const std::string token = clustered ? cfg_.cluster->token : std::string();
    const auto timeout =
        std::chrono::milliseconds(static_cast<long>((clustered ? cfg_.cluster->peer_timeout_seconds : 5.0) * 1000));
    peers_ = std::make_unique<cluster::peer_client>(
        *transport_, cluster::peer_directory{self_, token, peer_tokens, timeout}, metrics_);
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
        cluster::cluster_service_options{self_, token, peer_tokens,
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
    router_ = std::make_unique<cluster::router>(st, *peers_);
    auto requests = move_requests::open(storage::make_file_state_file(dir + "/move-requests.json"));
    if (!requests) return requests.err();
    move_requests_ = std::move(*requests);
    cluster::reassigner_options ro;
    ro.batch_bytes = clustered ? cfg_.cluster->batch_bytes : 256u * 1024;
    ro.throttle_bytes_per_sec = clustered ? cfg_.cluster->move_throttle_bytes_per_sec : 0;
    // A move that ended is forgotten; one cut short by a stop is not (it never ends): it resumes at the next start.
    ro.on_finished = [this](const cluster::move_progress& p) {
      if (stopped_) return;
      asio::post(blocking_, [this, tp = p.partition] {
        if (reassigner_->busy(tp)) return;  // a newer move of it started meanwhile: its record stays
        if (auto s = move_requests_->remove(tp); !s)
          log_->error("moonmqd", "could not forget a finished move: " + s.message());
      });
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
    reassigner_ = std::make_unique<cluster::reassigner>(
        ro, st, *peers_, *journal_,
        blocking_);
    std::vector<broker_id> brokers{self_};
    for (const auto& p : peer_ids) brokers.emplace_back(p);
    auto coordinators = coordinators::open(
        {&cfg_, self_, brokers, st, peers_.get(), blocking_.get_executor(),
         [this] { return cluster::collect_local_loads(*store_, counters_, *ownership_, self_, producers_.get()); },
         log_, &metrics_});
    if (!coordinators) return coordinators.err();
    coordinators_ = std::move(*coordinators);
    auto& directory = coordinators_->directory();
    group_api_ = std::make_unique<group_api>(coordinators_->groups(), coordinators_->group_routes());
    txn_api_ = std::make_unique<txn_api>(
        coordinators_->txns(),
        [this](const topic_partition& tp) { return cluster::owner_as_seen_by(*ownership_, tp, self_); },
        [this](const std::string& topic, const std::set<std::int32_t>& partitions) {
          return produce_->owners(topic, partitions);
        });
    coordinators_->start();
    if (auto s = open_moves(); !s) return s;
    status_api_ = std::make_unique<status_api>(status_api_parts{view_.get(), cfg_.host + ":" + std::to_string(cfg_.port),
                                                                store_.get(), ownership_.get(), fence_.get(),
                                                                raft_.get(), &metrics_});
    produce_ = std::make_unique<frontend::produce_frontend>(frontend::produce_parts{
        self_, store_.get(), ownership_.get(), router_.get(), &coordinators_->txns(), &metrics_, &directory,
        io_.get_executor()});
    fetch_ = std::make_unique<frontend::fetch_frontend>(frontend::fetch_parts{
        self_, store_.get(), ownership_.get(), producers_.get(), &counters_, &metrics_, &directory});
    offsets_api_ = std::make_unique<frontend::offsets_frontend>(frontend::offsets_parts{
        self_, store_.get(), offsets_.get(), ownership_.get(), &gates_, &coordinators_->group_routes(),
        &coordinators_->groups(), &metrics_,
        {}});
    record_api_ = std::make_unique<record_api>(record_api_parts{produce_.get(), fetch_.get(), offsets_api_.get()});

    metrics_.set(cluster::metrics::build_info, {{"version", MOONMQ_VERSION}}, 1);
    metrics_.set(cluster::metrics::ab_enabled, 0);
    metrics_.set(cluster::metrics::moves_in_progress, 0);
    // Counters exist from the start at zero, so that rate() sees their first increase.
    for (const char* r : {"succeeded", "failed", "cancelled"}) metrics_.add(cluster::metrics::moves, {{"result", r}}, 0);
    metrics_.add(cluster::metrics::move_bytes, 0);
    for (auto r : {transport::refusal_reason::tls, transport::refusal_reason::malformed,
                   transport::refusal_reason::too_large, transport::refusal_reason::busy})
      metrics_.add(cluster::metrics::listener_refusals, {{"reason", transport::to_string(r)}}, 0);
    metrics_.add(cluster::metrics::forwarded_records, 0);
    metrics_.add(cluster::metrics::fence_rejections, 0);
    if (cfg_.autobalance.enabled) {
      cluster::balance_loop_options bo;
      bo.self = self_;
      for (const auto& p : cfg_.cluster->peers) bo.peers.push_back(p.id);
      bo.config = cfg_.autobalance;
      auto loop = cluster::balance_loop::create(std::move(bo), st, *peers_, *reassigner_, blocking_);
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
                                                 *journal_, *reassigner_);
    strays_ = std::make_unique<cluster::stray_reconciler>(cluster::stray_reconciler::parts{
        self_, *store_, *ownership_, *producers_, gates_, *router_, *topics_, *log_, [this](const topic_partition& tp) {
          if (reassigner_->busy(tp)) return true;
          const auto pending = journal_->pending();
          return std::any_of(pending.begin(), pending.end(), [&](const auto& m) { return m.partition == tp; });
        }});
    reconcile_api_ = std::make_unique<reconcile_api>(*strays_, *view_);

    io_thread_ = std::thread([this] { io_.run(); });
    if (raft_) raft_->start();

    if (clustered && cfg_.cluster->port) {
      transport::http_listener_options lo;
      lo.host = cfg_.cluster->host;
      lo.port = *cfg_.cluster->port;
      lo.tls = tls;
      lo.max_body_bytes = cfg_.cluster->max_body_bytes;
      lo.on_refused = [this](transport::refusal_reason why, const std::string& client, const std::string& detail) {
        refusals_.refused(listener::cluster, why, client, detail);
      };
      lo.authenticate = [svc = service_.get()](const transport::request& head) { return svc->authenticated(head); };
      auto l = transport::start_http_listener(
          lo, [svc = service_.get()](const transport::request& r) { return svc->handle(r); });
      if (!l) return error{l.code(), "cluster listener: " + l.message()};
      cluster_listener_ = std::move(*l);
      log_->info("moonmqd", "cluster endpoint on " + lo.host + ":" + std::to_string(cluster_listener_->port()) +
                                (tls ? " (TLS" + std::string(tls->verify_peer ? ", mutual)" : ")") : ""));
      // Without Raft: the topic records decided while this broker was away, from their coordinators (a peer that
      // is not up yet answers at once that it is not).
      if (!raft_) topic_api_->catch_up();
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

    if (!journal_->pending().empty()) asio::co_spawn(io_, recover_loop(), asio::detached);
    if (!move_requests_->listed().empty()) asio::co_spawn(io_, resume_moves(), asio::detached);
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
    if (store_)
      for (const auto& tp : store_->list_partitions()) (void)store_->sync(tp);
  }

 private:
  cluster::topic_directory::parts topic_parts() {
    std::vector<broker_id> brokers{self_};
    if (cfg_.cluster)
      for (const auto& p : cfg_.cluster->peers) brokers.emplace_back(p.id);
    auto strand = asio::make_strand(blocking_);
    return {self_,
            std::move(brokers),
            *store_,
            *ownership_,
            gates_,
            *log_,
            [strand](std::function<void()> work) { asio::post(strand, std::move(work)); },
            [this](const std::string& topic) { return offsets_->forget_topic(topic); }};
  }

  /// With Cluster.Raft: the replicated ownership table over the local sidecar, the Raft service, and the term as
  /// the controller fence.
  status open_raft() {
    const auto& rc = cfg_.cluster->raft;
    auto disk = raft::open_file_storage(cfg_.data_dir, *log_);
    if (!disk) return disk.err();
    raft_disk_ = std::move(*disk);
    auto table = std::make_unique<cluster::raft_ownership_table>(self_, std::move(ownership_));
    raft_table_ = table.get();
    ownership_ = std::move(table);
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
    auto svc = raft::service::open(ro, *raft_disk_, *raft_table_, *peers_, io_, raft_pool_, *log_, metrics_);
    if (!svc) return error{svc.code(), "Raft: " + svc.message()};
    raft_ = std::move(*svc);
    raft_table_->attach(*raft_);
    topics_->attach([this](raft::entry_kind k, std::string data) { return raft_->propose_blocking(k, std::move(data)); });
    fence_ = std::make_unique<cluster::raft_fence>(self_, *raft_);
    return {};
  }

  /// The cluster-wide view, the move routes, and the copy throttle: `move-throttle.json` (written by PUT
  /// /v1/reassignments/throttle) wins over Cluster.MoveThrottleBytesPerSec, so that a restart keeps what the operator
  /// last set.
  status open_moves() {
    throttle_file_ = storage::make_file_state_file(cfg_.data_dir + "/move-throttle.json");
    auto kept = throttle_file_->read();
    if (!kept) return kept.err();
    if (*kept) {
      rapidjson::Document d;
      if (!json::parse_object(**kept, d) || !d.HasMember("bytes_per_sec") || !d["bytes_per_sec"].IsUint64())
        return error{errc::corrupt, throttle_file_->name() + ": expected {\"bytes_per_sec\": N}"};
      reassigner_->set_throttle(d["bytes_per_sec"].GetUint64());
      log_->info("moonmqd", "copy throttle " + std::to_string(d["bytes_per_sec"].GetUint64()) +
                                " bytes/s, as last set through the API (" + throttle_file_->name() + ")");
    }
    std::vector<cluster::peer_config> peers;
    if (cfg_.cluster) peers = cfg_.cluster->peers;
    view_ = std::make_unique<cluster_view>(self_, peers, *peers_, [this] {
      broker_report me;
      me.partitions = cluster::collect_local_loads(*store_, counters_, *ownership_, self_, producers_.get());
      me.held_bytes = cluster::unserved_bytes(*store_, *ownership_, self_);
      me.strays = cluster::collect_strays(*store_, *ownership_);
      return me;
    });
    topic_api_ = std::make_unique<topic_api>(*topics_, *view_, *store_, [this] {
      return cluster::collect_local_loads(*store_, counters_, *ownership_, self_, producers_.get()).size();
    }, cfg_.autobalance, [this](const topic_partition& tp) { return ownership_->entry(tp); });
    cluster_api_ = std::make_unique<cluster_api>(
        *view_, [this] { return controller_id(); },
        [this] { return drain_api_ ? drain_api_->draining() : std::set<std::string>{}; },
        [this](const std::string& b) -> std::string {
          if (b == self_.value()) return drain_api_->progress_document();
          auto r = view_->ask(b, transport::get_request("/cluster/admin/drain"));
          return r.ok() ? r.body : std::string();
        });
    move_api_ = std::make_unique<move_api>(
        *view_, *reassigner_,
        [this](const topic_partition& tp, const broker_id& dest) { return start_hand_move(tp, dest, std::nullopt); },
        [this](std::uint64_t rate) { return set_throttle(rate); },
        [this](const std::string& b) { return drain_api_ && drain_api_->draining().count(b) > 0; });
    return {};
  }

  /// The controller as this broker knows it: the Raft leader, or the holder of the highest fenced claim.
  std::string controller_id() {
    if (raft_) return raft_->status().leader;
    return fence_->highest().controller.value();
  }

  /// This broker's copy throttle, applied at once and kept for the next start.
  status set_throttle(std::uint64_t rate) {
    std::lock_guard lock(throttle_mu_);
    if (auto s = throttle_file_->replace("{\"bytes_per_sec\":" + std::to_string(rate) + "}"); !s) return s;
    reassigner_->set_throttle(rate);
    return {};
  }


  /// The reassigner as the cluster routes reach it; a throttle set by a peer is kept like one set here, and a
  /// hand-driven move forwarded by a peer is kept like one asked here.
  cluster::move_control move_control() {
    auto c = cluster::move_control_of(reassigner_, io_.get_executor());
    c.set_throttle = [this](std::uint64_t rate) { return set_throttle(rate); };
    c.start = [this](topic_partition tp, broker_id dest, std::optional<cluster::controller_claim> claim) {
      return start_hand_move(tp, dest, claim);
    };
    return c;
  }

  /// Starts a move on this broker. One without a controller claim (asked by an operator, here or through a peer) is
  /// listed in move-requests.json first, so that it resumes if this broker stops before it ends.
  result<std::uint64_t> start_hand_move(const topic_partition& tp, const broker_id& dest,
                                        std::optional<cluster::controller_claim> claim) {
    // A move of it already running keeps its own record: this one is refused below and must not replace it.
    if (claim || reassigner_->busy(tp)) return reassigner_->start(io_.get_executor(), tp, dest, claim);
    if (auto s = move_requests_->add({tp, dest.value()}); !s)
      log_->warn("moonmqd", "the move of " + tp.topic + "-" + std::to_string(tp.partition) +
                                " is not kept for a restart: " + s.message());
    auto id = reassigner_->start(io_.get_executor(), tp, dest, claim);
    if (!id) (void)move_requests_->remove(tp);  // refused: nothing to resume
    return id;
  }

  /// Moves a stop cut short, started again once this broker knows what it serves (under Raft: caught up with the log)
  /// and the journal's own move of the partition, if any, is resolved. A record is dropped only when another broker
  /// serves the partition by then; otherwise it waits (every 5 s) until one of those holds.
  asio::awaitable<void> resume_moves() {
    std::set<topic_partition> started;  // resumed: their records stay until their moves end
    while (!stopped_) {
      (void)co_await reassigner_->recover();
      for (const auto& [tp, m] : move_requests_->listed()) {
        if (started.count(tp)) continue;
        const std::string name = tp.topic + "-" + std::to_string(tp.partition);
        if (!ownership_->ready() || reassigner_->busy(tp)) continue;  // not yet
        auto e = cluster::entry_as_seen_by(*ownership_, tp, self_);
        auto count = store_->partition_count(tp.topic);
        const bool here = count.ok() && tp.partition < *count && cluster::serves(*ownership_, tp, self_);
        if (!here && e.owner != self_) {
          log_->info("moonmqd", "the interrupted move of " + name + " to " + m.dest + " is not resumed: " +
                                    e.owner.value() + " serves it now");
          co_await offload(blocking_, [&] { return move_requests_->remove(tp); });
          continue;
        }
        if (!here) continue;  // in handover to this broker: wait until it is decided
        auto id = reassigner_->start(io_.get_executor(), tp, broker_id(m.dest));
        if (id) {
          started.insert(tp);
          log_->info("moonmqd", "resuming the interrupted move of " + name + " to " + m.dest + " (move " +
                                    std::to_string(*id) + ")");
        } else {
          log_->warn("moonmqd",
                     "the interrupted move of " + name + " to " + m.dest + " did not restart: " + id.message());
          if (id.code() != errc::conflict) co_await offload(blocking_, [&] { return move_requests_->remove(tp); });
        }
      }
      bool waiting = false;
      for (const auto& [tp, m] : move_requests_->listed()) waiting = waiting || !started.count(tp);
      if (!waiting) co_return;
      asio::steady_timer t(io_, std::chrono::seconds(5));
      co_await t.async_wait(asio::use_awaitable);
    }
  }

  cluster::cluster_state state() {
    return {*store_, *offsets_, *ownership_, *fence_, counters_, gates_, *producers_, *log_, metrics_};
  }

  /// Without Raft: every 5 s, the topic records of every coordinator, so that a broker that missed a tell (dropped,
  /// or the coordinator stopped between deciding and telling) does not act on an older record until its next start.
  asio::awaitable<void> topic_catch_up_loop() {
    while (!stopped_) {
      asio::steady_timer t(io_, std::chrono::seconds(5));
      co_await t.async_wait(asio::use_awaitable);
      if (stopped_) co_return;
      co_await offload(blocking_, [this] {
        topic_api_->catch_up();
        return true;
      });
    }
  }

  asio::awaitable<void> recover_loop() {
    for (int attempt = 0; !stopped_; ++attempt) {
      std::size_t left = co_await reassigner_->recover();
      if (left == 0) co_return;
      asio::steady_timer t(io_, std::chrono::seconds(5));
      co_await t.async_wait(asio::use_awaitable);
    }
  }

  cluster::server_config cfg_;
  data_dir_lock dir_lock_;  ///< first member after the config: released last
  daemon::client_auth client_auth_{cfg_.auth};
  std::shared_ptr<logger> log_;
  broker_id self_;
  std::unique_ptr<storage::partition_store> store_;
  std::unique_ptr<cluster::producer_states> producers_;  ///< every append to a served partition passes it
  std::unique_ptr<storage::offset_store> offsets_;
  std::unique_ptr<cluster::ownership_table> ownership_;
  std::unique_ptr<cluster::controller_fence> fence_;
  std::unique_ptr<cluster::move_journal> journal_;
  cluster::traffic counters_;
  cluster::partition_gates gates_;
  prometheus_sink metrics_;
  listener_refusals refusals_{*log_, metrics_};
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
  asio::thread_pool blocking_{4};
  asio::thread_pool raft_pool_{1};
  std::unique_ptr<transport::transport> transport_;
  std::unique_ptr<cluster::peer_client> peers_;
  std::unique_ptr<cluster::cluster_service> service_;
  std::unique_ptr<cluster::router> router_;
  std::unique_ptr<coordinators> coordinators_;
  std::unique_ptr<group_api> group_api_;
  std::unique_ptr<txn_api> txn_api_;
  std::unique_ptr<cluster::reassigner> reassigner_;
  std::unique_ptr<move_requests> move_requests_;
  std::unique_ptr<storage::state_file> throttle_file_;
  std::mutex throttle_mu_;
  std::unique_ptr<cluster_view> view_;
  std::unique_ptr<frontend::produce_frontend> produce_;
  std::unique_ptr<frontend::fetch_frontend> fetch_;
  std::unique_ptr<frontend::offsets_frontend> offsets_api_;
  std::unique_ptr<record_api> record_api_;
  std::unique_ptr<status_api> status_api_;
  std::unique_ptr<move_api> move_api_;
  std::unique_ptr<cluster_api> cluster_api_;
  std::unique_ptr<cluster::topic_directory> topics_;
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
