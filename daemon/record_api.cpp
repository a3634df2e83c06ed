#include "record_api.hpp"

#include <rapidjson/document.h>

#include <chrono>
#include <optional>

#include "api_reply.hpp"
#include "json/object_reader.hpp"
#include "json/writer.hpp"
#include "moonmq/core/clock.hpp"
#include "moonmq/core/utf8.hpp"

namespace moonmq::daemon {

namespace {

using json::put;
using json_writer = json::writer;

/// A front end's refusal as the client API answers it: 421 naming the owner, 416 with the log's bounds (a log is
/// never cut from the front, so it starts at 0), otherwise the error's own status.
void reply_refusal(httplib::Response& res, const frontend::refusal& r) {
  if (r.code() == errc::not_owner && r.owner)
    return reply(res, 421, json_object([&](json_writer& w) {
                   put(w, "error", "not_owner");
                   put(w, "owner", r.owner->value());
                 }));
  if (r.code() == errc::offset_out_of_range && r.end_offset)
    return reply(res, 416, json_object([&](json_writer& w) {
                   put(w, "error", "offset_out_of_range");
                   put(w, "message", r.message());
                   put(w, "start_offset", std::uint64_t{0});
                   put(w, "end_offset", *r.end_offset);
                 }));
  reply_error(res, r.err);
}

}  // namespace

void record_api::routes(api_routes& api) {
  api.Post(R"(/v1/topics/([^/]+)/records)",
           [this](const httplib::Request& req, httplib::Response& res) { produce(req, res); });
  api.Get(R"(/v1/topics/([^/]+)/partitions/(\d+)/records)",
          [this](const httplib::Request& req, httplib::Response& res) { fetch(req, res); });
  api.Post(R"(/v1/groups/([^/]+)/offsets)",
           [this](const httplib::Request& req, httplib::Response& res) { commit(req, res); });
  api.Get(R"(/v1/groups/([^/]+)/offsets)",
          [this](const httplib::Request& req, httplib::Response& res) { committed(req, res); });
}

void record_api::produce(const httplib::Request& req, httplib::Response& res) {
  frontend::produce_request p;
  p.topic = req.matches[1];
  rapidjson::Document d;
  if (!parse_body(req, res, d)) return;
  json::object_reader r(d, "");
  std::optional<std::int64_t> no_such_partition;  // answered 404 once the rest of the body is known to be well formed
  if (r.has("partition")) {
    std::int64_t partition = -1;
    r.get("partition", partition);
    if (r.ok() && (partition < 0 || partition > INT32_MAX)) no_such_partition = partition;
    p.partition = static_cast<std::int32_t>(partition);
  }
  const auto* list = r.member("records");
  const auto* transaction = r.member("transaction");
  if (r.ok() && (!list || !list->IsArray() || list->Empty())) r.fail("records", "expected a non-empty array");
  if (r.ok() && transaction && !transaction->IsNull()) {
    json::object_reader tr(*transaction, "transaction");
    tr.get("transactional_id", p.transactional_id, true);
    if (tr.ok() && !valid_client_name(p.transactional_id))
      tr.fail("transactional_id", "must be 1 to 255 bytes of UTF-8");
    if (tr.ok() && !r.has("producer")) tr.fail_here("a transactional produce names its producer (id, epoch, sequence)");
    if (auto s = tr.finish(); !s) return reply_error(res, s.err());
  }
  // An idempotent producer's batch: the front end stamps each record with its sequence in this partition.
  if (const auto* pj = r.member("producer"); pj && r.ok()) {
    json::object_reader pr(*pj, "producer");
    std::uint64_t id = 0, epoch = 0, sequence = 0;
    pr.get("id", id, true);
    pr.get("epoch", epoch, true);
    pr.get("sequence", sequence, true);
    if (pr.ok() && (id == 0 || id > INT64_MAX)) pr.fail("id", "expected a producer id from POST /v1/producers");
    if (pr.ok() && epoch > UINT32_MAX) pr.fail("epoch", "out of range");
    if (pr.ok() && sequence > INT32_MAX) pr.fail("sequence", "out of range");
    if (auto s = pr.finish(); !s) return reply_error(res, s.err());
    p.producer = storage::producer_stamp{id, static_cast<std::uint32_t>(epoch), static_cast<std::uint32_t>(sequence)};
  }
  if (auto s = r.finish(); !s) return reply_error(res, s.err());
  const std::int64_t ts = wall_now_ms();
  for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
    json::object_reader rr((*list)[i], "records[" + std::to_string(i) + "]");
    storage::record rec;
    rec.timestamp_ms = ts;
    std::string key;
    const auto* k = rr.member("key");  // absent or null: a record without a key
    if (k && !k->IsNull() && rr.get("key", key)) rec.key = key;
    rr.get("value", rec.value, true);
    if (auto s = rr.finish(); !s) return reply_error(res, s.err());
    p.records.push_back(std::move(rec));
  }
  if (no_such_partition)
    return reply_error(res, 404, "not_found",
                       "topic '" + p.topic + "' has no partition " + std::to_string(*no_such_partition));
  auto done = produce_.produce(std::move(p));
  if (!done) return reply_refusal(res, done.refused());
  reply(res, 200, json_object([&](json_writer& w) {
          put(w, "partition", done->partition);
          w.Key("offsets");
          w.StartArray();
          for (auto o : done->offsets) w.Uint64(o);
          w.EndArray();
          put(w, "broker", done->broker.value());
        }));
}

void record_api::fetch(const httplib::Request& req, httplib::Response& res) {
  auto number = whole_number(req.matches[2], INT32_MAX);
  if (!number) return reply_error(res, 400, "invalid_argument", "partition: expected a whole number");
  frontend::fetch_request f;
  f.tp = {req.matches[1], static_cast<std::int32_t>(*number)};
  if (req.has_param("offset")) {
    auto o = whole_number(req.get_param_value("offset"), UINT64_MAX);
    if (!o) return reply_error(res, 400, "invalid_argument", "offset: expected a whole number");
    f.offset = *o;
  }
  if (req.has_param("max_bytes")) {
    auto m = whole_number(req.get_param_value("max_bytes"), UINT64_MAX);
    if (!m || *m == 0) return reply_error(res, 400, "invalid_argument", "max_bytes: expected a whole number > 0");
    f.max_bytes = static_cast<std::size_t>(std::min<std::uint64_t>(*m, 16u << 20));
  }
  if (req.has_param("isolation")) {
    auto iso = req.get_param_value("isolation");
    if (iso != "read_uncommitted" && iso != "read_committed")
      return reply_error(res, 400, "invalid_argument", "isolation: expected read_uncommitted or read_committed");
    f.read_committed = iso == "read_committed";
  }
  auto got = fetch_.fetch(f);
  if (!got) return reply_refusal(res, got.refused());
  reply(res, 200, json_object([&](json_writer& w) {
          w.Key("records");
          w.StartArray();
          for (const auto& v : got->records) {
            w.StartObject();
            put(w, "offset", v.offset);
            w.Key("key");
            if (v.key)
              w.String(v.key->data(), static_cast<rapidjson::SizeType>(v.key->size()));
            else
              w.Null();
            w.Key("value");
            w.String(v.value.data(), static_cast<rapidjson::SizeType>(v.value.size()));
            put(w, "timestamp", v.timestamp_ms);
            w.EndObject();
          }
          w.EndArray();
          put(w, "next_offset", got->next_offset);
          put(w, "end_offset", got->end_offset);
          if (got->last_stable_offset) put(w, "last_stable_offset", *got->last_stable_offset);
        }));
}

void record_api::commit(const httplib::Request& req, httplib::Response& res) {
  frontend::commit_request c;
  c.group = req.matches[1];
  rapidjson::Document d;
  if (!parse_body(req, res, d)) return;
  json::object_reader r(d, "");
  std::int64_t partition = -1, offset = -1;
  r.get("topic", c.tp.topic, true);
  r.get("partition", partition, true);
  r.get("offset", offset, true);
  r.get("member_id", c.member_id);
  r.get("member_epoch", c.member_epoch, !c.member_id.empty());
  r.get("metadata", c.metadata);
  if (r.ok() && c.metadata.size() > storage::max_commit_metadata)
    r.fail("metadata", "at most " + std::to_string(storage::max_commit_metadata) + " bytes");
  if (r.ok() && (partition < 0 || partition > INT32_MAX || offset < 0))
    r.fail_here("partition and offset must be >= 0 (and partition a 32-bit number)");
  if (r.ok() && !valid_client_name(c.group))
    r.fail_here("the group id must be 1 to 255 bytes of UTF-8 without control characters");
  if (auto s = r.finish(); !s) return reply_error(res, s.err());
  c.tp.partition = static_cast<std::int32_t>(partition);
  c.offset = static_cast<std::uint64_t>(offset);
  auto written = offsets_.commit(c);
  if (!written) {
    const auto& no = written.refused();
    if (no.by_coordinator && no.code() == errc::conflict)
      return reply_error(res, 409, "stale_member_epoch", no.message());
    if (no.by_coordinator && no.code() == errc::unavailable)
      return reply_error(res, 503, "coordinator_unavailable", no.message());
    return reply_refusal(res, no);
  }
  reply(res, 200, json_object([&](json_writer& w) {
          put(w, "group", c.group);
          put(w, "offset", offset);
        }));
}

void record_api::committed(const httplib::Request& req, httplib::Response& res) {
  const std::string group = req.matches[1];
  if (!req.has_param("topic") || !req.has_param("partition"))
    return reply_error(res, 400, "invalid_argument", "query parameters topic and partition are required");
  auto number = whole_number(req.get_param_value("partition"), INT32_MAX);
  if (!number) return reply_error(res, 400, "invalid_argument", "partition: expected a whole number");
  auto o = offsets_.committed(group, {req.get_param_value("topic"), static_cast<std::int32_t>(*number)});
  if (!o) return reply_refusal(res, o.refused());
  reply(res, 200, json_object([&](json_writer& w) {
          put(w, "group", group);
          w.Key("offset");
          if (*o)
            w.Uint64((*o)->offset);
          else
            w.Null();
          if (*o && !(*o)->metadata.empty()) put(w, "metadata", (*o)->metadata);
        }));
}

}  // namespace moonmq::daemon
