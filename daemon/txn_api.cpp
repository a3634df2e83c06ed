#include "txn_api.hpp"

#include "api_reply.hpp"
#include "json/object_reader.hpp"
#include "moonmq/core/topic_name.hpp"
#include "txn/txn_wire.hpp"

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

void refuse(httplib::Response& res, const refusal& r) {
  if (r.code() == errc::unavailable && r.by_coordinator)
    return reply_error(res, 503, "coordinator_unavailable", r.message());
  reply_error(res, r.err);
}

/// The producer's id and epoch of a transaction call's body; false after answering the error.
bool read_producer(json::object_reader& r, std::uint64_t& producer_id, std::uint32_t& epoch) {
  std::uint64_t e = 0;
  r.get("producer_id", producer_id, true);
  r.get("producer_epoch", e, true);
  if (r.ok() && e > UINT32_MAX) r.fail("producer_epoch", "out of range");
  epoch = static_cast<std::uint32_t>(e);
  return r.ok();
}

}  // namespace

void txn_api::routes(api_routes& api) {
  api.Post("/v1/producers", [this](const httplib::Request& req, httplib::Response& res) {
    rapidjson::Document d;
    std::optional<std::string> tid;
    if (!req.body.empty()) {
      if (!parse_body(req, res, d)) return;
      json::object_reader r(d, "");
      std::string id;
      r.get("transactional_id", id);
      if (auto s = r.finish(); !s) return reply_error(res, s.err());
      if (r.has("transactional_id")) {
        if (!valid_client_id(id, "transactional id", res)) return;
        tid = id;
      }
    }
    auto p = txns_.init(tid);
    if (!p) return refuse(res, p.refused());
    reply(res, 200, txn::wire::identity_body(*p));
  });

  // Every call of an open transaction: a valid transactional id from the path, a JSON body with the producer's id
  // and epoch, read into the front end's call by `call`.
  auto producer_call = [](const httplib::Request& req, httplib::Response& res, auto&& call) {
    const std::string tid = req.matches[1];
    if (!valid_client_id(tid, "transactional id", res)) return;
    rapidjson::Document d;
    if (!parse_body(req, res, d)) return;
    json::object_reader r(d, "");
    std::uint64_t producer_id = 0;
    std::uint32_t epoch = 0;
    read_producer(r, producer_id, epoch);
    call(tid, producer_id, epoch, r);
  };
  api.Post(R"(/v1/transactions/([^/]+)/(commit|abort))",
           [this, producer_call](const httplib::Request& req, httplib::Response& res) {
             producer_call(req, res, [&](const std::string& tid, std::uint64_t id, std::uint32_t epoch,
                                         json::object_reader& r) {
               txn::end_call c{tid, id, epoch, req.matches[2] == "commit", false};
               r.get("wait", c.wait);
               if (auto s = r.finish(); !s) return reply_error(res, s.err());
               auto a = txns_.end(c);
               if (!a) return refuse(res, a.refused());
               reply(res, 200, txn::wire::end_answer_body(*a));
             });
           });
  api.Post(R"(/v1/transactions/([^/]+)/offsets)",
           [this, producer_call](const httplib::Request& req, httplib::Response& res) {
             producer_call(req, res, [&](const std::string& tid, std::uint64_t id, std::uint32_t epoch,
                                         json::object_reader& r) {
               std::string group;
               r.get("group", group, true);
               std::vector<listed_partition> listed;
               if (!read_partitions(r, "offsets", true, listed, res)) return;
               if (auto s = r.finish(); !s) return reply_error(res, s.err());
               std::vector<std::pair<topic_partition, std::uint64_t>> offsets;
               for (const auto& l : listed) offsets.emplace_back(l.tp, l.offset);
               auto done = txns_.add_offsets(tid, id, epoch, group, offsets);
               if (!done) return refuse(res, done.refused());
               reply(res, 200, "{}");
             });
           });
  // The partitions the open transaction will write, declared before its produces (Kafka's AddPartitionsToTxn).
  api.Post(R"(/v1/transactions/([^/]+)/partitions)",
           [this, producer_call](const httplib::Request& req, httplib::Response& res) {
             producer_call(req, res, [&](const std::string& tid, std::uint64_t id, std::uint32_t epoch,
                                         json::object_reader& r) {
               std::vector<listed_partition> listed;
               if (!read_partitions(r, "partitions", false, listed, res)) return;
               if (auto s = r.finish(); !s) return reply_error(res, s.err());
               std::vector<topic_partition> partitions;
               for (const auto& l : listed) partitions.push_back(l.tp);
               auto done = txns_.declare(tid, id, epoch, partitions);
               if (!done) return refuse(res, done.refused());
               reply(res, 200, "{}");
             });
           });

  api.Get(R"(/v1/transactions/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string tid = req.matches[1];
    if (!valid_client_id(tid, "transactional id", res)) return;
    auto d = txns_.describe(tid);
    if (!d) return refuse(res, d.refused());
    reply(res, 200, *d);
  });
  api.Get("/v1/transactions", [this](const httplib::Request& req, httplib::Response& res) {
    auto page = cluster_lists::page_of(req);
    if (!page) return reply_error(res, 400, "invalid_argument", page.message());
    if (!req.has_param("scope") || req.get_param_value("scope") == "broker") return reply(res, 200, txns_.list(*page));
    if (req.get_param_value("scope") != "cluster")
      return reply_error(res, 400, "invalid_argument", "scope: expected broker or cluster");
    reply(res, 200, lists_.transactions(txns_.list(*page), *page));
  });
}

}  // namespace moonmq::daemon
