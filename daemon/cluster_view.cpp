#include "cluster_view.hpp"


namespace moonmq::daemon {

namespace {

std::vector<std::string> ids_of(const std::vector<cluster::peer_config>& peers) {
  std::vector<std::string> ids;
  for (const auto& p : peers) ids.push_back(p.id);
  return ids;
}

}  // namespace

bool cluster_view::is_peer(const std::string& id) const {
  for (const auto& p : peers_)
    if (p.id == id) return true;
  return false;
}

transport::response cluster_view::ask(const std::string& peer, const transport::request& req) const {
  return cluster::ask_now(client_, peer, req);
}

std::vector<peer_answer> cluster_view::ask_peers(const transport::request& req) const {
  return cluster::ask_each_now(client_, ids_of(peers_), req);
}

fanout_result cluster_view::apply_everywhere(const status& here, const transport::request& req) const {
  fanout_result out;
  if (here)
    out.applied.push_back(self_.value());
  else
    out.failed.emplace_back(self_.value(), here.message());
  for (const auto& a : ask_peers(req)) {
    if (a.response.ok())
      out.applied.push_back(a.broker);
    else
      out.failed.emplace_back(a.broker, describe_answer(a.response));
  }
  return out;
}

std::vector<broker_report> cluster_view::brokers() const {
  std::vector<broker_report> out;
  broker_report me = local_();
  me.id = self_.value();
  me.self = true;
  me.reachable = true;
  out.push_back(std::move(me));
  auto reports = cluster::ask_reports_now(client_, ids_of(peers_));
  for (std::size_t i = 0; i < reports.size(); ++i) {
    auto& r = reports[i];
    out.push_back({r.broker, peers_[i].host + ":" + std::to_string(peers_[i].port), false, r.answered, r.silence,
                   std::move(r.partitions), r.held_bytes, std::move(r.strays)});
  }
  return out;
}

}  // namespace moonmq::daemon
