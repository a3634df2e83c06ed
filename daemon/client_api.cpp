#include "client_api.hpp"

#include <algorithm>
#include <set>

#include <rapidjson/document.h>

#include "api_routes.hpp"
#include "balancer_api.hpp"
#include "broker_metrics.hpp"
#include "client_listener.hpp"
#include "cluster_api.hpp"
#include "cluster_view.hpp"
#include "drain_api.hpp"
#include "group_api.hpp"
#include "kafka_api.hpp"
#include "json/object_reader.hpp"
#include "json/parse.hpp"
#include "json/writer.hpp"
#include "kafka_listener.hpp"
#include "moonmq/cluster/local_loads.hpp"
#include "moonmq/cluster/stray_reconciler.hpp"
#include "moonmq/frontend/fetch.hpp"
#include "moonmq/frontend/http_topic_peers.hpp"
#include "moonmq/frontend/move_requests.hpp"
#include "moonmq/frontend/offsets.hpp"
#include "moonmq/frontend/produce.hpp"
#include "moonmq/frontend/topic_admin.hpp"
#include "moonmq/frontend/transactions.hpp"
#include "moonmq/storage/file_state_file.hpp"
#include "move_api.hpp"
#include "peer_watch.hpp"
#include "reclaim_api.hpp"
#include "reconcile_api.hpp"
#include "record_api.hpp"
#include "status_api.hpp"
#include "topic_api.hpp"
#include "txn_api.hpp"

namespace moonmq::daemon {

struct client_api::impl {
  explicit impl(client_api_parts parts) : p(std::move(parts)) {}
  client_api_parts p;
  std::unique_ptr<cluster_view> view;
  std::unique_ptr<frontend::produce_frontend> produce;
  std::unique_ptr<frontend::fetch_frontend> fetch;
  std::unique_ptr<frontend::offsets_frontend> offsets;
  std::unique_ptr<frontend::http_topic_peers> topic_peers;
  std::unique_ptr<frontend::topic_admin> topic_admin;
  std::unique_ptr<frontend::move_requests> move_requests;
  std::unique_ptr<frontend::transactions_frontend> txns;
  std::unique_ptr<cluster::stray_reconciler> strays;
  std::unique_ptr<cluster_lists> lists;
  std::unique_ptr<group_api> groups;
  std::unique_ptr<txn_api> transactions;
  std::unique_ptr<record_api> records;
  std::unique_ptr<status_api> status;
  std::unique_ptr<topic_api> topics;
  std::unique_ptr<move_api> moves;
  std::unique_ptr<cluster_api> cluster;
  std::unique_ptr<balancer_api> balancer;
  std::unique_ptr<drain_api> drain;
  std::unique_ptr<reclaim_api> reclaim;
  std::unique_ptr<reconcile_api> reconcile;
  std::unique_ptr<peer_watch> watch;
  api_routes routes;
  std::unique_ptr<transport::http_listener> listener;
  std::unique_ptr<kafka_api> kafka;
  std::unique_ptr<kafka_listener> kafka_server;
};

client_api::client_api(client_api_parts p) : m_(std::make_unique<impl>(std::move(p))) {}

client_api::~client_api() {
  stop_listener();
  stop_executors();
}

result<std::unique_ptr<client_api>> client_api::open(client_api_parts parts) {
  std::unique_ptr<client_api> api(new client_api(std::move(parts)));
  if (auto s = api->build(); !s) return s.err();
  return api;
}

std::vector<cluster::partition_load> client_api::local_loads() const {
  const auto& p = m_->p;
  return cluster::collect_local_loads(*p.disk->store, p.state.counters, *p.disk->ownership, p.self,
                                      p.disk->producers.get());
}

status client_api::build() {
  auto& m = *m_;
  const auto& p = m.p;
  broker_disk& disk = *p.disk;
  const std::string& dir = p.cfg->data_dir;
  std::vector<cluster::peer_config> peers;
  if (p.cfg->cluster) peers = p.cfg->cluster->peers;
  m.view = std::make_unique<cluster_view>(p.self, peers, *p.link->peers, [this, &disk] {
    broker_report me;
    me.partitions = local_loads();
    me.held_bytes = cluster::unserved_bytes(*disk.store, *disk.ownership, m_->p.self);
    me.strays = cluster::collect_strays(*disk.store, *disk.ownership);
    return me;
  });
  auto is_draining = [this](const std::string& b) { return m_->drain && m_->drain->draining().count(b) > 0; };

  // The front ends.
  auto& directory = p.coordination->directory();
  m.produce = std::make_unique<frontend::produce_frontend>(frontend::produce_parts{
      p.self, disk.store.get(), disk.ownership.get(), p.router, &p.coordination->txns(), p.metrics, &directory, p.io});
  m.fetch = std::make_unique<frontend::fetch_frontend>(frontend::fetch_parts{
      p.self, disk.store.get(), disk.ownership.get(), disk.producers.get(), &p.state.counters, p.metrics, &directory});
  m.offsets = std::make_unique<frontend::offsets_frontend>(frontend::offsets_parts{p.self,
                                                                                   disk.store.get(),
                                                                                   disk.offsets.get(),
                                                                                   disk.ownership.get(),
                                                                                   &p.state.gates,
                                                                                   &p.coordination->group_routes(),
                                                                                   &p.coordination->groups(),
                                                                                   p.metrics,
                                                                                   {},
                                                                                   p.link->peers.get(),
                                                                                   p.link->peer_ids,
                                                                                   &directory});
  m.topic_peers = std::make_unique<frontend::http_topic_peers>(*p.link->peers, p.link->peer_ids);
  frontend::topic_admin_parts tp{p.self,
                                 {},
                                 p.topics,
                                 disk.store.get(),
                                 m.topic_peers.get(),
                                 [this] { return local_loads(); },
                                 [&disk](const topic_partition& t) { return disk.ownership->entry(t); },
                                 p.cfg->autobalance};
  for (const auto& id : p.link->peer_ids) tp.peers.emplace_back(id);
  m.topic_admin = std::make_unique<frontend::topic_admin>(std::move(tp));
  m.move_requests = std::make_unique<frontend::move_requests>(frontend::move_request_parts{
      p.self, p.link->peer_ids, p.link->peers.get(), [this] { return local_loads(); },
      [&disk] { return cluster::collect_strays(*disk.store, *disk.ownership); },
      [this](const topic_partition& t, const broker_id& dest) { return m_->p.hand_moves->start(t, dest); },
      is_draining});
  m.txns = std::make_unique<frontend::transactions_frontend>(frontend::transactions_parts{
      &p.coordination->txns(),
      [this, &disk](const topic_partition& t) { return cluster::owner_as_seen_by(*disk.ownership, t, m_->p.self); },
      [this](const std::string& topic, const std::set<std::int32_t>& partitions) {
        return m_->produce->owners(topic, partitions);
      }});
  m.strays = std::make_unique<cluster::stray_reconciler>(cluster::stray_reconciler::parts{
      p.self, *disk.store, *disk.ownership, *disk.producers, p.state.gates, *p.router, *p.topics, *p.log,
      [this, &disk](const topic_partition& t) {
        if (m_->p.reassigner->busy(t)) return true;
        const auto pending = disk.journal->pending();
        return std::any_of(pending.begin(), pending.end(), [&](const auto& mv) { return mv.partition == t; });
      }});

  // The routes over them, and the operator's.
  m.lists = std::make_unique<cluster_lists>(*m.view);
  m.groups = std::make_unique<group_api>(p.coordination->group_routes(), *m.lists);
  m.transactions = std::make_unique<txn_api>(*m.txns, *m.lists);
  m.records = std::make_unique<record_api>(record_api_parts{m.produce.get(), m.fetch.get(), m.offsets.get()});
  m.status = std::make_unique<status_api>(
      status_api_parts{m.view.get(), p.cfg->host + ":" + std::to_string(p.cfg->port), disk.store.get(),
                       disk.ownership.get(), disk.fence.get(), p.raft, p.metrics});
  m.topics = std::make_unique<topic_api>(*m.topic_admin, p.self);
  m.moves = std::make_unique<move_api>(*m.view, *p.reassigner, *m.move_requests,
                                       [this](std::uint64_t rate) { return m_->p.throttle->set(rate); });
  m.cluster = std::make_unique<cluster_api>(
      *m.view, p.controller_id, [this] { return m_->drain ? m_->drain->draining() : std::set<std::string>{}; },
      [this](const std::string& b) -> std::string {
        if (b == m_->p.self.value()) return m_->drain->progress_document();
        auto r = m_->view->ask(b, transport::get_request("/cluster/admin/drain"));
        return r.ok() ? r.body : std::string();
      });
  auto bapi = balancer_api::open(*m.view, p.balancer, p.cfg->autobalance,
                                 storage::make_file_state_file(dir + "/autobalancer-state.json"), p.controller_id);
  if (!bapi) return bapi.err();
  m.balancer = std::move(*bapi);
  cluster::drain_options dopt;
  dopt.self = p.self;
  dopt.wall_ms = [rt = p.rt] { return rt->wall_ms(); };
  dopt.max_moves = p.cfg->autobalance.max_moves_per_broker;
  dopt.excluded = {p.cfg->autobalance.excluded_brokers.begin(), p.cfg->autobalance.excluded_brokers.end()};
  // What every broker serves, as the view gathers it (this broker's own report included).
  auto reports = [view = m.view.get()] {
    std::vector<cluster::peer_report> out;
    for (auto& b : view->brokers()) {
      cluster::peer_report r;
      r.broker = b.id;
      r.answered = b.reachable;
      r.silence = b.error;
      r.partitions = std::move(b.partitions);
      out.push_back(std::move(r));
    }
    return out;
  };
  auto drains = cluster::drain_executor::open(dopt, *p.reassigner, p.io, p.balancer,
                                              storage::make_file_state_file(dir + "/drain-state.json"), reports, *p.log);
  if (!drains) return drains.err();
  m.drain = std::make_unique<drain_api>(std::move(*drains), *m.view, *p.rt);
  m.watch = std::make_unique<peer_watch>(*m.view, *p.log, *p.rt);
  cluster::reclaim_options ropt;
  ropt.self = p.self;
  ropt.steady_ms = [rt = p.rt] { return rt->steady_ms(); };
  ropt.after_seconds = p.cfg->cluster ? p.cfg->cluster->reclaim_after_seconds : 0;
  for (const auto& peer : m.view->peers()) ropt.peers.push_back(peer.id);
  m.reclaim = std::make_unique<reclaim_api>(
      std::make_unique<cluster::reclaim_executor>(ropt, p.state, *disk.journal, *p.reassigner, *p.link->peers), *m.view,
      *p.rt);
  m.reconcile = std::make_unique<reconcile_api>(*m.strays, *m.view);
  if (p.cfg->kafka)
    m.kafka = std::make_unique<kafka_api>(kafka_api_parts{
        p.cfg, p.self, disk.store.get(), disk.ownership.get(), &directory, m.produce.get(), m.fetch.get(),
        m.topic_admin.get(), m.txns.get(), p.controller_id, [this] { return peer_kafka_addresses(); },
        &p.coordination->group_routes(), m.offsets.get()});

  m.groups->routes(m.routes);
  m.transactions->routes(m.routes);
  m.status->routes(m.routes);
  m.records->routes(m.routes);
  m.topics->routes(m.routes);
  m.moves->routes(m.routes);
  m.cluster->routes(m.routes);
  m.balancer->routes(m.routes);
  m.drain->routes(m.routes);
  m.reclaim->routes(m.routes);
  m.reconcile->routes(m.routes);
  seed_counters(*p.metrics);
  return {};
}

transport::response client_api::handle_admin(const transport::request& r) {
  auto& m = *m_;
  if (r.path.starts_with("/cluster/admin/topics/")) return m.topics->handle_cluster(r);
  if (r.path == "/cluster/admin/drain") return m.drain->handle_cluster(r);
  if (r.path == "/cluster/admin/reclaim") return m.reclaim->handle_cluster(r);
  if (r.path == "/cluster/admin/strays") return m.reconcile->handle_cluster(r);
  if (r.path == "/cluster/admin/kafka") return kafka_address();
  if (r.path == "/cluster/admin/offsets") return m.offsets->handle_cluster(r);
  return m.balancer->handle_cluster(r);
}

transport::response client_api::kafka_address() const {
  const auto& k = m_->p.cfg->kafka;
  if (!k) return transport::error_response(404, "not_found", "this broker has no Kafka listener");
  return {200, json::object([&](json::writer& w) {
            json::put(w, "host", k->advertised_host);
            json::put(w, "port", static_cast<std::uint64_t>(k->advertised_port));
          }),
          "application/json"};
}

std::map<std::string, std::string> client_api::peer_kafka_addresses() const {
  std::map<std::string, std::string> out;
  for (const auto& a : m_->view->ask_peers(transport::get_request("/cluster/admin/kafka"))) {
    if (a.response.status != 200) continue;
    rapidjson::Document d;
    if (!json::parse_object(a.response.body, d)) continue;
    json::object_reader r(d, "");
    std::string host;
    std::uint32_t port = 0;
    r.get("host", host, true);
    r.get("port", port, true);
    if (r.finish() && !host.empty() && port >= 1 && port <= 65535) out[a.broker] = host + ":" + std::to_string(port);
  }
  return out;
}

void client_api::catch_up_topics() { m_->topic_admin->catch_up(); }

status client_api::listen(const client_auth& auth, listener_refusals& refusals) {
  auto l = start_client_listener({m_->p.cfg, &auth, &m_->routes, m_->p.metrics, &refusals});
  if (!l) return l.err();
  m_->listener = std::move(*l);
  if (m_->kafka) {
    auto k = kafka_listener::start(*m_->p.cfg, *m_->kafka);
    if (!k) return k.err();
    m_->kafka_server = std::move(*k);
  }
  return {};
}

std::uint16_t client_api::kafka_port() const { return m_->kafka_server ? m_->kafka_server->port() : 0; }

std::uint16_t client_api::port() const { return m_->listener ? m_->listener->port() : 0; }

void client_api::stop_listener() {
  if (m_->kafka_server) m_->kafka_server->stop();
  if (m_->listener) m_->listener->stop();
}

void client_api::stop_executors() {
  m_->drain.reset();  // its thread starts moves: gone before the reactor stops
  m_->reclaim.reset();
  m_->watch.reset();
}

}  // namespace moonmq::daemon
