#include "frontend/topic_wire.hpp"

#include <rapidjson/document.h>

namespace moonmq::frontend::wire {

transport::response topic_refusal_response(const refusal& r) {
  if (r.code() == errc::already_exists) return transport::error_response(409, "topic_exists", r.message());
  if (r.code() == errc::not_owner && r.by_coordinator)
    return transport::error_response(421, "not_coordinator", r.message());
  return transport::error_response(transport::http_status_of(r.code()), errc_name(r.code()), r.message());
}

refusal read_topic_refusal(const transport::response& r) {
  if (r.status == 0) return refusal{{errc::unavailable, "no answer: " + r.body}, {}, {}};
  error e = transport::error_of(r);
  rapidjson::Document d;
  if (json::parse_object(r.body, d) && d.HasMember("error") && d["error"].IsString()) {
    const std::string_view name = d["error"].GetString();
    if (r.status == 409 && name == "topic_exists") e.code = errc::already_exists;
    if (r.status == 421 && name == "not_coordinator") {
      refusal out{{errc::not_owner, e.message}, {}, {}};
      out.by_coordinator = true;
      return out;
    }
  }
  return refusal{std::move(e), {}, {}};
}

std::string topic_decision_body(const topic_decision& d) {
  return json::object([&](json::writer& w) {
    json::put(w, "name", d.record.name);
    json::put(w, "partitions", d.record.partitions());
    if (!d.in_catalog) {
      json::put(w, "catalog", false);
      return;
    }
    json::put(w, "version", d.record.version);
    json::put(w, "created", d.record.created);
    cluster::wire::write_owners(w, "owners", d.record.owners);
    if (d.record.deleted) json::put(w, "deleted", true);
    // Decided and durable on the coordinator; these brokers learn it when they next catch up.
    if (!d.not_yet_told.empty()) json::put(w, "not_yet_told", d.not_yet_told);
  });
}

result<topic_decision> read_topic_decision(std::string_view body) {
  rapidjson::Document doc;
  if (auto s = json::parse_document(body, doc, "body"); !s) return s.err();
  json::object_reader r(doc, "");
  topic_decision d;
  std::int64_t partitions = 0;
  r.get("name", d.record.name, true);
  r.get("partitions", partitions, true);
  r.get("catalog", d.in_catalog);
  if (d.in_catalog) {
    r.get("version", d.record.version, true);
    r.get("created", d.record.created, true);
    cluster::wire::read_owners(r, "owners", d.record.owners);
    r.get("deleted", d.record.deleted);
    r.get("not_yet_told", d.not_yet_told);
  } else if (r.ok() && partitions >= 0 && partitions <= storage::max_partitions_per_topic_hard) {
    d.record.owners.resize(static_cast<std::size_t>(partitions));
  }
  if (r.ok() && partitions != d.record.partitions()) r.fail("partitions", "does not match the owners");
  if (auto s = r.finish(); !s) return s.err();
  return d;
}

std::string topic_list_body(const std::vector<topic_listing>& topics, const broker_id& self) {
  return json::object([&](json::writer& w) {
    w.Key("topics");
    w.StartArray();
    for (const auto& t : topics) {
      w.StartObject();
      json::put(w, "name", t.record.name);
      json::put(w, "partitions", t.record.partitions());
      if (t.in_catalog) {
        json::put(w, "version", t.record.version);
        cluster::wire::write_owners(w, "owners", t.record.owners);
      } else {  // this broker's own, made before topics were cluster metadata
        json::put(w, "catalog", false);
        json::put(w, "broker", self.value());
      }
      w.EndObject();
    }
    w.EndArray();
  });
}

std::string topic_change_request_body(const topic_admin_request& r) {
  return json::object([&](json::writer& w) {
    json::put(w, "op", topic_admin_op_name(r.op));
    json::put(w, "name", r.name);
    json::put(w, "partitions", r.partitions);
    json::put(w, "placement", r.exact ? "exact" : r.local ? "local" : "spread");
    json::put(w, "brokers", r.brokers);
  });
}

result<topic_admin_request> read_topic_change_request(std::string_view body) {
  rapidjson::Document d;
  if (auto s = json::parse_document(body, d, "body"); !s) return s.err();
  json::object_reader r(d, "");
  topic_admin_request out;
  std::string op, placement;
  r.get("op", op, true);
  r.get("name", out.name, true);
  r.get("partitions", out.partitions, true);
  r.get("placement", placement, true);
  r.get("brokers", out.brokers, true);
  auto known = topic_admin_op_of(op);
  if (r.ok() && !known) r.fail("op", "expected create, grow, delete or adopt");
  if (r.ok() && placement != "local" && placement != "spread" && placement != "exact")
    r.fail("placement", "expected spread, local or exact");
  if (auto s = r.finish(); !s) return s.err();
  out.op = *known;
  out.local = placement == "local";
  out.exact = placement == "exact";
  return out;
}

std::string topic_holding_body(const topic_holding& h) {
  return json::object([&](json::writer& w) {
    json::put(w, "holds", h.holds);
    json::put(w, "served", static_cast<std::uint64_t>(h.served));
    if (!h.room) {
      w.Key("no_room");
      w.StartObject();
      json::put(w, "error", errc_name(h.room.code()));
      json::put(w, "message", h.room.message());
      w.EndObject();
    }
  });
}

topic_holding read_topic_holding(const broker_id& peer, const transport::response& r) {
  topic_holding h;
  h.broker = peer;
  rapidjson::Document d;
  if (!r.ok() || !json::parse_object(r.body, d) || !d.HasMember("holds") || !d["holds"].IsBool() ||
      !d.HasMember("served") || !d["served"].IsUint64()) {
    h.answered = false;
    h.silence = r.status ? "HTTP " + std::to_string(r.status) + ": " + r.body : "no answer: " + r.body;
    return h;
  }
  h.holds = d["holds"].GetBool();
  h.served = d["served"].GetUint64();
  if (d.HasMember("no_room") && d["no_room"].IsObject()) {
    const auto& why = d["no_room"];
    std::optional<errc> code;
    if (why.HasMember("error") && why["error"].IsString()) code = errc_from_name(why["error"].GetString());
    // A broker's limit names its own code; anything else it says is a refusal of the request's shape.
    h.room = error{code && *code == errc::resource_exhausted ? errc::resource_exhausted : errc::invalid_argument,
                   why.HasMember("message") && why["message"].IsString() ? why["message"].GetString() : ""};
  }
  return h;
}

std::string topic_claim_body(const topic_claim& c) {
  return json::object([&](json::writer& w) {
    json::put(w, "name", c.name);
    json::put(w, "created", c.created);
    json::put(w, "partitions", c.partitions);
    w.Key("disowned");
    w.StartArray();
    for (std::int32_t p : c.disowned) w.Int(p);
    w.EndArray();
  });
}

result<topic_claim> read_topic_claim(std::string_view body) {
  rapidjson::Document d;
  if (auto s = json::parse_document(body, d, "body"); !s) return s.err();
  json::object_reader r(d, "");
  topic_claim c;
  std::uint32_t partitions = 0;
  r.get("name", c.name, true);
  r.get("created", c.created, true);
  r.get("partitions", partitions, true);
  if (const rapidjson::Value* list = r.member("disowned"); list && list->IsArray()) {
    for (const auto& v : list->GetArray())
      if (v.IsInt() && v.GetInt() >= 0)
        c.disowned.insert(v.GetInt());
      else
        r.fail("disowned", "expected partitions");
  } else if (list) {
    r.fail("disowned", "expected an array of partitions");
  }
  if (r.ok() && partitions > static_cast<std::uint32_t>(storage::max_partitions_per_topic_hard))
    r.fail("partitions", "must be at most " + std::to_string(storage::max_partitions_per_topic_hard));
  if (auto s = r.finish(); !s) return s.err();
  c.partitions = static_cast<std::int32_t>(partitions);
  return c;
}

}  // namespace moonmq::frontend::wire
