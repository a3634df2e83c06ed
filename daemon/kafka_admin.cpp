#include "kafka_admin.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "moonmq/core/topic_name.hpp"

namespace moonmq::daemon {

namespace ec = kafka::error_code;

namespace {

/// The names that appear more than once in one request: Kafka refuses each of them with INVALID_REQUEST.
template <typename Items, typename Name>
std::set<std::string> repeated(const Items& items, Name name_of) {
  std::map<std::string, int> seen;
  for (const auto& i : items) ++seen[name_of(i)];
  std::set<std::string> out;
  for (const auto& [name, n] : seen)
    if (n > 1) out.insert(name);
  return out;
}

/// A front end's refusal as Kafka's code (the admin APIs' own set).
std::int16_t admin_code(errc code) {
  switch (code) {
    case errc::already_exists:
      return ec::topic_already_exists;
    case errc::not_found:
      return ec::unknown_topic_or_partition;
    case errc::resource_exhausted:
      return ec::policy_violation;
    case errc::invalid_argument:
      return ec::invalid_request;
    default:
      return ec::request_timed_out;  // a broker that had to answer did not: the client may retry
  }
}

}  // namespace

std::optional<cluster::topic_record> kafka_admin::find(const std::string& name) const {
  for (const auto& t : p_.topics->list())
    if (t.record.name == name && !t.record.deleted) return t.record;
  return std::nullopt;
}

std::variant<std::vector<std::string>, std::string> kafka_admin::owners_named(
    const std::vector<std::vector<std::int32_t>>& lists) const {
  std::vector<std::string> owners;
  for (const auto& brokers : lists) {
    if (brokers.empty()) return std::string("a partition's replica list is empty");
    if (brokers.size() != lists.front().size()) return std::string("every partition names as many replicas");
    for (std::size_t i = 0; i < brokers.size(); ++i) {
      if (!p_.broker_of.count(brokers[i])) return "broker " + std::to_string(brokers[i]) + " is not in the cluster";
      if (std::find(brokers.begin(), brokers.begin() + static_cast<std::ptrdiff_t>(i), brokers[i]) !=
          brokers.begin() + static_cast<std::ptrdiff_t>(i))
        return "broker " + std::to_string(brokers[i]) + " is named twice for one partition";
    }
    owners.push_back(p_.broker_of.at(brokers.front()));
  }
  return owners;
}

kafka::create_topics_response kafka_admin::create_topics(const kafka::create_topics_request& req, bool admin) {
  kafka::create_topics_response out;
  const auto twice = repeated(req.topics, [](const auto& t) { return t.name; });
  for (const auto& t : req.topics) {
    auto& res = out.topics.emplace_back();
    res.name = t.name;
    auto refuse = [&res](std::int16_t code, std::string message) {
      res.error = code;
      res.message = std::move(message);
    };
    const bool assigned = !t.assignments.empty();
    // -1: the broker's default, one partition; any other negative count is refused below.
    const std::int32_t partitions = assigned ? static_cast<std::int32_t>(t.assignments.size())
                                    : t.partitions == -1 ? 1
                                                         : t.partitions;
    // Explicit assignments: partitions 0..n-1, each once, in any order; each list's first broker owns it.
    std::vector<std::vector<std::int32_t>> lists(t.assignments.size());
    std::vector<bool> seen(t.assignments.size(), false);
    bool indexed = true;
    for (const auto& [index, brokers] : t.assignments) {
      const auto at = static_cast<std::size_t>(index);
      if (index < 0 || at >= lists.size() || seen[at]) {
        indexed = false;
      } else {
        seen[at] = true;
        lists[at] = brokers;
      }
    }
    const auto named = assigned && indexed ? owners_named(lists) : decltype(owners_named(lists)){std::string()};
    if (twice.count(t.name)) {
      refuse(ec::invalid_request, "topic '" + t.name + "' appears more than once in the request");
    } else if (!admin) {
      refuse(ec::topic_authorization_failed, "creating a topic needs the admin role");
    } else if (auto v = validate_topic_name(t.name); !v) {
      refuse(ec::invalid_topic, v.message());
    } else if (!t.configs.empty()) {
      refuse(ec::invalid_config, "topic configs are not supported (" + t.configs.front().first +
                                     "); DescribeConfigs lists what every topic has");
    } else if (assigned && (t.partitions != -1 || t.replication_factor != -1)) {
      refuse(ec::invalid_request, "with explicit replica assignments, the partition count and replication factor are -1");
    } else if (assigned && !indexed) {
      refuse(ec::invalid_replica_assignment, "assignments name partitions 0 to n-1, each once");
    } else if (assigned && std::holds_alternative<std::string>(named)) {
      refuse(ec::invalid_replica_assignment, std::get<std::string>(named));
    } else if (partitions <= 0 || partitions > static_cast<std::int32_t>(p_.cfg->limits.max_partitions_per_topic)) {
      refuse(ec::invalid_partitions, "a topic has from 1 to " +
                                         std::to_string(p_.cfg->limits.max_partitions_per_topic) + " partitions");
    } else if (t.replication_factor == 0 || t.replication_factor < -1 ||
               t.replication_factor > static_cast<std::int16_t>(p_.brokers)) {
      refuse(ec::invalid_replication_factor, "replication factor " + std::to_string(t.replication_factor) +
                                                 " is not from 1 to the " + std::to_string(p_.brokers) + " brokers");
    } else if (find(t.name)) {
      refuse(ec::topic_already_exists, "topic '" + t.name + "' already exists");
    } else if (!req.validate_only) {
      frontend::topic_admin_request c;
      c.op = frontend::topic_admin_op::create;
      c.name = t.name;
      c.partitions = static_cast<std::uint32_t>(partitions);
      if (assigned) {
        c.brokers = std::get<std::vector<std::string>>(named);
        c.exact = true;
      }
      if (auto done = p_.topics->submit(std::move(c)); !done) refuse(admin_code(done.code()), done.message());
    }
  }
  return out;
}

kafka::create_partitions_response kafka_admin::create_partitions(const kafka::create_partitions_request& req,
                                                                 bool admin) {
  kafka::create_partitions_response out;
  const auto twice = repeated(req.topics, [](const auto& t) { return t.name; });
  for (const auto& t : req.topics) {
    auto& res = out.results.emplace_back();
    res.name = t.name;
    auto refuse = [&res](std::int16_t code, std::string message) {
      res.error = code;
      res.message = std::move(message);
    };
    const auto record = find(t.name);
    const auto named = t.assignments ? owners_named(*t.assignments) : decltype(owners_named({})){std::vector<std::string>()};
    if (twice.count(t.name)) {
      refuse(ec::invalid_request, "topic '" + t.name + "' appears more than once in the request");
    } else if (!admin) {
      refuse(ec::topic_authorization_failed, "adding partitions needs the admin role");
    } else if (!record) {
      refuse(ec::unknown_topic_or_partition, "no topic '" + t.name + "'");
    } else if (std::holds_alternative<std::string>(named)) {
      refuse(ec::invalid_replica_assignment, std::get<std::string>(named));
    } else if (t.assignments && static_cast<std::int32_t>(t.assignments->size()) != t.count - record->partitions()) {
      refuse(ec::invalid_replica_assignment, "assignments name " + std::to_string(t.assignments->size()) +
                                                 " new partitions; the count adds " +
                                                 std::to_string(std::max(0, t.count - record->partitions())));
    } else if (t.count <= record->partitions()) {
      refuse(ec::invalid_partitions, "topic '" + t.name + "' has " + std::to_string(record->partitions()) +
                                         " partitions; the count can only grow");
    } else if (t.count > static_cast<std::int32_t>(p_.cfg->limits.max_partitions_per_topic)) {
      refuse(ec::invalid_partitions,
             "a topic has at most " + std::to_string(p_.cfg->limits.max_partitions_per_topic) + " partitions");
    } else if (!req.validate_only) {
      frontend::topic_admin_request c;
      c.op = frontend::topic_admin_op::grow;
      c.name = t.name;
      c.partitions = static_cast<std::uint32_t>(t.count);
      if (t.assignments) {
        c.brokers = std::get<std::vector<std::string>>(named);
        c.exact = true;
      }
      if (auto done = p_.topics->submit(std::move(c)); !done) refuse(admin_code(done.code()), done.message());
    }
  }
  return out;
}

kafka::delete_topics_response kafka_admin::delete_topics(const kafka::delete_topics_request& req, bool admin) {
  kafka::delete_topics_response out;
  const auto twice = repeated(req.names, [](const std::string& n) { return n; });
  for (const auto& name : req.names) {
    auto& res = out.responses.emplace_back();
    res.name = name;
    if (twice.count(name)) {
      res.error = ec::invalid_request;
    } else if (!admin) {
      res.error = ec::topic_authorization_failed;
    } else if (!find(name)) {
      res.error = ec::unknown_topic_or_partition;
    } else if (auto done = p_.topics->submit({frontend::topic_admin_op::remove, name, 0, false, {}}); !done) {
      res.error = admin_code(done.code());
    }
  }
  return out;
}

kafka::describe_configs_response kafka_admin::describe_configs(const kafka::describe_configs_request& req) const {
  using response = kafka::describe_configs_response;
  const std::string max_bytes = std::to_string(p_.cfg->kafka->max_request_bytes);
  response out;
  for (const auto& r : req.resources) {
    auto& res = out.results.emplace_back();
    res.type = r.type;
    res.name = r.name;
    std::vector<response::config> all;
    if (r.type == kafka::describe_configs_request::topic_resource) {
      if (!find(r.name)) {
        res.error = ec::unknown_topic_or_partition;
        res.message = "no topic '" + r.name + "'";
        continue;
      }
      // What every topic of this cluster is; none of it can be set per topic.
      all = {{"cleanup.policy", "delete", true, response::default_config},
             {"retention.ms", "-1", true, response::default_config},
             {"retention.bytes", "-1", true, response::default_config},
             {"message.timestamp.type", "CreateTime", true, response::default_config},
             {"min.insync.replicas", "1", true, response::default_config},
             {"unclean.leader.election.enable", "false", true, response::default_config},
             {"max.message.bytes", max_bytes, true, response::static_broker_config},
             {"compression.type", "uncompressed", true, response::default_config}};
    } else if (r.type == kafka::describe_configs_request::broker_resource) {
      if (!r.name.empty() && r.name != std::to_string(p_.self_node)) {
        res.error = ec::invalid_request;
        res.message = "broker " + r.name + " describes its own configuration; this is broker " +
                      std::to_string(p_.self_node);
        continue;
      }
      const auto& k = *p_.cfg->kafka;
      const std::string protocol = std::string(p_.sasl ? "SASL_" : "") + (k.tls ? "SSL" : "PLAINTEXT");
      all = {{"broker.id", std::to_string(p_.self_node), true, response::static_broker_config},
             {"listeners", protocol + "://" + k.host + ":" + std::to_string(k.port), true,
              response::static_broker_config},
             {"advertised.listeners", protocol + "://" + k.advertised_host + ":" + std::to_string(k.advertised_port),
              true, response::static_broker_config},
             {"message.max.bytes", max_bytes, true, response::static_broker_config},
             {"sasl.enabled.mechanisms", p_.sasl ? "PLAIN,SCRAM-SHA-256" : "", true, response::static_broker_config},
             {"auto.create.topics.enable", "false", true, response::default_config},
             {"num.partitions", "1", true, response::default_config},
             {"default.replication.factor", "1", true, response::default_config},
             {"log.retention.ms", "-1", true, response::default_config}};
    } else {
      res.error = ec::invalid_request;
      res.message = "only topic (2) and broker (4) resources are described";
      continue;
    }
    for (auto& c : all)
      if (!r.keys || std::find(r.keys->begin(), r.keys->end(), c.name) != r.keys->end())
        res.configs.push_back(std::move(c));
  }
  return out;
}

}  // namespace moonmq::daemon
