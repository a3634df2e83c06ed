#include "moonmq/frontend/http_topic_peers.hpp"

#include "cluster/wire_owner.hpp"
#include "frontend/topic_wire.hpp"
#include "moonmq/cluster/peer_fanout.hpp"

namespace moonmq::frontend {

std::vector<topic_holding> http_topic_peers::holdings(const std::string& name, std::uint32_t partitions) {
  transport::request q = transport::get_request("/cluster/admin/topics/holds");
  q.params["name"] = name;
  if (partitions > 0) q.params["partitions"] = std::to_string(partitions);
  std::vector<topic_holding> out;
  for (const auto& a : cluster::ask_each_now(client_, peers_, q))
    out.push_back(wire::read_topic_holding(broker_id(a.broker), a.response));
  return out;
}

outcome<topic_decision> http_topic_peers::forward(const broker_id& coordinator, const topic_admin_request& r) {
  transport::request fwd;
  fwd.path = "/cluster/admin/topics/change";
  fwd.body = wire::topic_change_request_body(r);
  auto answer = cluster::ask_now(client_, coordinator.value(), fwd);
  if (answer.status == 0)
    return error{errc::unavailable, "topic '" + r.name + "' is decided by its coordinator " + coordinator.value() +
                                        ", which does not answer: no change to it can be made now (" + answer.body + ")"};
  if (!answer.ok()) return wire::read_topic_refusal(answer);
  auto d = wire::read_topic_decision(answer.body);
  if (!d) return error{errc::internal, coordinator.value() + " answered a topic change with an unreadable decision: " +
                                           d.message()};
  return std::move(*d);
}

std::vector<std::string> http_topic_peers::tell(const cluster::topic_record& r) {
  transport::request tell;
  tell.path = "/cluster/admin/topics/learn";
  tell.body = cluster::wire::topic_record_body(r);
  std::vector<std::string> missed;
  for (const auto& a : cluster::ask_each_now(client_, peers_, tell))
    if (!a.response.ok()) missed.push_back(a.broker);
  return missed;
}

std::vector<std::pair<broker_id, cluster::topic_catalog>> http_topic_peers::catalogs() {
  std::vector<std::pair<broker_id, cluster::topic_catalog>> out;
  for (const auto& a : cluster::ask_each_now(client_, peers_, transport::get_request("/cluster/admin/topics/catalog"))) {
    rapidjson::Document d;
    if (!a.response.ok() || !json::parse_object(a.response.body, d)) continue;
    if (auto c = cluster::wire::read_catalog(d, a.broker)) out.emplace_back(broker_id(a.broker), std::move(*c));
  }
  return out;
}

std::vector<peer_serving> http_topic_peers::serving() {
  std::vector<peer_serving> out;
  for (auto& r : cluster::ask_reports_now(client_, peers_))
    out.push_back({broker_id(r.broker), r.answered, std::move(r.silence), std::move(r.partitions)});
  return out;
}

result<std::optional<cluster::ownership_entry>> http_topic_peers::own_entry(const broker_id& peer,
                                                                             const topic_partition& tp) {
  transport::request q = transport::get_request("/cluster/owner");
  q.params = {{"topic", tp.topic}, {"partition", std::to_string(tp.partition)}};
  auto report = cluster::wire::read_owner_report(cluster::ask_now(client_, peer.value(), q), tp);
  if (!report) return report.err();
  return report->entry;
}

status http_topic_peers::claim(const broker_id& peer, const topic_claim& c) {
  transport::request q;
  q.path = "/cluster/admin/topics/claim";
  q.body = wire::topic_claim_body(c);
  auto a = cluster::ask_now(client_, peer.value(), q);
  if (a.ok()) return {};
  return wire::read_topic_refusal(a).err;
}

}  // namespace moonmq::frontend
