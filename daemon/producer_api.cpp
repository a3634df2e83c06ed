#include "producer_api.hpp"

#include <random>

#include "api_reply.hpp"
#include "json/object_reader.hpp"

namespace moonmq::daemon {

namespace {
std::uint64_t fresh_producer_id() {
  std::random_device rd;
  std::uint64_t id = 0;
  while (id == 0) id = ((static_cast<std::uint64_t>(rd()) << 32) | rd()) & 0x7fffffffffffffffULL;
  return id;
}
}  // namespace

void producer_api::routes(httplib::Server& api) {
  api.Post("/v1/producers", [](const httplib::Request& req, httplib::Response& res) {
    rapidjson::Document d;
    if (!req.body.empty() && !parse_body(req, res, d)) return;
    if (!req.body.empty()) {
      json::object_reader r(d, "");
      if (r.member("transactional_id"))
        return reply_error(res, 501, "not_implemented",
                           "transactional producers are not available yet; omit transactional_id for an idempotent one");
      if (auto s = r.finish(); !s) return reply_error(res, s.err());
    }
    reply(res, 200, json_object([&](json::writer& w) {
            json::put(w, "producer_id", fresh_producer_id());
            json::put(w, "producer_epoch", 0);
          }));
  });
}

}  // namespace moonmq::daemon
