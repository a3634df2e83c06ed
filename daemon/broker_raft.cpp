#include "broker_raft.hpp"

#include "moonmq/raft/file_storage.hpp"
#include "moonmq/storage/file_state_file.hpp"

namespace moonmq::daemon {

status broker_raft::open(const cluster::server_config& cfg, const broker_id& self, broker_disk& broker,
                         const std::function<cluster::topic_directory::parts()>& topic_parts,
                         std::unique_ptr<cluster::topic_directory>& topics, transport::peer_client& peers,
                         asio::io_context& io, asio::thread_pool& pool, runtime& rt, logger& log, metrics_sink& metrics) {
  const auto& rc = cfg.cluster->raft;
  auto d = raft::open_file_storage(cfg.data_dir, log);
  if (!d) return d.err();
  disk = std::move(*d);
  auto replicated = std::make_unique<cluster::raft_ownership_table>(self, std::move(broker.ownership));
  table = replicated.get();
  broker.ownership = std::move(replicated);
  auto t = cluster::topic_directory::replicated(topic_parts(),
                                                storage::make_file_state_file(cfg.data_dir + "/topic-logs.json"));
  if (!t) return t.err();
  topics = std::move(*t);
  table->attach_topics(*topics);
  raft::service_options ro;
  ro.self = self.value();
  for (const auto& p : cfg.cluster->peers) ro.peers.push_back(p.id);
  ro.heartbeat = std::chrono::milliseconds(rc.heartbeat_ms);
  ro.tick = std::chrono::milliseconds(std::max<std::uint32_t>(5, rc.heartbeat_ms / 10));
  ro.election_min = std::chrono::milliseconds(rc.election_timeout_min_ms);
  ro.election_max = std::chrono::milliseconds(rc.election_timeout_max_ms);
  ro.max_log_entries = rc.max_log_entries;
  ro.propose_timeout = std::chrono::milliseconds(static_cast<long>(cfg.cluster->peer_timeout_seconds * 1000));
  ro.rt = &rt;
  auto svc = raft::service::open(ro, *disk, *table, peers, io, pool, log, metrics);
  if (!svc) return error{svc.code(), "Raft: " + svc.message()};
  service = std::move(*svc);
  table->attach(*service);
  topics->attach(
      [s = service.get()](raft::entry_kind k, std::string data) { return s->propose_blocking(k, std::move(data)); });
  broker.fence = std::make_unique<cluster::raft_fence>(self, *service);
  return {};
}

}  // namespace moonmq::daemon
