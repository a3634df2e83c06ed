#include "group_api.hpp"

#include "api_reply.hpp"
#include "groups/group_wire.hpp"
#include "json/object_reader.hpp"
#include "moonmq/core/utf8.hpp"

namespace moonmq::daemon {

void group_api::routes(api_routes& api) {
  // Every client call: a valid group id from the path and a JSON body, from which `body_of` makes the coordinator's
  // request body (or an error for the client); the coordinator's answer is relayed.
  auto client_call = [this](const httplib::Request& req, httplib::Response& res, const char* route, auto&& body_of) {
    const std::string group_id = req.matches[1];
    if (!valid_client_id(group_id, "group id", res)) return;
    rapidjson::Document d;
    if (!parse_body(req, res, d)) return;
    json::object_reader r(d, "");
    result<std::string> body = body_of(group_id, r);
    if (!body) return reply_error(res, body.err());
    relay(res, routes_.on_coordinator(group_id, route, *body));
  };
  api.Post(R"(/v1/groups/([^/]+)/join)", [this, client_call](const httplib::Request& req, httplib::Response& res) {
    client_call(req, res, "join", [this](const std::string& group_id, json::object_reader& r) -> result<std::string> {
      std::vector<std::string> topics;
      std::string member_id;
      r.get("topics", topics, true);
      r.get("member_id", member_id);
      if (auto s = r.finish(); !s) return s.err();
      return json::object([&](json::writer& w) {
        json::put(w, "group", group_id);
        json::put(w, "member_id", member_id);
        json::put(w, "broker", routes_.self().value());
        w.Key("topics");
        w.StartArray();
        for (const auto& t : topics) w.String(t.c_str(), static_cast<rapidjson::SizeType>(t.size()));
        w.EndArray();
      });
    });
  });
  api.Post(R"(/v1/groups/([^/]+)/heartbeat)", [client_call](const httplib::Request& req, httplib::Response& res) {
    client_call(req, res, "heartbeat", [](const std::string& group_id, json::object_reader& r) -> result<std::string> {
      std::string member_id;
      std::uint64_t epoch = 0;
      r.get("member_id", member_id, true);
      r.get("member_epoch", epoch, true);
      auto owned = groups::wire::read_partitions(r, "owned");
      if (!owned) return owned.err();
      if (auto s = r.finish(); !s) return s.err();
      return json::object([&](json::writer& w) {
        json::put(w, "group", group_id);
        json::put(w, "member_id", member_id);
        json::put(w, "member_epoch", epoch);
        groups::wire::write_partitions(w, "owned", *owned);
      });
    });
  });
  api.Post(R"(/v1/groups/([^/]+)/leave)", [client_call](const httplib::Request& req, httplib::Response& res) {
    client_call(req, res, "leave", [](const std::string& group_id, json::object_reader& r) -> result<std::string> {
      std::string member_id;
      r.get("member_id", member_id, true);
      if (auto s = r.finish(); !s) return s.err();
      return json::object([&](json::writer& w) {
        json::put(w, "group", group_id);
        json::put(w, "member_id", member_id);
      });
    });
  });
  api.Get(R"(/v1/groups/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string group_id = req.matches[1];
    if (!valid_client_id(group_id, "group id", res)) return;
    relay(res, routes_.on_coordinator(group_id, "describe", ""));
  });
  api.Get("/v1/groups", [this](const httplib::Request&, httplib::Response& res) {
    reply(res, 200, json_object([&](json::writer& w) {
            json::put(w, "coordinator", routes_.self().value());
            w.Key("groups");
            w.StartArray();
            for (const auto& g : groups_.groups()) w.String(g.c_str(), static_cast<rapidjson::SizeType>(g.size()));
            w.EndArray();
          }));
  });
}

}  // namespace moonmq::daemon
