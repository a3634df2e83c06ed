#include "topic_api.hpp"

#include <rapidjson/document.h>

#include "api_reply.hpp"
#include "frontend/topic_wire.hpp"
#include "json/object_reader.hpp"

namespace moonmq::daemon {

namespace {

using frontend::topic_admin_op;
using frontend::topic_admin_request;
namespace wire = frontend::wire;

transport::response json_answer(std::string body) { return {200, std::move(body), "application/json"}; }

transport::response refused(const error& e) { return wire::topic_refusal_response(frontend::refusal{e, {}, {}}); }

}  // namespace

void topic_api::answer(httplib::Response& res, const frontend::outcome<frontend::topic_decision>& d) {
  relay(res, d ? json_answer(wire::topic_decision_body(*d)) : wire::topic_refusal_response(d.refused()));
}

void topic_api::routes(api_routes& api) {
  api.Post("/v1/topics", [this](const httplib::Request& req, httplib::Response& res) {
    rapidjson::Document d;
    if (!parse_body(req, res, d)) return;
    json::object_reader r(d, "");
    topic_admin_request c;
    std::string placement = "spread";
    r.get("name", c.name, true);
    r.get("partitions", c.partitions);
    r.get("placement", placement);
    r.get("brokers", c.brokers);
    if (r.ok() && placement != "spread" && placement != "local" && placement != "exact")
      r.fail("placement", "expected spread, local or exact");
    if (auto s = r.finish(); !s) return reply_error(res, s.err());
    c.local = placement == "local";
    c.exact = placement == "exact";
    answer(res, admin_.submit(std::move(c)));
  });
  api.Get("/v1/topics", [this](const httplib::Request&, httplib::Response& res) {
    reply(res, 200, wire::topic_list_body(admin_.list(), self_));
  });
  api.Post(R"(/v1/topics/([^/]+)/partitions)", [this](const httplib::Request& req, httplib::Response& res) {
    rapidjson::Document d;
    if (!parse_body(req, res, d)) return;
    json::object_reader r(d, "");
    topic_admin_request c{topic_admin_op::grow, req.matches[1], 0, false, {}};
    r.get("count", c.partitions, true);
    r.get("brokers", c.brokers);
    if (auto s = r.finish(); !s) return reply_error(res, s.err());
    c.exact = !c.brokers.empty();
    answer(res, admin_.submit(std::move(c)));
  });
  api.Delete(R"(/v1/topics/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    answer(res, admin_.submit({topic_admin_op::remove, req.matches[1], 0, false, {}}));
  });
  api.Post(R"(/v1/topics/([^/]+)/adopt)", [this](const httplib::Request& req, httplib::Response& res) {
    answer(res, admin_.submit({topic_admin_op::adopt, req.matches[1], 0, false, {}}));
  });
}

transport::response topic_api::handle_cluster(const transport::request& req) {
  const bool post = req.method == "POST", get = req.method == "GET";
  if (get && req.path == "/cluster/admin/topics/holds") {
    auto name = req.params.find("name");
    if (name == req.params.end()) return refused({errc::invalid_argument, "query parameter name is required"});
    std::uint32_t partitions = 0;
    if (auto n = req.params.find("partitions"); n != req.params.end()) {
      auto count = whole_number(n->second, INT32_MAX);
      if (!count) return refused({errc::invalid_argument, "partitions: expected a whole number"});
      partitions = static_cast<std::uint32_t>(*count);
    }
    return json_answer(wire::topic_holding_body(admin_.holding(name->second, partitions)));
  }
  if (get && req.path == "/cluster/admin/topics/catalog")
    return json_answer(json::object([&](json::writer& w) { cluster::wire::write_catalog(w, admin_.catalog()); }));
  if (post && req.path == "/cluster/admin/topics/claim") {
    auto c = wire::read_topic_claim(req.body);
    if (!c) return refused(c.err());
    if (auto s = admin_.claim(*c); !s) return refused(s.err());
    return json_answer("{}");
  }
  if (post && req.path == "/cluster/admin/topics/learn") {
    auto r = cluster::wire::read_topic_record(req.body);
    if (!r) return refused({errc::invalid_argument, r.message()});
    if (auto s = admin_.learn(*r); !s) return refused(s.err());
    return json_answer("{}");
  }
  if (post && req.path == "/cluster/admin/topics/change") {
    auto c = wire::read_topic_change_request(req.body);
    if (!c) return refused({errc::invalid_argument, c.message()});
    auto d = admin_.decide(*c);
    return d ? json_answer(wire::topic_decision_body(*d)) : wire::topic_refusal_response(d.refused());
  }
  return refused({errc::not_found, req.method + " " + req.path + " is not a cluster route"});
}

}  // namespace moonmq::daemon
