#include "txn_api.hpp"

#include <random>

#include "api_reply.hpp"
#include "json/object_reader.hpp"
#include "moonmq/core/topic_name.hpp"
#include "moonmq/core/utf8.hpp"

namespace moonmq::daemon {

namespace {

/// One element of a client's list of partitions, with its offset when the list carries them.
struct listed_partition {
  topic_partition tp;
  std::uint64_t offset = 0;
};

/// Reads the non-empty array `key` of {"topic","partition"(,"offset")}; false after answering the error.
bool read_partitions(json::object_reader& r, const char* key, bool with_offset, std::vector<listed_partition>& out,
                     httplib::Response& res) {
  const auto* list = r.member(key);
  if (r.ok() && (!list || !list->IsArray() || list->Empty() || list->Size() > 10000))
    r.fail(key, "expected a non-empty array of at most 10000");
  if (!r.ok()) return true;  // r.finish() answers it
  for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
    json::object_reader o((*list)[i], std::string(key) + "[" + std::to_string(i) + "]");
    std::string topic;
    std::int64_t partition = -1;
    std::uint64_t offset = 0;
    o.get("topic", topic, true);
    o.get("partition", partition, true);
    if (with_offset) o.get("offset", offset, true);
    if (o.ok() && (partition < 0 || partition > INT32_MAX)) o.fail("partition", "out of range");
    if (o.ok())
      if (auto v = validate_topic_name(topic); !v) o.fail("topic", v.message());
    if (auto s = o.finish(); !s) {
      reply_error(res, s.err());
      return false;
    }
    out.push_back({{topic, static_cast<std::int32_t>(partition)}, offset});
  }
  return true;
}

}  // namespace

std::uint64_t fresh_producer_id() {
  std::random_device rd;
  std::uint64_t id = 0;
  while (id == 0) id = ((static_cast<std::uint64_t>(rd()) << 32) | rd()) & 0x7fffffffffffffffULL;
  return id;
}

void txn_api::routes(api_routes& api) {
  api.Post("/v1/producers", [this](const httplib::Request& req, httplib::Response& res) {
    rapidjson::Document d;
    std::string tid;
    if (!req.body.empty()) {
      if (!parse_body(req, res, d)) return;
      json::object_reader r(d, "");
      r.get("transactional_id", tid);
      if (auto s = r.finish(); !s) return reply_error(res, s.err());
      if (r.has("transactional_id") && !valid_client_id(tid, "transactional id", res)) return;
    }
    if (tid.empty())
      return reply(res, 200, json_object([&](json::writer& w) {
                     json::put(w, "producer_id", fresh_producer_id());
                     json::put(w, "producer_epoch", 0);
                   }));
    relay(res, service_.on_coordinator(tid, "init", json_object([&](json::writer& w) {
                                         json::put(w, "transactional_id", tid);
                                       })));
  });

  // commit, abort and offsets: the producer's id and epoch from the body, the rest made for the coordinator.
  api.Post(R"(/v1/transactions/([^/]+)/(commit|abort|offsets))",
           [this](const httplib::Request& req, httplib::Response& res) {
             const std::string tid = req.matches[1], action = req.matches[2];
             if (!valid_client_id(tid, "transactional id", res)) return;
             rapidjson::Document d;
             if (!parse_body(req, res, d)) return;
             json::object_reader r(d, "");
             std::uint64_t producer_id = 0, epoch = 0;
             std::string group;
             bool wait = false;
             r.get("producer_id", producer_id, true);
             r.get("producer_epoch", epoch, true);
             if (action != "offsets") r.get("wait", wait);
             std::vector<listed_partition> offsets;
             if (action == "offsets") {
               r.get("group", group, true);
               if (!read_partitions(r, "offsets", true, offsets, res)) return;
             }
             if (auto s = r.finish(); !s) return reply_error(res, s.err());
             const std::string body = json_object([&](json::writer& w) {
               json::put(w, "transactional_id", tid);
               json::put(w, "producer_id", producer_id);
               json::put(w, "producer_epoch", epoch);
               if (action == "offsets") {
                 json::put(w, "group", group);
                 w.Key("offsets");
                 w.StartArray();
                 for (const auto& o : offsets) {
                   w.StartObject();
                   json::put(w, "topic", o.tp.topic);
                   json::put(w, "partition", o.tp.partition);
                   json::put(w, "offset", o.offset);
                   json::put(w, "owner", owner_of_(o.tp).value());
                   w.EndObject();
                 }
                 w.EndArray();
               } else {
                 json::put(w, "commit", action == "commit");
                 json::put(w, "wait", wait);
               }
             });
             relay(res, service_.on_coordinator(tid, action == "offsets" ? "offsets" : "end", body));
           });

  // The partitions the open transaction will write, declared before its produces (Kafka's AddPartitionsToTxn):
  // the coordinator records them in one round trip, and produces through this broker then go straight to the owners.
  api.Post(R"(/v1/transactions/([^/]+)/partitions)", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string tid = req.matches[1];
    if (!valid_client_id(tid, "transactional id", res)) return;
    rapidjson::Document d;
    if (!parse_body(req, res, d)) return;
    json::object_reader r(d, "");
    std::uint64_t producer_id = 0, epoch = 0;
    r.get("producer_id", producer_id, true);
    r.get("producer_epoch", epoch, true);
    if (r.ok() && epoch > UINT32_MAX) r.fail("producer_epoch", "out of range");
    std::vector<listed_partition> listed;
    if (!read_partitions(r, "partitions", false, listed, res)) return;
    if (auto s = r.finish(); !s) return reply_error(res, s.err());
    // Only partitions some broker has (a marker for one that nobody serves could never be delivered), each topic's
    // owners found once.
    std::map<std::string, std::set<std::int32_t>> by_topic;
    for (const auto& l : listed) by_topic[l.tp.topic].insert(l.tp.partition);
    if (by_topic.size() > max_declared_topics)
      return reply_error(res, 400, "invalid_argument",
                         "partitions: at most " + std::to_string(max_declared_topics) + " topics in one declaration");
    std::vector<std::pair<topic_partition, broker_id>> partitions;
    for (const auto& [topic, numbers] : by_topic) {
      auto owners = owners_of_(topic, numbers);
      if (!owners) return reply_error(res, owners.err());
      for (const auto& [p, owner] : *owners) partitions.emplace_back(topic_partition{topic, p}, owner);
    }
    if (auto s = service_.join_all(tid, producer_id, static_cast<std::uint32_t>(epoch), partitions); !s)
      return reply_error(res, s.err());
    reply(res, 200, "{}");
  });

  api.Get(R"(/v1/transactions/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string tid = req.matches[1];
    if (!valid_client_id(tid, "transactional id", res)) return;
    relay(res, service_.on_coordinator(tid, "describe", ""));
  });
  api.Get("/v1/transactions", [this](const httplib::Request&, httplib::Response& res) {
    transport::request r;
    r.method = "GET";
    r.path = "/cluster/txn/list";
    relay(res, service_.handle_cluster(r));
  });
}

}  // namespace moonmq::daemon
