#include "broker.hpp"

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/strand.hpp>
#include <asio/thread_pool.hpp>

#include <atomic>
#include <set>
#include <thread>
#include <utility>

#include "broker_disk.hpp"
#include "broker_raft.hpp"
#include "client_api.hpp"
#include "client_auth.hpp"
#include "cluster/topic_json.hpp"
#include "cluster_link.hpp"
#include "cluster_listener.hpp"
#include "coordinators.hpp"
#include "listener_refusals.hpp"
#include "moonmq/cluster/balance_loop.hpp"
#include "moonmq/cluster/cluster_metrics.hpp"
#include "moonmq/cluster/cluster_service.hpp"
#include "moonmq/cluster/hand_moves.hpp"
#include "moonmq/cluster/move_journal.hpp"
#include "moonmq/cluster/raft_ownership_table.hpp"
#include "moonmq/cluster/reassigner.hpp"
#include "moonmq/cluster/router.hpp"
#include "moonmq/cluster/topic_directory.hpp"
#include "moonmq/core/offload.hpp"
#include "moonmq/core/runtime_sleep.hpp"
#include "moonmq/core/system_runtime.hpp"
#include "moonmq/raft/service.hpp"
#include "moonmq/storage/file_state_file.hpp"
#include "moonmq/transport/http_transport.hpp"
#include "move_throttle.hpp"
#include "prometheus_sink.hpp"

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
      if (auto s = raft_.open(
              cfg_, self_, disk_, [this] { return topic_parts(); }, topics_, *link_.peers, io_, raft_pool_, runtime_,
              *log_, metrics_);
          !s)
        return s;
    if (!topics_) {
      auto t = cluster::topic_directory::open(topic_parts(), storage::make_file_state_file(dir + "/topics.json"),
                                              storage::make_file_state_file(dir + "/topic-logs.json"));
      if (!t) return t.err();
      topics_ = std::move(*t);
    }
    cluster::cluster_state st = state();
    service_ = std::make_unique<cluster::cluster_service>(
        cluster::cluster_service_options{
            self_, link_.token, link_.peer_tokens, clustered ? cfg_.cluster->max_body_bytes : (64u << 20),
            move_control(),
            raft_.service ? std::function<transport::response(const transport::request&)>(
                                [this](const transport::request& r) { return raft_.service->handle(r); })
                          : nullptr,
            peer_ids, tls && tls->verify_peer,
            [this](const transport::request& r) { return coordinators_->group_routes().handle_cluster(r); },
            [this](const transport::request& r) { return coordinators_->txns().handle_cluster(r); },
            [this](const transport::request& r) { return client_->handle_admin(r); },
            [this](const std::string& t, std::int32_t n, const std::optional<cluster::topic_record>& theirs) {
              return topics_->ensure_listed(t, n, theirs);
            }},
        st);
    router_ = std::make_unique<cluster::router>(st, *link_.peers, runtime_);
    cluster::reassigner_options ro;
    ro.rt = &runtime_;
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
                                          storage::make_file_state_file(dir + "/move-requests.json"),
                                          storage::make_file_state_file(dir + "/move-history.json"));
    if (!hand) return hand.err();
    hand_moves_ = std::move(*hand);
    std::vector<broker_id> brokers{self_};
    for (const auto& p : peer_ids) brokers.emplace_back(p);
    auto coordinators = coordinators::open({&cfg_, self_, brokers, st, link_.peers.get(), blocking_.get_executor(),
                                            [this] { return local_loads(); }, log_, &metrics_, &runtime_,
                                            topics_.get()});
    if (!coordinators) return coordinators.err();
    coordinators_ = std::move(*coordinators);
    coordinators_->start();
    auto throttle =
        move_throttle::open(storage::make_file_state_file(dir + "/move-throttle.json"), *reassigner_, *log_);
    if (!throttle) return throttle.err();
    throttle_ = std::move(*throttle);
    if (cfg_.autobalance.enabled) {
      cluster::balance_loop_options bo;
      bo.self = self_;
      for (const auto& p : cfg_.cluster->peers) bo.peers.push_back(p.id);
      bo.config = cfg_.autobalance;
      bo.rt = &runtime_;
      auto loop = cluster::balance_loop::create(std::move(bo), st, *link_.peers, *reassigner_, blocking_);
      if (!loop) return loop.err();
      balancer_ = std::move(*loop);
    }
    auto client =
        client_api::open({&cfg_, self_, &disk_, &link_, st, &metrics_, log_.get(), topics_.get(), router_.get(),
                          reassigner_.get(), hand_moves_.get(), throttle_.get(), coordinators_.get(), balancer_.get(),
                          raft_.service.get(), io_.get_executor(), [this] { return controller_id(); }, &runtime_});
    if (!client) return client.err();
    client_ = std::move(*client);

    io_thread_ = std::thread([this] { io_.run(); });
    if (raft_.service) raft_.service->start();

    if (clustered && cfg_.cluster->port) {
      auto l = start_cluster_listener(cfg_, tls, *service_, refusals_, *log_);
      if (!l) return l.err();
      cluster_listener_ = std::move(*l);
      // Without Raft: the topic records decided while this broker was away, from their coordinators (a peer that
      // is not up yet answers at once that it is not).
      if (!raft_.service) client_->catch_up_topics();
    }

    if (auto s = client_->listen(client_auth_, refusals_); !s) return s;
    log_->info("moonmqd", "broker " + self_.value() + " serving clients on " + cfg_.host + ":" +
                              std::to_string(client_->port()) + ", data in " + cfg_.data_dir);
    if (cfg_.kafka)
      log_->info("moonmqd", "Kafka listener on " + cfg_.kafka->host + ":" + std::to_string(client_->kafka_port()) +
                                ", advertised as " + cfg_.kafka->advertised_host + ":" +
                                std::to_string(cfg_.kafka->advertised_port));

    if (hand_moves_->anything_to_recover()) asio::co_spawn(io_, hand_moves_->recover(), asio::detached);
    if (!raft_.service && cfg_.cluster) asio::co_spawn(io_, topic_catch_up_loop(), asio::detached);
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
    if (client_) client_->stop_listener();
    if (cluster_listener_) cluster_listener_->stop();
    if (client_) client_->stop_executors();  // the drain's thread starts moves: gone before the reactor stops
    if (coordinators_) coordinators_->stop();
    if (balancer_) balancer_->stop();
    if (raft_.service) raft_.service->stop();
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

  /// The partitions this broker serves, with their sizes and rates.
  std::vector<cluster::partition_load> local_loads() {
    return cluster::collect_local_loads(*disk_.store, counters_, *disk_.ownership, self_, disk_.producers.get());
  }

  /// The controller as this broker knows it: the Raft leader, or the holder of the highest fenced claim.
  std::string controller_id() {
    if (raft_.service) return raft_.service->status().leader;
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
    return {*disk_.store,     *disk_.offsets, *disk_.ownership, *disk_.fence, counters_, gates_,
            *disk_.producers, *log_,          metrics_};
  }

  /// Without Raft: every 5 s, the topic records of every coordinator, so that a broker that missed a tell (dropped,
  /// or the coordinator stopped between deciding and telling) does not act on an older record until its next start.
  asio::awaitable<void> topic_catch_up_loop() {
    while (!stopped_) {
      co_await sleep_on(runtime_, std::chrono::seconds(5));
      if (stopped_) co_return;
      co_await offload(blocking_, [this] {
        client_->catch_up_topics();
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
  system_runtime runtime_{io_};  ///< its jobs are stopped by their owners, declared after it
  cluster_link link_;
  std::unique_ptr<cluster::cluster_service> service_;
  std::unique_ptr<cluster::router> router_;
  std::unique_ptr<coordinators> coordinators_;
  std::unique_ptr<cluster::reassigner> reassigner_;
  std::unique_ptr<cluster::hand_moves> hand_moves_;
  std::unique_ptr<move_throttle> throttle_;
  std::unique_ptr<cluster::topic_directory> topics_;
  std::unique_ptr<cluster::balance_loop> balancer_;
  broker_raft raft_;
  std::unique_ptr<transport::http_listener> cluster_listener_;
  std::unique_ptr<client_api> client_;  ///< after what it is built over: gone first
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
