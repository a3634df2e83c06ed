// The broker's configuration: `appsettings.json` with its `Server` section (client listener, data directory,
// storage), `Server.Cluster` (identity, cluster listener, peers, token, TLS, Raft) and `Server.Autobalance`.
//
// Loading (settings_loader.hpp, in lib/) is strict: unknown keys, wrong types and values out of range are errors
// naming the key's full path; environment variables `MOONMQ_Server__Cluster__BrokerId=b2` override keys (numeric
// path parts index arrays: `MOONMQ_Server__Cluster__Peers__0__Address`). These structs are plain values with the
// documented defaults, so an embedding broker can also fill them by hand.
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "moonmq/autobalancer/config.hpp"

namespace moonmq::cluster {

struct peer_config {
  std::string id;
  std::string host;  ///< from Address "host:port"
  std::uint16_t port = 0;
  std::string token;  ///< per-peer override of Cluster.Token ("" = use Cluster.Token)
  std::string kafka_host;  ///< from Kafka "host:port": the peer's advertised Kafka address ("" = none)
  std::uint16_t kafka_port = 0;
};

struct tls_config {
  std::string cert_file;
  std::string key_file;
  std::string ca_file;
  bool verify_peer = true;  ///< Verify: "required" (the default) = mutual TLS; "none" only encrypts
};

struct raft_config {
  bool enabled = false;
  std::uint32_t heartbeat_ms = 500;
  std::uint32_t election_timeout_min_ms = 1500;
  std::uint32_t election_timeout_max_ms = 3000;
  std::uint32_t max_log_entries = 10000;
};

struct cluster_config {
  std::string broker_id;
  std::string host = "127.0.0.1";
  std::optional<std::uint16_t> port;  ///< none = client-only node (no cluster endpoint)
  std::string token;
  double peer_timeout_seconds = 5;
  std::uint32_t batch_bytes = 256 * 1024;
  std::uint32_t max_body_bytes = 64u << 20;
  std::uint64_t move_throttle_bytes_per_sec = 0;  ///< every move's copy shares it on each broker (0 = unlimited)
  std::uint32_t reclaim_after_seconds = 3600;  ///< an unserved local copy left alone this long is deleted (0 = keep)
  bool allow_insecure = false;
  std::vector<peer_config> peers;
  std::optional<tls_config> tls;
  raft_config raft;
};

struct storage_config {
  std::string fsync = "interval";  ///< always | interval | never
  std::uint32_t fsync_interval_ms = 1000;
};

/// One client credential of `Server.Auth.Tokens`.
struct client_token {
  std::string name;   ///< who it belongs to, for logs
  std::string token;  ///< sent as `Authorization: Bearer TOKEN`
  std::string role;   ///< "client" or "admin"
};

/// `Server.Auth`: bearer tokens with roles for the client API. Without the section the API is open, which moonmqd
/// allows only on a loopback Server.Host unless AllowAnonymous is true.
struct auth_config {
  std::vector<client_token> tokens;
  bool allow_anonymous = false;
};

/// `Server.Limits`: what one broker takes on, so that no client can exhaust it.
struct limits_config {
  std::uint32_t max_partitions_per_topic = 1000;
  std::uint32_t max_partitions_per_broker = 20000;
  std::uint32_t max_open_partition_files = 1000;  ///< partition logs kept open at once (the rest opened on use)
  std::uint32_t max_producers_per_partition = 10000;  ///< idempotent producers one partition tracks
  std::uint32_t max_client_connections = 1024;  ///< client connections served at once (further ones get 503)
  /// Client connections open at once that have not yet sent a request with valid credentials (a new one past the
  /// cap evicts the oldest of them).
  std::uint32_t max_unauthenticated_connections = 64;
  std::int64_t auth_timeout_ms = 10'000;  ///< connect to first authenticated request, or the connection is closed
};

/// `Server.Groups`: consumer group timing.
struct groups_config {
  std::int64_t session_timeout_ms = 10'000;
  std::int64_t heartbeat_interval_ms = 1'000;
};

/// `Server.Transactions`.
struct transactions_config {
  std::int64_t timeout_ms = 60'000;  ///< an open transaction older than this is aborted by its coordinator
};

/// `Server.Logging`: what moonmqd writes to stderr.
struct logging_config {
  std::string level = "info";   ///< debug | info | warn | error: the least severe line written
  std::string format = "text";  ///< text (one line per event) | json (one JSON object per line)
};

/// `Server.Kafka`: the Kafka wire-protocol listener (docs/kafka.md). No Port: no listener.
struct kafka_config {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::string advertised_host;  ///< what Metadata names ("" = Host)
  std::uint16_t advertised_port = 0;  ///< 0 = Port
  std::uint32_t max_request_bytes = 100u << 20;
  /// `Tls`: the cluster's shape. Verify "required" asks every client for a certificate the CaFile signed; a
  /// certificate grants no role (SASL still does, when Server.Auth has tokens).
  std::optional<tls_config> tls;
};

struct server_config {
  std::string host = "127.0.0.1";
  std::uint16_t port = 9092;
  std::string data_dir = "./data";
  storage_config storage;
  std::optional<auth_config> auth;
  limits_config limits;
  groups_config groups;
  transactions_config transactions;
  logging_config logging;
  std::optional<cluster_config> cluster;
  std::optional<kafka_config> kafka;
  autobalancer::autobalance_config autobalance;
};

}  // namespace moonmq::cluster
