#include "record_api.hpp"

#include <rapidjson/document.h>

#include <chrono>

#include "api_reply.hpp"
#include "broker_metrics.hpp"
#include "json/object_reader.hpp"
#include "json/writer.hpp"
#include "moonmq/cluster/cluster_metrics.hpp"
#include "moonmq/core/fnv1a.hpp"
#include "moonmq/core/topic_name.hpp"
#include "moonmq/core/utf8.hpp"
#include "moonmq/groups/group_metrics.hpp"
#include "moonmq/txn/txn_metrics.hpp"

namespace moonmq::daemon {

namespace {

using json::put;
using json_writer = json::writer;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void record_api::routes(httplib::Server& api) {
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
  const std::string topic = req.matches[1];
  rapidjson::Document d;
  if (!parse_body(req, res, d)) return;
  json::object_reader r(d, "");
  std::int64_t partition = -1;
  const bool chosen = r.has("partition");
  r.get("partition", partition);
  const auto* list = r.member("records");
  const auto* transaction = r.member("transaction");
  if (r.ok() && (!list || !list->IsArray() || list->Empty())) r.fail("records", "expected a non-empty array");
  std::string tid;  // a transactional produce: the records join the producer's open transaction
  if (r.ok() && transaction && !transaction->IsNull()) {
    json::object_reader tr(*transaction, "transaction");
    tr.get("transactional_id", tid, true);
    if (tr.ok() && !valid_client_name(tid)) tr.fail("transactional_id", "must be 1 to 255 bytes of UTF-8");
    if (tr.ok() && !r.has("producer")) tr.fail_here("a transactional produce names its producer (id, epoch, sequence)");
    if (auto s = tr.finish(); !s) return reply_error(res, s.err());
  }
  // An idempotent producer's batch: each record is stamped with its sequence in this partition.
  std::optional<storage::producer_stamp> stamp;
  if (const auto* p = r.member("producer"); p && r.ok()) {
    json::object_reader pr(*p, "producer");
    std::uint64_t id = 0, epoch = 0, sequence = 0;
    pr.get("id", id, true);
    pr.get("epoch", epoch, true);
    pr.get("sequence", sequence, true);
    if (pr.ok() && (id == 0 || id > INT64_MAX)) pr.fail("id", "expected a producer id from POST /v1/producers");
    if (pr.ok() && epoch > UINT32_MAX) pr.fail("epoch", "out of range");
    if (pr.ok() && sequence > INT32_MAX) pr.fail("sequence", "out of range");
    if (auto s = pr.finish(); !s) return reply_error(res, s.err());
    stamp = storage::producer_stamp{id, static_cast<std::uint32_t>(epoch), static_cast<std::uint32_t>(sequence)};
  }
  if (auto s = r.finish(); !s) return reply_error(res, s.err());
  std::vector<storage::record> records;
  const std::int64_t ts = now_ms();
  for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
    json::object_reader rr((*list)[i], "records[" + std::to_string(i) + "]");
    storage::record rec;
    rec.timestamp_ms = ts;
    std::string key;
    const auto* k = rr.member("key");  // absent or null: a record without a key
    if (k && !k->IsNull() && rr.get("key", key)) rec.key = key;
    rr.get("value", rec.value, true);
    if (auto s = rr.finish(); !s) return reply_error(res, s.err());
    if (stamp) {
      rec.producer = *stamp;
      rec.producer->sequence += static_cast<std::uint32_t>(i);
    }
    if (!tid.empty()) rec.attributes |= storage::attr_transactional;
    records.push_back(std::move(rec));
  }
  std::vector<std::size_t> records_sent;  // key and value bytes of each, for the produce counters
  records_sent.reserve(records.size());
  for (const auto& rec : records) records_sent.push_back((rec.key ? rec.key->size() : 0) + rec.value.size());
  auto count = store_->partition_count(topic);
  std::optional<broker_id> elsewhere;  // the owner, for a topic this broker does not have
  std::map<std::int32_t, std::string> owners;
  if (!count) {
    // Not a topic here, but a partition the ownership table places on a peer (with Raft, every broker knows every
    // move): route it there.
    auto owner = chosen && partition >= 0 && partition <= INT32_MAX
                     ? ownership_->owner({topic, static_cast<std::int32_t>(partition)})
                     : std::nullopt;
    if (owner && *owner != self_) {
      count = static_cast<std::int32_t>(partition) + 1;
      elsewhere = owner;
    } else if (view_ && !(owners = view_->topic_owners(topic)).empty()) {
      // Without Raft nothing here knows: the brokers say which of them serve the topic's partitions.
      count = owners.rbegin()->first + 1;
    } else {
      return reply_error(res, count.err());
    }
  }
  if (chosen && (partition < 0 || partition >= *count))
    return reply_error(res, 404, "not_found", "topic '" + topic + "' has no partition " + std::to_string(partition));
  if (!chosen)
    partition = records[0].key ? fnv1a(*records[0].key) % static_cast<std::uint32_t>(*count)
                               : static_cast<std::int64_t>(round_robin_++ % static_cast<std::uint64_t>(*count));
  topic_partition tp{topic, static_cast<std::int32_t>(partition)};
  if (!owners.empty()) {
    auto it = owners.find(tp.partition);
    if (it == owners.end())
      return reply_error(res, 503, "unavailable",
                         "no reachable broker serves " + topic + "-" + std::to_string(partition) + "; retry");
    elsewhere = broker_id(it->second);
  }
  const broker_id seen_owner = elsewhere ? *elsewhere : cluster::owner_as_seen_by(*ownership_, tp, self_);
  broker_id recorded_owner = seen_owner;  // the owner the coordinator holds for the partition
  if (!tid.empty()) {
    // The coordinator records the partition first (so its markers will reach it); the owner opens the transaction
    // with the first batch it takes.
    auto joined = txns_->join(tid, stamp->id, stamp->epoch, tp, seen_owner);
    if (!joined) {
      if (joined.code() == errc::producer_fenced) metrics_.add(txn::metrics::producer_fenced, 1);
      return reply_error(res, joined.err());
    }
    recorded_owner = *joined;
  }
  // A topic this broker does not have goes straight to its owner (trying it here would only find no topic).
  auto local = elsewhere ? decltype(router_->try_local(tp, records))(*elsewhere) : router_->try_local(tp, records);
  result<cluster::produce_result> done = error{errc::internal, "not produced"};
  if (auto* here = std::get_if<result<cluster::produce_result>>(&local)) {
    done = std::move(*here);
  } else {
    // On this listener thread, straight to the owner: no hop to the reactor and back for every forwarded produce.
    const broker_id owner = std::get<broker_id>(local);
    auto now = router_->forward_blocking(tp, records, owner);
    done = now ? std::move(*now) : on_reactor(router_->forward(tp, std::move(records), owner));
  }
  if (!done) {
    if (done.code() == errc::producer_fenced) metrics_.add(txn::metrics::producer_fenced, 1);
    if (!tid.empty() && (done.code() == errc::conflict || done.code() == errc::producer_fenced))
      txns_->forget_join(tid, stamp->id, stamp->epoch, tp);
    return reply_error(res, done.err());
  }
  if (!tid.empty() && done->broker != recorded_owner) {
    // The coordinator was told of another owner (this broker's view was stale, and the forward followed the owner's
    // hints, or the partition moved since it was declared): the coordinator sends its markers straight to the broker
    // that took the records, which a broker on the way may not be alive to point to.
    if (auto s = txns_->join_again(tid, stamp->id, stamp->epoch, tp, done->broker); !s) {
      txns_->forget_join(tid, stamp->id, stamp->epoch, tp);
      return reply_error(res, s.err());  // a retry is deduplicated and asks again
    }
  }
  {
    double bytes = 0;
    for (const auto& rec : records_sent) bytes += static_cast<double>(rec);
    metrics_.add(metrics::produced_records, {{"topic", topic}}, static_cast<double>(done->offsets.size()));
    metrics_.add(metrics::produced_bytes, {{"topic", topic}}, bytes);
  }
  reply(res, 200, json_object([&](json_writer& w) {
          put(w, "partition", tp.partition);
          w.Key("offsets");
          w.StartArray();
          for (auto o : done->offsets) w.Uint64(o);
          w.EndArray();
          put(w, "broker", done->broker.value());
        }));
}

/// 421 naming the owner; 503 `unavailable` when that is this broker but it does not serve the partition yet (a
/// handover to it, or catching up with Raft after a start): the client retries.
void record_api::not_owner(httplib::Response& res, const topic_partition& tp) {
  auto e = cluster::entry_as_seen_by(*ownership_, tp, self_);
  if (e.owner == self_)
    return reply_error(res, 503, "unavailable",
                       ownership_->ready() ? tp.topic + "-" + std::to_string(tp.partition) +
                                                 " is being handed over to this broker; retry"
                                           : "this broker is catching up with the cluster's ownership log; retry");
  reply(res, 421, json_object([&](json_writer& w) {
          put(w, "error", "not_owner");
          put(w, "owner", e.owner.value());
        }));
}

/// 416 `offset_out_of_range` with the log's bounds. A log is never cut from the front, so it starts at 0.
void record_api::out_of_range(httplib::Response& res, const topic_partition& tp, std::uint64_t offset,
                              std::uint64_t end) {
  reply(res, 416, json_object([&](json_writer& w) {
          put(w, "error", "offset_out_of_range");
          put(w, "message", name_of(tp) + ": offset " + std::to_string(offset) + " is past the end offset " +
                                std::to_string(end));
          put(w, "start_offset", std::uint64_t{0});
          put(w, "end_offset", end);
        }));
}

void record_api::fetch(const httplib::Request& req, httplib::Response& res) {
  auto number = whole_number(req.matches[2], INT32_MAX);
  if (!number) return reply_error(res, 400, "invalid_argument", "partition: expected a whole number");
  topic_partition tp{req.matches[1], static_cast<std::int32_t>(*number)};
  std::uint64_t offset = 0;
  std::size_t max_bytes = 1 << 20;
  if (req.has_param("offset")) {
    auto o = whole_number(req.get_param_value("offset"), UINT64_MAX);
    if (!o) return reply_error(res, 400, "invalid_argument", "offset: expected a whole number");
    offset = *o;
  }
  if (req.has_param("max_bytes")) {
    auto m = whole_number(req.get_param_value("max_bytes"), UINT64_MAX);
    if (!m || *m == 0) return reply_error(res, 400, "invalid_argument", "max_bytes: expected a whole number > 0");
    max_bytes = static_cast<std::size_t>(std::min<std::uint64_t>(*m, 16u << 20));
  }
  bool committed_only = false;
  if (req.has_param("isolation")) {
    auto iso = req.get_param_value("isolation");
    if (iso != "read_uncommitted" && iso != "read_committed")
      return reply_error(res, 400, "invalid_argument", "isolation: expected read_uncommitted or read_committed");
    committed_only = iso == "read_committed";
  }
  if (!store_->partition_count(tp.topic) && view_) {
    // A topic this broker has never had: the broker that serves it, if one does.
    if (auto owner = view_->owner_of(tp); owner && *owner != self_.value())
      return reply(res, 421, json_object([&](json_writer& w) {
                     put(w, "error", "not_owner");
                     put(w, "owner", *owner);
                   }));
  }
  if (!cluster::serves(*ownership_, tp, self_)) return not_owner(res, tp);
  // An offset inside a record reads from the next one (Kafka clients fetch at a record's offset + 1); one past the
  // end is out of range, with the log's bounds so that a consumer can reset.
  auto end = store_->end_offset(tp);
  if (!end) return reply_error(res, end.err());
  if (offset > *end) return out_of_range(res, tp, offset, *end);
  auto start = store_->next_record(tp, offset);
  if (!start) return reply_error(res, start.err());
  offset = *start;
  // read_committed: the last stable offset and the aborted ranges, taken before the read. Every record of a
  // transaction still open then lies at or past the LSO, so what the read adds later is cut off by it.
  std::optional<cluster::producer_states::committed_view> stable;
  if (committed_only) {
    auto c = producers_->committed(tp, offset);
    if (!c) return reply_error(res, c.err());
    stable = std::move(*c);
    metrics_.set(txn::metrics::lso_lag, {{"topic", tp.topic}, {"partition", std::to_string(tp.partition)}},
                 static_cast<double>(*end - std::min(*end, stable->last_stable_offset)));
  }
  auto r = store_->read(tp, offset, max_bytes);
  if (!r) return reply_error(res, r.err());
  counters_.count_consume(tp, r->bytes.size());
  auto views = storage::decode_frames(r->bytes.view(), offset);
  std::uint64_t next = r->next_offset;
  if (stable) next = std::min(next, std::max(offset, stable->last_stable_offset));
  std::size_t fetched = 0, fetched_bytes = 0;
  reply(res, 200, json_object([&](json_writer& w) {
          w.Key("records");
          w.StartArray();
          for (const auto& v : views) {
            if (stable && v.offset >= stable->last_stable_offset) break;
            if (v.attributes & storage::attr_control) continue;
            if (stable && !stable->visible(v)) continue;
            ++fetched;
            fetched_bytes += (v.key ? v.key->size() : 0) + v.value.size();
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
          put(w, "next_offset", next);
          put(w, "end_offset", r->end_offset);
          if (stable) put(w, "last_stable_offset", stable->last_stable_offset);
        }));
  metrics_.add(metrics::fetched_records, {{"topic", tp.topic}}, static_cast<double>(fetched));
  metrics_.add(metrics::fetched_bytes, {{"topic", tp.topic}}, static_cast<double>(fetched_bytes));
}

void record_api::commit(const httplib::Request& req, httplib::Response& res) {
  const std::string group = req.matches[1];
  rapidjson::Document d;
  if (!parse_body(req, res, d)) return;
  json::object_reader r(d, "");
  std::string topic, member_id;
  std::int64_t partition = -1, offset = -1;
  std::uint64_t member_epoch = 0;
  r.get("topic", topic, true);
  r.get("partition", partition, true);
  r.get("offset", offset, true);
  r.get("member_id", member_id);
  r.get("member_epoch", member_epoch, !member_id.empty());
  if (r.ok() && (partition < 0 || partition > INT32_MAX || offset < 0))
    r.fail_here("partition and offset must be >= 0 (and partition a 32-bit number)");
  if (r.ok() && !valid_client_name(group))
    r.fail_here("the group id must be 1 to 255 bytes of UTF-8 without control characters");
  if (auto s = r.finish(); !s) return reply_error(res, s.err());
  topic_partition tp{topic, static_cast<std::int32_t>(partition)};
  // Fenced by the group's coordinator: only the member that holds the partition, at an epoch it held it, commits;
  // without a member only while the group has none. Check and write happen under the (group, partition) commit
  // gate, which a clearance passes before the partition is handed to its next holder.
  // Where the partition is not served or does not exist, say so before asking the coordinator anything.
  if (!cluster::serves(*ownership_, tp, self_)) return not_owner(res, tp);
  if (auto count = store_->partition_count(topic); !count || tp.partition >= *count)
    return reply_error(res, 404, "not_found", "topic '" + topic + "' has no partition " + std::to_string(partition));
  // A position past the end would leave the group's consumer stuck there: refused, with the log's bounds (the end
  // only grows, so the check holds when the commit is written).
  if (auto end = store_->end_offset(tp); !end)
    return reply_error(res, end.err());
  else if (static_cast<std::uint64_t>(offset) > *end)
    return out_of_range(res, tp, static_cast<std::uint64_t>(offset), *end);
  bool not_served = false, missing = false;
  auto written = group_routes_->fenced_commit(group, member_id, member_epoch, tp, [&]() -> status {
    // Refused where the partition is not served: what a move pushed is then complete.
    std::shared_lock gate(gates_.gate(tp));
    if (!cluster::serves(*ownership_, tp, self_)) {
      not_served = true;
      return {};
    }
    // Only for a partition that exists here: a commit is durable state, and nobody may make a broker keep offsets
    // of topics it does not have.
    auto count = store_->partition_count(topic);
    if (!count || tp.partition >= *count) {
      missing = true;
      return {};
    }
    return offsets_->commit(group, tp, static_cast<std::uint64_t>(offset));
  });
  if (!written) {
    if (written.code() == errc::conflict) {
      if (groups_->has_members(group) || group_routes_->coordinator_of(group) != self_)
        metrics_.add(groups::metrics::fenced_commits, {{"group", group}}, 1);
      return reply_error(res, 409, "stale_member_epoch", written.message());
    }
    if (written.code() == errc::unavailable) return reply_error(res, 503, "coordinator_unavailable", written.message());
    return reply_error(res, written.err());
  }
  if (not_served) return not_owner(res, tp);
  if (missing) return reply_error(res, 404, "not_found", "topic '" + topic + "' has no partition " + std::to_string(partition));
  reply(res, 200, json_object([&](json_writer& w) {
          put(w, "group", group);
          put(w, "offset", offset);
        }));
}

void record_api::committed(const httplib::Request& req, httplib::Response& res) {
  const std::string group = req.matches[1];
  if (!req.has_param("topic") || !req.has_param("partition"))
    return reply_error(res, 400, "invalid_argument", "query parameters topic and partition are required");
  auto number = whole_number(req.get_param_value("partition"), INT32_MAX);
  if (!number) return reply_error(res, 400, "invalid_argument", "partition: expected a whole number");
  topic_partition tp{req.get_param_value("topic"), static_cast<std::int32_t>(*number)};
  // Like a commit: a broker that moved the partition away answers with its owner, never a stale offset.
  if (!cluster::serves(*ownership_, tp, self_)) return not_owner(res, tp);
  auto o = offsets_->committed(group, tp);
  reply(res, 200, json_object([&](json_writer& w) {
          put(w, "group", group);
          w.Key("offset");
          if (o)
            w.Uint64(*o);
          else
            w.Null();
        }));
}

}  // namespace moonmq::daemon
