#include "targets.hpp"

#include <cstdlib>
#include <set>
#include <string>

#include "cluster/topic_json.hpp"
#include "json/object_reader.hpp"
#include "json/writer.hpp"
#include "moonmq/autobalancer/snapshot_json.hpp"
#include "moonmq/cluster/settings_loader.hpp"
#include "moonmq/core/utf8.hpp"
#include "moonmq/kafka/group_messages.hpp"
#include "moonmq/kafka/messages.hpp"
#include "moonmq/kafka/record_batch.hpp"
#include "moonmq/kafka/scram.hpp"
#include "moonmq/kafka/txn_messages.hpp"
#include "moonmq/storage/record.hpp"
#include "raft/message_json.hpp"
#include "transport/http1.hpp"
#include "txn/txn_record.hpp"

namespace moonmq::fuzz {

namespace {

std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// A property every input must keep; a break is a crash libFuzzer reports with the input.
void must(bool holds) {
  if (!holds) std::abort();
}

/// What the one JSON reader promises of every document it accepts: nesting within max_depth, every string and key
/// well-formed UTF-8, no key twice in one object.
void check_document(const rapidjson::Value& v, std::size_t depth) {
  if (v.IsString()) must(valid_utf8(std::string_view(v.GetString(), v.GetStringLength())));
  if (v.IsArray()) {
    must(depth < json::max_depth);
    for (const auto& e : v.GetArray()) check_document(e, depth + 1);
  }
  if (v.IsObject()) {
    must(depth < json::max_depth);
    std::set<std::string_view> keys;
    for (const auto& m : v.GetObject()) {
      const std::string_view k(m.name.GetString(), m.name.GetStringLength());
      must(valid_utf8(k));
      must(keys.insert(k).second);
      check_document(m.value, depth + 1);
    }
  }
}

}  // namespace

int http1_request(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = text_of(data, size);
  const std::size_t end = transport::http1::head_end(in);
  auto parsed = transport::http1::parse_request_head(end == std::string_view::npos ? in : in.substr(0, end));
  if (auto* head = std::get_if<transport::http1::request_head>(&parsed)) {
    must(!head->method.empty());
    (void)head->headers.find("Content-Type");
  } else {
    const int status = std::get<transport::http1::refusal>(parsed).status;
    must(status == 400 || status == 411 || status == 413 || status == 431 || status == 501);
  }
  return 0;
}

int http1_response(const std::uint8_t* data, std::size_t size) {
  auto parsed = transport::http1::parse_response_head(text_of(data, size));
  if (parsed) must(parsed->status >= 100 && parsed->status <= 999);
  return 0;
}

int json_reader(const std::uint8_t* data, std::size_t size) {
  rapidjson::Document d;
  if (!json::parse_document(text_of(data, size), d, "fuzz")) return 0;
  check_document(d, 0);
  if (!d.IsObject()) return 0;
  // The strict reader over whatever arrived: every getter and the unknown-key check.
  json::object_reader r(d, "");
  std::string s;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double f = 0;
  bool b = false;
  std::vector<std::string> list;
  r.get("topic", s);
  r.get("partition", i);
  r.get("offset", u);
  r.get("rate", f);
  r.get("flag", b);
  r.get("names", list);
  (void)r.member("records");
  (void)r.finish();
  return 0;
}

int config_loader(const std::uint8_t* data, std::size_t size) {
  auto c = cluster::parse_settings(text_of(data, size), {}, "fuzz.json");
  if (c && c->cluster) must(!c->cluster->broker_id.empty());
  return 0;
}

int record_frames(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = text_of(data, size);
  auto scan = storage::scan_frames(in);
  must(scan.whole <= in.size());
  auto views = storage::decode_frames(in.substr(0, scan.whole), 0);
  std::uint64_t next = 0;
  for (const auto& v : views) {
    must(v.offset == next);
    next += v.frame_size;
  }
  must(next == scan.whole);
  if (scan.end == storage::frame_scan::ending::corrupt)
    (void)storage::is_torn_last_write(in.substr(scan.whole), scan.whole, in.size(),
                                      [&](std::uint64_t at) { return storage::all_zero_from(in, at); });
  // Whatever decodes, encodes back to the same bytes: with its Kafka batch position (to_record leaves it out, for a
  // copy appended elsewhere), and for frames the encoder writes (it never sets the headers bit for no headers).
  std::size_t at = 0;
  for (const auto& v : views) {
    const std::string_view frame = in.substr(at, v.frame_size);
    at += v.frame_size;
    if ((v.attributes & storage::attr_headers) && v.headers.empty()) continue;
    auto r = storage::to_record(v);
    r.batch = v.batch;
    must(storage::encode_frame(r) == frame);
  }
  return 0;
}

int raft_message(const std::uint8_t* data, std::size_t size) {
  const std::string in(text_of(data, size));
  if (auto m = raft::wire::decode(in)) {
    auto back = raft::wire::decode(raft::wire::encode(*m));  // what decodes, survives a round trip
    must(back.ok() && back->type == m->type && back->term == m->term && back->from == m->from);
  }
  (void)raft::wire::decode_proposal(in);
  (void)raft::wire::decode_appended(in);
  return 0;
}

int topic_metadata(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = text_of(data, size);
  // What decodes survives a round trip: a change (a Raft entry, a forwarded change), a record (a coordinator's
  // tell) and a whole catalog (topics.json, a Raft snapshot's "topics").
  if (auto c = cluster::wire::read_topic_change(in)) {
    auto back = cluster::wire::read_topic_change(cluster::wire::topic_change_body(*c));
    must(back.ok() && *back == *c);
    cluster::topic_catalog cat;
    (void)cat.apply(*c);  // a change applies or is refused, never half
  }
  if (auto r = cluster::wire::read_topic_record(in)) {
    auto back = cluster::wire::read_topic_record(cluster::wire::topic_record_body(*r));
    must(back.ok() && *back == *r);
  }
  rapidjson::Document d;
  if (json::parse_object(in, d))
    if (auto cat = cluster::wire::read_catalog(d, "fuzz")) {
      rapidjson::Document again;
      must(json::parse_object(json::object([&](json::writer& w) { cluster::wire::write_catalog(w, *cat); }), again));
      auto back = cluster::wire::read_catalog(again, "fuzz");
      must(back.ok() && *back == *cat);
    }
  return 0;
}

int planner_snapshot(const std::uint8_t* data, std::size_t size) {
  auto input = autobalancer::parse_planner_input(text_of(data, size));
  if (!input) return 0;
  // What the reader accepted is a snapshot the planner can take: every partition sits on a known broker.
  must(input->snap.broker_count() > 0 || input->snap.partition_count() == 0);
  return 0;
}

int txn_record(const std::uint8_t* data, std::size_t size) {
  auto t = txn::parse_transaction(std::string(text_of(data, size)), "fuzz");
  if (!t) {
    must(t.code() == errc::corrupt);
    return 0;
  }
  // What the coordinator reads back from its log, it writes again the same way.
  auto again = txn::parse_transaction(txn::render_transaction(*t), "fuzz");
  must(static_cast<bool>(again) && *again == *t);
  return 0;
}

/// A Kafka request as the listener reads it (the bytes after the size prefix): the header, then the body of its API
/// and version; a produce's record batches are decoded too, and what decodes is encoded again as a fetch would.
/// Nothing may read past the input or size anything from an unchecked length.
int kafka_request(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = text_of(data, size);
  kafka::reader r(in);
  kafka::request_header h;
  if (!kafka::decode_header(r, h)) return 0;
  must(r.position() <= in.size());
  const auto range = kafka::supported(h.api_key);
  if (!range || h.api_version < range->min || h.api_version > range->max) return 0;
  switch (range->key) {
    case kafka::api::produce: {
      kafka::produce_request p;
      if (!kafka::decode(r, h.api_version, p)) return 0;
      for (const auto& t : p.topics)
        for (const auto& part : t.partitions) {
          if (!part.records) continue;
          auto batch = kafka::decode_produced_batch(*part.records, 1u << 20);
          if (auto* b = std::get_if<kafka::produced_batch>(&batch)) {
            must(!b->records.empty());
            // The decoder writes the log's frames itself: they must be whole, valid frames, one per record.
            const auto scan = storage::scan_frames(b->records.bytes);
            must(scan.end == storage::frame_scan::ending::clean && scan.records == b->records.size());
            auto views = storage::decode_frames(b->records.bytes, 0);
            std::string out;
            kafka::encode_batches(views, out);
            // A fetch's batches have offset deltas with gaps (byte offsets), which a produce may not carry: decoded
            // again they are refused, never misread.
            must(!std::holds_alternative<kafka::produced_batch>(kafka::decode_produced_batch(out)) || out.empty());
          }
        }
      return 0;
    }
    case kafka::api::fetch: {
      kafka::fetch_request f;
      (void)kafka::decode(r, h.api_version, f);
      return 0;
    }
    case kafka::api::list_offsets: {
      kafka::list_offsets_request l;
      (void)kafka::decode(r, h.api_version, l);
      return 0;
    }
    case kafka::api::metadata: {
      kafka::metadata_request m;
      (void)kafka::decode(r, h.api_version, m);
      return 0;
    }
    case kafka::api::create_topics: {
      kafka::create_topics_request c;
      (void)kafka::decode(r, h.api_version, c);
      return 0;
    }
    case kafka::api::init_producer_id: {
      kafka::init_producer_id_request i;
      (void)kafka::decode(r, h.api_version, i);
      return 0;
    }
    case kafka::api::sasl_handshake: {
      kafka::sasl_handshake_request s;
      (void)kafka::decode(r, h.api_version, s);
      return 0;
    }
    case kafka::api::sasl_authenticate: {
      kafka::sasl_authenticate_request s;
      if (!kafka::decode(r, h.api_version, s)) return 0;
      // The SCRAM exchange reads the client's messages: its first and final steps on the same bytes.
      kafka::scram::server_exchange x;
      if (x.first(s.auth_bytes)) {
        must(!x.user().empty());
        const auto challenge = x.challenge({kafka::scram::unknown_user(x.user(), "fuzz")}, "servernonce");
        must(challenge.starts_with("r="));
        must(!x.finish(s.auth_bytes));  // no proof matches an unknown user's credential
      }
      return 0;
    }
    case kafka::api::create_partitions: {
      kafka::create_partitions_request c;
      (void)kafka::decode(r, h.api_version, c);
      return 0;
    }
    case kafka::api::delete_topics: {
      kafka::delete_topics_request d;
      (void)kafka::decode(r, h.api_version, d);
      return 0;
    }
    case kafka::api::describe_configs: {
      kafka::describe_configs_request d;
      (void)kafka::decode(r, h.api_version, d);
      return 0;
    }
    case kafka::api::offset_for_leader_epoch: {
      kafka::offset_for_leader_epoch_request o;
      (void)kafka::decode(r, h.api_version, o);
      return 0;
    }
    case kafka::api::find_coordinator: {
      kafka::find_coordinator_request f;
      (void)kafka::decode(r, h.api_version, f);
      return 0;
    }
    case kafka::api::join_group: {
      kafka::join_group_request j;
      if (!kafka::decode(r, h.api_version, j)) return 0;
      // Each protocol's metadata is a member's subscription: read it; what it owns, assigned back, reads the same.
      for (const auto& p : j.protocols) {
        auto sub = kafka::decode_subscription(p.metadata);
        if (!sub) continue;
        const auto assignment = kafka::encode_assignment(sub->owned);
        kafka::reader back(assignment);
        must(back.i16() == 0);
        std::size_t partitions = 0;
        const std::int32_t topics = back.array_count(false, 6);
        for (std::int32_t t = 0; t < topics && back.ok(); ++t) {
          back.string(false);
          const std::int32_t n = back.array_count(false, 4);
          for (std::int32_t k = 0; k < n && back.ok(); ++k, ++partitions) back.i32();
        }
        must(back.bytes(false).has_value() && back.ok() && back.left() == 0 && partitions == sub->owned.size());
      }
      return 0;
    }
    case kafka::api::sync_group: {
      kafka::sync_group_request s;
      (void)kafka::decode(r, h.api_version, s);
      return 0;
    }
    case kafka::api::heartbeat: {
      kafka::heartbeat_request b;
      (void)kafka::decode(r, h.api_version, b);
      return 0;
    }
    case kafka::api::leave_group: {
      kafka::leave_group_request l;
      (void)kafka::decode(r, h.api_version, l);
      return 0;
    }
    case kafka::api::offset_commit: {
      kafka::offset_commit_request o;
      (void)kafka::decode(r, h.api_version, o);
      return 0;
    }
    case kafka::api::offset_fetch: {
      kafka::offset_fetch_request o;
      (void)kafka::decode(r, h.api_version, o);
      return 0;
    }
    case kafka::api::add_partitions_to_txn: {
      kafka::add_partitions_to_txn_request a;
      if (!kafka::decode(r, h.api_version, a)) return 0;
      std::size_t n = 0;
      for (const auto& t : a.topics) n += t.partitions.size();
      must(n <= kafka::max_txn_request_entries);
      return 0;
    }
    case kafka::api::add_offsets_to_txn: {
      kafka::add_offsets_to_txn_request a;
      (void)kafka::decode(r, h.api_version, a);
      return 0;
    }
    case kafka::api::end_txn: {
      kafka::end_txn_request e;
      (void)kafka::decode(r, h.api_version, e);
      return 0;
    }
    case kafka::api::txn_offset_commit: {
      kafka::txn_offset_commit_request t;
      if (!kafka::decode(r, h.api_version, t)) return 0;
      std::size_t n = 0;
      for (const auto& tp : t.topics) n += tp.partitions.size();
      must(n <= kafka::max_txn_request_entries);
      // The answer, one entry per partition asked, encodes in the same version.
      kafka::txn_offset_commit_response out;
      for (const auto& tp : t.topics) {
        out.topics.push_back({tp.name, {}});
        for (const auto& p : tp.partitions) out.topics.back().partitions.push_back({p.index, 0});
      }
      kafka::writer w;
      kafka::encode(w, h.api_version, out);
      kafka::reader back(w.bytes());
      back.i32();  // throttle
      must(back.array_count(h.api_version >= 3) == static_cast<std::int32_t>(out.topics.size()) && back.ok());
      return 0;
    }
    case kafka::api::api_versions:
      return 0;
  }
  return 0;
}

}  // namespace moonmq::fuzz
