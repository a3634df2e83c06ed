#include "cluster_view.hpp"

#include <future>

#include "cluster/wire_json.hpp"

namespace moonmq::daemon {

bool cluster_view::is_peer(const std::string& id) const {
  for (const auto& p : peers_)
    if (p.id == id) return true;
  return false;
}

transport::response cluster_view::ask(const std::string& peer, const transport::request& req) const {
  auto r = client_.call_now(peer, req);
  if (!r) return {0, "this transport cannot send synchronously", "text/plain"};
  return std::move(*r);
}

std::vector<peer_answer> cluster_view::ask_peers(const transport::request& req) const {
  std::vector<std::future<transport::response>> pending;
  pending.reserve(peers_.size());
  for (const auto& p : peers_)
    pending.push_back(std::async(std::launch::async, [this, id = p.id, &req] { return ask(id, req); }));
  std::vector<peer_answer> out;
  out.reserve(peers_.size());
  for (std::size_t i = 0; i < peers_.size(); ++i) out.push_back({peers_[i].id, pending[i].get()});
  return out;
}

std::string describe_answer(const transport::response& r) {
  return r.status ? "HTTP " + std::to_string(r.status) + ": " + r.body : "no answer: " + r.body;
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
  auto answers = ask_peers(transport::get_request("/cluster/loads"));
  for (std::size_t i = 0; i < answers.size(); ++i) {
    broker_report b;
    b.id = answers[i].broker;
    b.address = peers_[i].host + ":" + std::to_string(peers_[i].port);
    const auto& r = answers[i].response;
    if (r.ok()) {
      if (auto report = cluster::wire::read_load_report(r.body)) {
        b.reachable = true;
        b.partitions = std::move(report->partitions);
        b.held_bytes = report->held_bytes;
        b.strays = std::move(report->strays);
      } else {
        b.error = "its answer to GET /cluster/loads is not a loads document";
      }
    } else {
      b.error = r.status ? "HTTP " + std::to_string(r.status) + ": " + r.body : "no answer: " + r.body;
    }
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace moonmq::daemon
