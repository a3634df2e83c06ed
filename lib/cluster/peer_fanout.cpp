#include "moonmq/cluster/peer_fanout.hpp"

#include <rapidjson/document.h>

#include <future>

#include "cluster/wire_json.hpp"

namespace moonmq::cluster {

transport::response ask_now(transport::peer_client& client, const std::string& peer, const transport::request& req) {
  auto r = client.call_now(peer, req);
  if (!r) return {0, "this transport cannot send synchronously", "text/plain"};
  return std::move(*r);
}

std::vector<peer_answer> ask_each_now(transport::peer_client& client, const std::vector<std::string>& peers,
                                      const transport::request& req) {
  std::vector<std::future<transport::response>> pending;
  pending.reserve(peers.size());
  for (const auto& p : peers)
    pending.push_back(std::async(std::launch::async, [&client, &p, &req] { return ask_now(client, p, req); }));
  std::vector<peer_answer> out;
  out.reserve(peers.size());
  for (std::size_t i = 0; i < peers.size(); ++i) out.push_back({peers[i], pending[i].get()});
  return out;
}

std::vector<peer_report> ask_reports_now(transport::peer_client& client, const std::vector<std::string>& peers) {
  std::vector<peer_report> out;
  for (auto& a : ask_each_now(client, peers, transport::get_request("/cluster/loads"))) {
    peer_report p;
    p.broker = a.broker;
    if (!a.response.ok()) {
      p.silence = describe_answer(a.response);
    } else if (auto report = wire::read_load_report(a.response.body)) {
      p.answered = true;
      p.partitions = std::move(report->partitions);
      p.held_bytes = report->held_bytes;
      p.strays = std::move(report->strays);
    } else {
      p.silence = "its answer to GET /cluster/loads is not a loads document";
    }
    out.push_back(std::move(p));
  }
  return out;
}

peer_error read_peer_error(const transport::response& r) {
  peer_error out;
  rapidjson::Document d;
  d.Parse(r.body.c_str(), r.body.size());
  if (!d.HasParseError() && d.IsObject()) {
    if (d.HasMember("error") && d["error"].IsString()) out.error = d["error"].GetString();
    if (d.HasMember("message") && d["message"].IsString()) out.message = d["message"].GetString();
  }
  if (r.status == 0) out.error = "unreachable";
  if (out.error.empty()) out.error = "http_" + std::to_string(r.status);
  if (out.message.empty()) {
    // The start of a body that is not the error contract, cut at a character's first byte (never inside UTF-8).
    std::size_t shown = std::min<std::size_t>(r.body.size(), 200);
    while (shown < r.body.size() && shown > 0 && (static_cast<unsigned char>(r.body[shown]) & 0xC0) == 0x80) --shown;
    out.message = r.body.substr(0, shown) + (shown < r.body.size() ? "..." : "");
  }
  return out;
}

std::string describe_answer(const transport::response& r) {
  const peer_error e = read_peer_error(r);
  return r.status ? "HTTP " + std::to_string(r.status) + " " + e.error + ": " + e.message : "no answer: " + e.message;
}

}  // namespace moonmq::cluster
