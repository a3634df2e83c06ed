// The topic admin messages: CreateTopics, CreatePartitions, DeleteTopics, DescribeConfigs.
#include <algorithm>

#include "moonmq/kafka/messages.hpp"

namespace moonmq::kafka {

// CreateTopics request: topics [name partitions replication [partition [broker]] [config value]], timeout,
// validate_only (v1+).
bool decode(reader& r, std::int16_t version, create_topics_request& c) {
  const std::int32_t n = r.array_count(false, 12);
  for (std::int32_t i = 0; i < n && r.ok(); ++i) {
    create_topics_request::topic t;
    t.name = r.string_or_empty(false);
    t.partitions = r.i32();
    t.replication_factor = r.i16();
    const std::int32_t a = r.array_count(false, 8);
    for (std::int32_t k = 0; k < a && r.ok(); ++k) {
      const std::int32_t partition = r.i32();
      std::vector<std::int32_t> brokers(static_cast<std::size_t>(std::max(r.array_count(false, 4), 0)));
      for (auto& b : brokers) b = r.i32();
      t.assignments.emplace_back(partition, std::move(brokers));
    }
    const std::int32_t cfg = r.array_count(false, 4);
    for (std::int32_t k = 0; k < cfg && r.ok(); ++k) {
      auto name = r.string_or_empty(false);
      t.configs.emplace_back(std::move(name), r.string(false, true));
    }
    c.topics.push_back(std::move(t));
  }
  c.timeout_ms = r.i32();
  if (version >= 1) c.validate_only = r.boolean();
  return r.ok();
}

// CreateTopics response: throttle (v2+), topics [name error message(v1+)].
void encode(writer& w, std::int16_t version, const create_topics_response& c) {
  if (version >= 2) w.i32(0);
  w.array_count(c.topics.size(), false);
  for (const auto& t : c.topics) {
    w.string(t.name, false);
    w.i16(t.error);
    if (version >= 1) w.nullable_string(t.message, false);
  }
}

// CreatePartitions request: topics [name count assignments (nullable [[broker]])], timeout, validate_only.
bool decode(reader& r, std::int16_t, create_partitions_request& c) {
  const std::int32_t n = r.array_count(false, 10);
  for (std::int32_t i = 0; i < n && r.ok(); ++i) {
    create_partitions_request::topic t;
    t.name = r.string_or_empty(false);
    t.count = r.i32();
    const std::int32_t a = r.array_count(false, 4, true);
    if (a >= 0) t.assignments.emplace();
    for (std::int32_t k = 0; k < a && r.ok(); ++k) {
      std::vector<std::int32_t> brokers(static_cast<std::size_t>(std::max(r.array_count(false, 4), 0)));
      for (auto& b : brokers) b = r.i32();
      t.assignments->push_back(std::move(brokers));
    }
    c.topics.push_back(std::move(t));
  }
  c.timeout_ms = r.i32();
  c.validate_only = r.boolean();
  return r.ok();
}

// CreatePartitions response: throttle, results [name error message].
void encode(writer& w, std::int16_t, const create_partitions_response& c) {
  w.i32(0);
  w.array_count(c.results.size(), false);
  for (const auto& t : c.results) {
    w.string(t.name, false);
    w.i16(t.error);
    w.nullable_string(t.message, false);
  }
}

// DeleteTopics request: names [string], timeout; v4 compact with tagged fields.
bool decode(reader& r, std::int16_t version, delete_topics_request& d) {
  const bool c = version >= 4;
  const std::int32_t n = r.array_count(c, 1);
  for (std::int32_t i = 0; i < n && r.ok(); ++i) d.names.push_back(r.string_or_empty(c));
  d.timeout_ms = r.i32();
  if (c) r.tagged_fields();
  return r.ok();
}

// DeleteTopics response: throttle (v1+), responses [name error]; v4 compact with tagged fields.
void encode(writer& w, std::int16_t version, const delete_topics_response& d) {
  const bool c = version >= 4;
  if (version >= 1) w.i32(0);
  w.array_count(d.responses.size(), c);
  for (const auto& t : d.responses) {
    w.string(t.name, c);
    w.i16(t.error);
    if (c) w.tagged_fields();
  }
  if (c) w.tagged_fields();
}

// DescribeConfigs request: resources [type name keys (nullable [string])], include_synonyms (v1+).
bool decode(reader& r, std::int16_t version, describe_configs_request& d) {
  const std::int32_t n = r.array_count(false, 7);
  for (std::int32_t i = 0; i < n && r.ok(); ++i) {
    describe_configs_request::resource res;
    res.type = r.i8();
    res.name = r.string_or_empty(false);
    const std::int32_t k = r.array_count(false, 2, true);
    if (k >= 0) res.keys.emplace();
    for (std::int32_t j = 0; j < k && r.ok(); ++j) res.keys->push_back(r.string_or_empty(false));
    d.resources.push_back(std::move(res));
  }
  if (version >= 1) d.include_synonyms = r.boolean();
  return r.ok();
}

// DescribeConfigs response: throttle, results [error message type name configs [name value read_only
// (is_default v0 | source v1+) sensitive synonyms (v1+)]].
void encode(writer& w, std::int16_t version, const describe_configs_response& d) {
  w.i32(0);
  w.array_count(d.results.size(), false);
  for (const auto& res : d.results) {
    w.i16(res.error);
    w.nullable_string(res.message, false);
    w.i8(res.type);
    w.string(res.name, false);
    w.array_count(res.configs.size(), false);
    for (const auto& c : res.configs) {
      w.string(c.name, false);
      w.nullable_string(c.value, false);
      w.boolean(c.read_only);
      if (version == 0)
        w.boolean(c.source == describe_configs_response::default_config);
      else
        w.i8(c.source);
      w.boolean(false);  // sensitive: none of these is
      if (version >= 1) w.array_count(0, false);  // synonyms: each config has one source here
    }
  }
}

}  // namespace moonmq::kafka
