// The bodies of the transaction coordinator's calls, each written and read side by side: a producer call's common
// fields, a producer's identity (POST /cluster/txn/init, POST /v1/producers) and an end's answer (POST
// /cluster/txn/end, POST /v1/transactions/{id}/commit|abort). Internal to lib/ and daemon/.
#pragma once

#include <rapidjson/document.h>

#include <functional>
#include <string>
#include <string_view>

#include "json/object_reader.hpp"
#include "json/parse.hpp"
#include "json/writer.hpp"
#include "moonmq/txn/txn_service.hpp"

namespace moonmq::txn::wire {

/// `{"transactional_id","producer_id","producer_epoch", ...}` with what `more` adds.
inline std::string producer_body(const std::string& id, std::uint64_t producer_id, std::uint32_t epoch,
                          const std::function<void(json::writer&)>& more) {
  return json::object([&](json::writer& w) {
    json::put(w, "transactional_id", id);
    json::put(w, "producer_id", producer_id);
    json::put(w, "producer_epoch", epoch);
    more(w);
  });
}

inline std::string identity_body(const producer_identity& p) {
  return json::object([&](json::writer& w) {
    json::put(w, "producer_id", p.producer_id);
    json::put(w, "producer_epoch", p.epoch);
  });
}

inline result<producer_identity> read_identity(std::string_view body) {
  rapidjson::Document d;
  if (auto s = json::parse_document(body, d, "the coordinator's answer"); !s) return s.err();
  json::object_reader r(d, "");
  producer_identity p;
  std::uint64_t epoch = 0;
  r.get("producer_id", p.producer_id, true);
  r.get("producer_epoch", epoch, true);
  if (r.ok() && epoch > UINT32_MAX) r.fail("producer_epoch", "out of range");
  if (auto s = r.finish(); !s) return s.err();
  p.epoch = static_cast<std::uint32_t>(epoch);
  return p;
}

inline std::string end_answer_body(const end_answer& a) {
  return json::object([&](json::writer& w) {
    json::put(w, "state", a.state);
    json::put(w, "producer_epoch", a.epoch);
    json::put(w, "pending", a.pending);
  });
}

inline result<end_answer> read_end_answer(std::string_view body) {
  rapidjson::Document d;
  if (auto s = json::parse_document(body, d, "the coordinator's answer"); !s) return s.err();
  json::object_reader r(d, "");
  end_answer a;
  std::uint64_t epoch = 0;
  r.get("state", a.state, true);
  r.get("producer_epoch", epoch, true);
  r.get("pending", a.pending, true);
  if (r.ok() && epoch > UINT32_MAX) r.fail("producer_epoch", "out of range");
  if (auto s = r.finish(); !s) return s.err();
  a.epoch = static_cast<std::uint32_t>(epoch);
  return a;
}

}  // namespace moonmq::txn::wire
