// The bodies of the transaction coordinator's calls, each written and read side by side:
//   POST /cluster/txn/init     init_request -> a producer's identity (also POST /v1/producers)
//   POST /cluster/txn/add      add_request -> add_answer (the owners the coordinator holds)
//   POST /cluster/txn/offsets  offsets_call -> {}
//   POST /cluster/txn/end      end_call -> end_answer (also POST /v1/transactions/{id}/commit|abort)
// and the coordinator's calls to a partition's owner (owner_call; a broker that does not own it answers 421 with
// the owner it knows, not_owner):
//   POST /cluster/txn/enroll | markers | commit_offsets
// A call's reader refuses a field it does not know; an answer's reader leaves one alone at its top level. Internal to
// lib/ and daemon/.
#pragma once

#include <rapidjson/document.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "json/object_reader.hpp"
#include "json/parse.hpp"
#include "json/writer.hpp"
#include "moonmq/core/topic_name.hpp"
#include "moonmq/core/utf8.hpp"
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

constexpr std::size_t max_partitions = 10000;  ///< partitions or offsets one call names

/// One element of a call's list: {"topic","partition"[,"owner"][,"offset"]}. An empty owner: the sender's own.
struct partition_ref {
  topic_partition tp;
  std::string owner;
  std::uint64_t offset = 0;
};

/// Reads `key` as a list of partition_ref (absent: none); each element's unknown fields are refused.
inline result<std::vector<partition_ref>> read_refs(json::object_reader& r, const char* key, bool with_offset) {
  std::vector<partition_ref> out;
  const auto* list = r.member(key);
  if (!list) return out;
  if (!list->IsArray() || list->Size() > max_partitions)
    return error{errc::invalid_argument, std::string(key) + ": expected an array of at most " +
                                             std::to_string(max_partitions)};
  for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
    json::object_reader p((*list)[i], std::string(key) + "[" + std::to_string(i) + "]");
    partition_ref ref;
    std::int64_t partition = -1;
    p.get("topic", ref.tp.topic, true);
    p.get("partition", partition, true);
    p.get("owner", ref.owner);
    if (with_offset) p.get("offset", ref.offset, true);
    if (p.ok() && (partition < 0 || partition > INT32_MAX)) p.fail("partition", "out of range");
    if (p.ok())
      if (auto v = validate_topic_name(ref.tp.topic); !v) p.fail("topic", v.message());
    if (auto st = p.finish(); !st) return st.err();
    ref.tp.partition = static_cast<std::int32_t>(partition);
    out.push_back(std::move(ref));
  }
  return out;
}

/// Writes `key` as a list of {"topic","partition","owner"}, the shape read_refs() reads.
template <typename Owners>
void write_refs(json::writer& w, const char* key, const Owners& owners) {
  w.Key(key);
  w.StartArray();
  for (const auto& [tp, owner] : owners) {
    w.StartObject();
    json::put(w, "topic", tp.topic);
    json::put(w, "partition", tp.partition);
    json::put(w, "owner", owner.value());
    w.EndObject();
  }
  w.EndArray();
}

/// Reads the fields every producer call carries (producer_id and producer_epoch only when `with_producer`).
inline void read_producer(json::object_reader& r, std::string& id, std::uint64_t& producer_id, std::uint32_t& epoch,
                          bool with_producer) {
  r.get("transactional_id", id, true);
  if (r.ok() && !valid_client_name(id)) r.fail("transactional_id", "must be 1 to 255 bytes of UTF-8, no control characters");
  if (!with_producer) return;
  std::uint64_t e = 0;
  r.get("producer_id", producer_id, true);
  r.get("producer_epoch", e, true);
  if (r.ok() && e > UINT32_MAX) r.fail("producer_epoch", "out of range");
  epoch = static_cast<std::uint32_t>(e);
}


/// POST /cluster/txn/init: `{"transactional_id"[,"keeps_epoch","timeout_ms"][,"producer_id","producer_epoch"]}`.
struct init_request {
  std::string transactional_id;
  init_options options;
};

inline std::string write(const init_request& q) {
  return json::object([&](json::writer& w) {
    json::put(w, "transactional_id", q.transactional_id);
    if (q.options.session.keeps_epoch) json::put(w, "keeps_epoch", true);
    if (q.options.session.timeout_ms > 0) json::put(w, "timeout_ms", q.options.session.timeout_ms);
    if (q.options.expected) {
      json::put(w, "producer_id", q.options.expected->producer_id);
      json::put(w, "producer_epoch", q.options.expected->epoch);
    }
  });
}

inline result<init_request> read_init_request(std::string_view body) {
  return json::read_object<init_request>(body, "body", [](json::object_reader& r, init_request& q) -> status {
    std::uint64_t producer_id = 0;
    std::uint32_t epoch = 0;
    read_producer(r, q.transactional_id, producer_id, epoch, false);
    r.get("keeps_epoch", q.options.session.keeps_epoch);
    r.get("timeout_ms", q.options.session.timeout_ms);
    if (r.ok() && q.options.session.timeout_ms < 0) r.fail("timeout_ms", "must not be negative");
    if (r.has("producer_id")) {
      read_producer(r, q.transactional_id, producer_id, epoch, true);
      q.options.expected = producer_identity{producer_id, epoch};
    }
    return r.first_error();
  });
}

/// POST /cluster/txn/add: the producer's fields, `"partitions"` (their owners as the sender sees them) and
/// `"replace_owners"` (the owners named are where records landed: they replace the ones held).
struct add_request {
  std::string transactional_id;
  std::uint64_t producer_id = 0;
  std::uint32_t epoch = 0;
  std::vector<std::pair<topic_partition, broker_id>> partitions;  ///< an empty owner: the sender's own
  bool replace_owners = false;
};

inline std::string write(const add_request& q) {
  return producer_body(q.transactional_id, q.producer_id, q.epoch, [&](json::writer& w) {
    if (q.replace_owners) json::put(w, "replace_owners", true);
    write_refs(w, "partitions", q.partitions);
  });
}

inline result<add_request> read_add_request(std::string_view body) {
  return json::read_object<add_request>(body, "body", [](json::object_reader& r, add_request& q) -> status {
    read_producer(r, q.transactional_id, q.producer_id, q.epoch, true);
    r.get("replace_owners", q.replace_owners);
    if (!r.ok()) return r.first_error();
    auto refs = read_refs(r, "partitions", false);
    if (!refs) return refs.err();
    for (auto& ref : *refs) q.partitions.emplace_back(ref.tp, broker_id(ref.owner));
    return {};
  });
}

/// The answer to an add: the owners the coordinator holds, and whether the session keeps its epoch.
struct add_answer {
  std::map<topic_partition, broker_id> partitions;
  bool keeps_epoch = false;
};

inline std::string write(const add_answer& a) {
  return json::object([&](json::writer& w) {
    write_refs(w, "partitions", a.partitions);
    if (a.keeps_epoch) json::put(w, "keeps_epoch", true);
  });
}

/// nullopt: not this document (a coordinator that predates the answer says nothing; one that says something
/// unreadable is not believed).
/// Whether the session keeps its epoch is read even when the list of owners is not believed.
inline std::optional<add_answer> read_add_answer(std::string_view body) {
  rapidjson::Document d;
  if (!json::parse_object(body, d)) return std::nullopt;
  json::object_reader r(d, "the coordinator's answer");
  add_answer a;
  r.get("keeps_epoch", a.keeps_epoch);
  if (!r.ok()) return std::nullopt;
  if (auto refs = read_refs(r, "partitions", false))
    for (const auto& ref : *refs)
      if (!ref.owner.empty()) a.partitions[ref.tp] = broker_id(ref.owner);
  return a;
}

/// The transactional id a call names, read before the rest of it: a call for an id coordinated elsewhere is
/// answered 421 (the sender tries the coordinator it names) whatever else it carries.
inline std::optional<std::string> peek_transactional_id(std::string_view body) {
  rapidjson::Document d;
  if (!json::parse_object(body, d) || !d.HasMember("transactional_id") || !d["transactional_id"].IsString())
    return std::nullopt;
  return std::string(d["transactional_id"].GetString(), d["transactional_id"].GetStringLength());
}

/// POST /cluster/txn/offsets: the producer's fields, `"group"` and `"offsets"` (each with its partition's owner as
/// the sender sees it).
inline std::string write(const offsets_call& c) {
  return producer_body(c.transactional_id, c.producer_id, c.epoch, [&](json::writer& w) {
    json::put(w, "group", c.group);
    w.Key("offsets");
    w.StartArray();
    for (const auto& [o, owner] : c.offsets) {
      w.StartObject();
      json::put(w, "topic", o.partition.topic);
      json::put(w, "partition", o.partition.partition);
      json::put(w, "offset", o.offset);
      json::put(w, "owner", owner.value());
      w.EndObject();
    }
    w.EndArray();
  });
}

/// An offset whose owner is empty: the sender's own.
inline result<offsets_call> read_offsets_call(std::string_view body) {
  return json::read_object<offsets_call>(body, "body", [](json::object_reader& r, offsets_call& c) -> status {
    read_producer(r, c.transactional_id, c.producer_id, c.epoch, true);
    r.get("group", c.group, true);
    if (r.ok() && !valid_client_name(c.group))
      r.fail("group", "must be 1 to 255 bytes of UTF-8, no control characters");
    if (!r.ok()) return r.first_error();
    auto refs = read_refs(r, "offsets", true);
    if (!refs) return refs.err();
    for (auto& ref : *refs) c.offsets.push_back({{c.group, ref.tp, ref.offset}, broker_id(ref.owner)});
    return {};
  });
}

/// POST /cluster/txn/end: the producer's fields, `"commit"` and `"wait"`.
inline std::string write(const end_call& c) {
  return producer_body(c.transactional_id, c.producer_id, c.epoch, [&](json::writer& w) {
    json::put(w, "commit", c.commit);
    json::put(w, "wait", c.wait);
  });
}

inline result<end_call> read_end_call(std::string_view body) {
  return json::read_object<end_call>(body, "body", [](json::object_reader& r, end_call& c) -> status {
    read_producer(r, c.transactional_id, c.producer_id, c.epoch, true);
    r.get("commit", c.commit, true);
    r.get("wait", c.wait);
    return r.first_error();
  });
}

/// What the coordinator asks of a partition's owner: enroll a producer (`{"topic","partition","producer_id",
/// "producer_epoch"}`), write its transaction's marker (the same and `"commit"`, `"coordinator_epoch"`, `"number"`),
/// or commit a group's offset the transaction carried (`{"group","topic","partition","offset"}`).
enum class owner_route : int { enroll, markers, commit_offsets };

struct owner_call {
  using kind = owner_route;
  kind route = kind::enroll;
  topic_partition partition;
  std::uint64_t producer_id = 0;       ///< enroll, markers
  std::uint32_t epoch = 0;             ///< enroll, markers
  bool commit = false;                 ///< markers
  std::uint32_t coordinator_epoch = 0;  ///< markers (absent: 0, from a coordinator that predates it)
  std::uint32_t number = 0;            ///< markers (absent: 0, a marker above the transaction's epoch)
  std::string group;                   ///< commit_offsets
  std::uint64_t offset = 0;            ///< commit_offsets
};

/// The route's last path segment.
inline const char* route_of(owner_call::kind k) {
  switch (k) {
    case owner_call::kind::enroll: return "enroll";
    case owner_call::kind::markers: return "markers";
    case owner_call::kind::commit_offsets: return "commit_offsets";
  }
  return "enroll";
}

inline std::optional<owner_call::kind> owner_route_named(std::string_view route) {
  if (route == "enroll") return owner_call::kind::enroll;
  if (route == "markers") return owner_call::kind::markers;
  if (route == "commit_offsets") return owner_call::kind::commit_offsets;
  return std::nullopt;
}

inline std::string write(const owner_call& c) {
  return json::object([&](json::writer& w) {
    if (c.route == owner_call::kind::commit_offsets) json::put(w, "group", c.group);
    json::put(w, "topic", c.partition.topic);
    json::put(w, "partition", c.partition.partition);
    if (c.route == owner_call::kind::commit_offsets) {
      json::put(w, "offset", c.offset);
      return;
    }
    json::put(w, "producer_id", c.producer_id);
    json::put(w, "producer_epoch", c.epoch);
    if (c.route == owner_call::kind::markers) {
      json::put(w, "coordinator_epoch", c.coordinator_epoch);
      json::put(w, "commit", c.commit);
      if (c.number != 0) json::put(w, "number", c.number);
    }
  });
}

inline result<owner_call> read_owner_call(owner_call::kind route, std::string_view body) {
  return json::read_object<owner_call>(body, "body", [route](json::object_reader& r, owner_call& c) -> status {
    c.route = route;
    std::int64_t partition = -1;
    std::uint64_t epoch = 0, coordinator_epoch = 0, number = 0;
    r.get("topic", c.partition.topic, true);
    r.get("partition", partition, true);
    if (route == owner_call::kind::commit_offsets) {
      r.get("group", c.group, true);
      r.get("offset", c.offset, true);
      if (r.ok() && !valid_client_name(c.group))
        r.fail("group", "must be 1 to 255 bytes of UTF-8, no control characters");
    } else {
      r.get("producer_id", c.producer_id, true);
      r.get("producer_epoch", epoch, true);
      if (route == owner_call::kind::markers) {
        r.get("commit", c.commit, true);
        r.get("coordinator_epoch", coordinator_epoch);
        if (r.ok() && coordinator_epoch > UINT32_MAX) r.fail("coordinator_epoch", "out of range");
        r.get("number", number);
        if (r.ok() && number > UINT32_MAX) r.fail("number", "out of range");
      }
      if (r.ok() && epoch > UINT32_MAX) r.fail("producer_epoch", "out of range");
    }
    if (r.ok() && (partition < 0 || partition > INT32_MAX)) r.fail("partition", "out of range");
    if (r.ok())
      if (auto v = validate_topic_name(c.partition.topic); !v) r.fail("topic", v.message());
    c.partition.partition = static_cast<std::int32_t>(partition);
    c.epoch = static_cast<std::uint32_t>(epoch);
    c.coordinator_epoch = static_cast<std::uint32_t>(coordinator_epoch);
    c.number = static_cast<std::uint32_t>(number);
    return r.first_error();
  });
}

/// A broker's 421 to an owner call: `{"error":"not_owner","owner"}`, the owner it knows.
inline std::string write_not_owner(const broker_id& owner) {
  return json::object([&](json::writer& w) {
    json::put(w, "error", "not_owner");
    json::put(w, "owner", owner.value());
  });
}

/// The owner a 421 names; nullopt when it names none.
inline std::optional<broker_id> read_not_owner(std::string_view body) {
  rapidjson::Document d;
  if (!json::parse_object(body, d) || !d.HasMember("owner") || !d["owner"].IsString()) return std::nullopt;
  broker_id owner(d["owner"].GetString());
  if (owner.value().empty()) return std::nullopt;
  return owner;
}

}  // namespace moonmq::txn::wire
