#include "reclaim_api.hpp"

#include "api_reply.hpp"

namespace moonmq::daemon {

reclaim_api::reclaim_api(std::unique_ptr<cluster::reclaim_executor> executor, cluster_view& view, runtime& rt)
    : exec_(std::move(executor)), view_(view) {
  const auto tick = std::chrono::milliseconds(static_cast<long>(exec_->round_seconds() * 1000));
  job_ = rt.every(tick, [raw = exec_.get()] { (void)raw->reclaim(true); });
}

reclaim_api::~reclaim_api() { job_->stop(); }

void reclaim_api::routes(api_routes& api) {
  auto forward = [this](const std::string& id, const char* method, httplib::Response& res) {
    if (!view_.is_peer(id)) return reply_error(res, 404, "not_found", "unknown broker '" + id + "'");
    transport::request r;
    r.method = method;
    r.path = "/cluster/admin/reclaim";
    auto a = view_.ask(id, r);
    if (a.status == 0) return reply_peer_error(res, 503, "unavailable", id + " did not answer", id, a);
    relay(res, a);
  };
  api.Get(R"(/v1/brokers/([^/]+)/reclaim)", [this, forward](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] == view_.self().value()) return reply(res, 200, exec_->list_document());
    forward(req.matches[1], "GET", res);
  });
  api.Post(R"(/v1/brokers/([^/]+)/reclaim)", [this, forward](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] == view_.self().value()) return reply(res, 200, exec_->reclaim(false));
    forward(req.matches[1], "POST", res);
  });
}

transport::response reclaim_api::handle_cluster(const transport::request& req) {
  if (req.method == "GET") return {200, exec_->list_document(), "application/json"};
  return {200, exec_->reclaim(false), "application/json"};
}

}  // namespace moonmq::daemon
