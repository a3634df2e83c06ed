#include "group_api.hpp"

#include "api_reply.hpp"
#include "groups/group_wire.hpp"
#include "json/object_reader.hpp"

namespace moonmq::daemon {

namespace {

void answer(httplib::Response& res, const outcome<groups::member_answer>& a) {
  if (!a) return relay(res, groups::wire::refusal_response(a.err(), "fenced_member"));
  reply(res, 200, groups::wire::answer_json(*a));
}

}  // namespace

void group_api::routes(api_routes& api) {
  // Every member call: a valid group id from the path and a JSON body, read into the typed call.
  auto member_call = [](const httplib::Request& req, httplib::Response& res, auto&& call) {
    const std::string group_id = req.matches[1];
    if (!valid_client_id(group_id, "group id", res)) return;
    rapidjson::Document d;
    if (!parse_body(req, res, d)) return;
    json::object_reader r(d, "");
    call(group_id, r);
  };
  api.Post(R"(/v1/groups/([^/]+)/join)", [this, member_call](const httplib::Request& req, httplib::Response& res) {
    member_call(req, res, [&](const std::string& group_id, json::object_reader& r) {
      // A member's connection lives on the broker it joined through: the join names this broker as the member's.
      groups::join_call c{group_id, "", routes_.self(), {}};
      r.get("topics", c.topics, true);
      r.get("member_id", c.member_id);
      if (auto s = r.finish(); !s) return reply_error(res, s.err());
      answer(res, routes_.join(c));
    });
  });
  api.Post(R"(/v1/groups/([^/]+)/heartbeat)", [this, member_call](const httplib::Request& req, httplib::Response& res) {
    member_call(req, res, [&](const std::string& group_id, json::object_reader& r) {
      groups::heartbeat_call c{group_id, "", 0, {}};
      r.get("member_id", c.member_id, true);
      r.get("member_epoch", c.member_epoch, true);
      auto owned = groups::wire::read_partitions(r, "owned");
      if (!owned) return reply_error(res, owned.err());
      if (auto s = r.finish(); !s) return reply_error(res, s.err());
      c.owned = std::move(*owned);
      answer(res, routes_.heartbeat(c));
    });
  });
  api.Post(R"(/v1/groups/([^/]+)/leave)", [this, member_call](const httplib::Request& req, httplib::Response& res) {
    member_call(req, res, [&](const std::string& group_id, json::object_reader& r) {
      std::string member_id;
      r.get("member_id", member_id, true);
      if (auto s = r.finish(); !s) return reply_error(res, s.err());
      if (auto s = routes_.leave(group_id, member_id); !s)
        return relay(res, groups::wire::refusal_response(s.err(), "fenced_member"));
      reply(res, 200, "{}");
    });
  });
  api.Get(R"(/v1/groups/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string group_id = req.matches[1];
    if (!valid_client_id(group_id, "group id", res)) return;
    auto d = routes_.describe(group_id);
    if (!d && d.code() == errc::not_found) return reply_error(res, 404, "not_found", d.message());
    if (!d) return relay(res, groups::wire::refusal_response(d.err(), "conflict"));
    reply(res, 200, groups::wire::description_json(*d));
  });
  api.Get("/v1/groups", [this](const httplib::Request& req, httplib::Response& res) {
    auto page = cluster_lists::page_of(req);
    if (!page) return reply_error(res, 400, "invalid_argument", page.message());
    const std::string own = routes_.list_document(*page);
    if (!req.has_param("scope") || req.get_param_value("scope") == "broker") return reply(res, 200, own);
    if (req.get_param_value("scope") != "cluster")
      return reply_error(res, 400, "invalid_argument", "scope: expected broker or cluster");
    reply(res, 200, lists_.groups(own, *page));
  });
}

}  // namespace moonmq::daemon
