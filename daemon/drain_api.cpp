#include "drain_api.hpp"

#include <rapidjson/document.h>

#include "api_reply.hpp"
#include "cluster/wire_json.hpp"
#include "json/object_reader.hpp"

namespace moonmq::daemon {

using json::put;
using json_writer = json::writer;

drain_api::drain_api(std::unique_ptr<cluster::drain_executor> executor, cluster_view& view, runtime& rt,
                     std::chrono::milliseconds tick)
    : exec_(std::move(executor)), view_(view) {
  job_ = rt.every(tick, [raw = exec_.get()] { raw->round(); });
}

drain_api::~drain_api() {
  if (job_) job_->stop();
}

status drain_api::set(const std::string& broker, bool draining) {
  auto s = exec_->set(broker, draining);
  if (s && job_) job_->wake();
  return s;
}

void drain_api::routes(api_routes& api) {
  api.Post(R"(/v1/brokers/([^/]+)/drain)",
           [this](const httplib::Request& req, httplib::Response& res) { change(req.matches[1], true, res); });
  api.Delete(R"(/v1/brokers/([^/]+)/drain)",
             [this](const httplib::Request& req, httplib::Response& res) { change(req.matches[1], false, res); });
  api.Get(R"(/v1/brokers/([^/]+)/drain)", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    if (id == view_.self().value()) return reply(res, 200, progress_document());
    if (!view_.is_peer(id)) return reply_error(res, 404, "not_found", "unknown broker '" + id + "'");
    auto r = view_.ask(id, transport::get_request("/cluster/admin/drain"));
    if (r.status == 0) return reply_peer_error(res, 503, "unavailable", id + " did not answer", id, r);
    relay(res, r);
  });
}

void drain_api::change(const std::string& broker, bool draining, httplib::Response& res) {
  if (broker != view_.self().value() && !view_.is_peer(broker))
    return reply_error(res, 404, "not_found", "unknown broker '" + broker + "'");
  transport::request tell;
  tell.path = "/cluster/admin/drain";
  tell.body = cluster::wire::write(cluster::wire::drain_mark{broker, draining});
  auto r = view_.apply_everywhere(set(broker, draining), tell);
  reply_fanout(res, r,
               "not every broker was told; a broker that missed it may still move partitions onto " + broker +
                   ": try again",
               [&](json_writer& w) {
                 put(w, "broker", broker);
                 put(w, "draining", draining);
               });
}

transport::response drain_api::handle_cluster(const transport::request& req) {
  if (req.method == "GET") return {200, progress_document(), "application/json"};
  auto mark = cluster::wire::read_drain_mark(req.body);
  if (!mark) return transport::error_response(400, "invalid_argument", mark.message());
  const auto& [broker, draining] = *mark;
  if (broker != view_.self().value() && !view_.is_peer(broker))
    return transport::error_response(404, "not_found", "unknown broker '" + broker + "'");
  if (auto s = set(broker, draining); !s)
    return transport::error_response(transport::http_status_of(s.code()), errc_name(s.code()), s.message());
  return {200, "{\"ok\":true}", "application/json"};
}

}  // namespace moonmq::daemon
