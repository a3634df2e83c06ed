#include "moonmq/frontend/move_requests.hpp"

#include <algorithm>

#include "cluster/wire_json.hpp"
#include "moonmq/cluster/peer_fanout.hpp"
#include "moonmq/core/topic_name.hpp"

namespace moonmq::frontend {

outcome<started_move> move_requests::start(const topic_partition& tp, const broker_id& dest) {
  const std::string name = tp.topic + "-" + std::to_string(tp.partition);
  if (is_internal_topic(tp.topic)) return error{errc::invalid_argument, "internal topics (" + tp.topic + ") never move"};
  if (dest != p_.self && std::find(p_.peers.begin(), p_.peers.end(), dest.value()) == p_.peers.end())
    return error{errc::not_found, "unknown broker '" + dest.value() + "': not this broker nor a configured peer"};
  // Who serves it and who has a log of it, by every broker's own report.
  std::vector<std::string> servers, logs;
  auto note = [&](const std::string& broker, const std::vector<cluster::partition_load>& served,
                  const std::vector<cluster::partition_load>& strays) {
    auto is_tp = [&](const cluster::partition_load& l) { return l.partition == tp; };
    const bool serves = std::any_of(served.begin(), served.end(), is_tp);
    if (serves) servers.push_back(broker);
    if (serves || std::any_of(strays.begin(), strays.end(), is_tp)) logs.push_back(broker);
  };
  note(p_.self.value(), p_.served(), p_.strays());
  for (const auto& r : cluster::ask_reports_now(*p_.client, p_.peers))
    if (r.answered) note(r.broker, r.partitions, r.strays);
  if (logs.size() > 1) {
    std::string names;
    for (const auto& b : logs) names += (names.empty() ? "" : " and ") + b;
    return error{errc::conflict, name + " has more than one log in the cluster, on " + names +
                                     ": a move would keep one and drop the other's records; keep the one you want "
                                     "(docs/cluster.md, \"Strays\")"};
  }
  if (servers.empty())
    return error{errc::not_found, "no reachable broker serves " + name +
                                      " (unknown topic or partition, or its owner does not answer)"};
  const broker_id source(servers.front());
  if (source == dest) return error{errc::conflict, name + " is already on " + dest.value()};
  if (p_.draining(dest.value()))
    return error{errc::conflict, dest.value() + " is draining: nothing moves onto it until it is undrained"};
  if (source == p_.self) {
    auto id = p_.start_here(tp, dest);
    if (!id) return id.err();
    return started_move{*id, source};
  }
  transport::request fwd;  // hand-driven, so not fenced: the owner runs it as if asked directly
  fwd.path = "/cluster/reassign";
  fwd.body = cluster::wire::move_request_body({tp, dest.value()});
  auto answer = cluster::ask_now(*p_.client, source.value(), fwd);
  if (answer.status == 0)
    return error{errc::unavailable, source.value() + ", which serves " + name + ", did not answer"};
  auto id = cluster::wire::read_move_started(answer);
  if (!id) return id.err();
  return started_move{*id, source};
}

}  // namespace moonmq::frontend
