// The Kafka listener's topic admin: CreateTopics, CreatePartitions, DeleteTopics and DescribeConfigs. Each request is
// checked as a Kafka broker checks it (a name twice in one request, a count that does not grow, topic configs, which
// this cluster does not have), then handed to the topic admin front end the HTTP API calls, and its refusals are
// turned into Kafka's error codes. Explicit replica assignments name each partition's owner: the first broker of each
// list (a partition has one replica). What DescribeConfigs reports, and why, is in docs/kafka.md.
// Thread safety: every method may be called concurrently (the front end serializes decisions).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "moonmq/cluster/config.hpp"
#include "moonmq/frontend/topic_admin.hpp"
#include "moonmq/kafka/messages.hpp"

namespace moonmq::daemon {

struct kafka_admin_parts {
  const cluster::server_config* cfg = nullptr;
  frontend::topic_admin* topics = nullptr;
  std::size_t brokers = 1;     ///< how many brokers the cluster has (the largest replication factor accepted)
  std::int32_t self_node = 0;  ///< this broker's Kafka node id
  bool sasl = false;           ///< client tokens: SASL is required
  std::map<std::int32_t, std::string> broker_of;  ///< Kafka node id -> broker id
};

class kafka_admin {
 public:
  explicit kafka_admin(kafka_admin_parts parts) : p_(std::move(parts)) {}

  /// `admin`: the connection's role may change topics; without it each topic is TOPIC_AUTHORIZATION_FAILED.
  kafka::create_topics_response create_topics(const kafka::create_topics_request& req, bool admin);
  kafka::create_partitions_response create_partitions(const kafka::create_partitions_request& req, bool admin);
  kafka::delete_topics_response delete_topics(const kafka::delete_topics_request& req, bool admin);
  /// Topics this cluster lists, and this broker (by its node id; another broker answers for itself).
  kafka::describe_configs_response describe_configs(const kafka::describe_configs_request& req) const;

 private:
  /// The live topic of that name, if the catalog (or this broker's store) has one.
  std::optional<cluster::topic_record> find(const std::string& name) const;
  /// The owners explicit replica assignments name (the first broker of each list, in order), or why they are
  /// refused (INVALID_REPLICA_ASSIGNMENT): an empty list, an unknown node id, a node twice in one list, lists of
  /// different lengths.
  std::variant<std::vector<std::string>, std::string> owners_named(
      const std::vector<std::vector<std::int32_t>>& lists) const;

  kafka_admin_parts p_;
};

}  // namespace moonmq::daemon
