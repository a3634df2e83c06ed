#include "moonmq/cluster/settings_loader.hpp"

#include <arpa/inet.h>

#include <cstdlib>
#include <set>

#include "autobalancer/config_reader.hpp"
#include "json/object_reader.hpp"
#include "moonmq/storage/file_partition_store.hpp"
#include "storage/posix_file.hpp"

extern char** environ;

namespace moonmq::cluster {

namespace {

constexpr std::string_view env_prefix = "MOONMQ_";
/// Only these variables are configuration (docs/configuration.md): other MOONMQ_* names belong to the tools (MOONMQ_FAULTS,
/// moonmqctl's MOONMQ_BROKER and MOONMQ_TOKEN) and may sit in the same shell as moonmqd.
constexpr std::string_view setting_prefix = "MOONMQ_Server__";

/// Sets the value at `path` (split on "__") in `doc`, creating objects on the way. A key that holds a string keeps
/// a string; otherwise true/false become booleans, numbers numbers, and anything else a string (so a wrong type is
/// still reported by the strict reader, naming the key).
status apply_override(rapidjson::Document& doc, const std::string& name, const std::string& value) {
  std::vector<std::string> parts;
  std::string rest = name.substr(env_prefix.size());
  for (std::size_t pos; (pos = rest.find("__")) != std::string::npos; rest.erase(0, pos + 2))
    parts.push_back(rest.substr(0, pos));
  parts.push_back(rest);
  auto& alloc = doc.GetAllocator();
  if (!doc.IsObject()) doc.SetObject();
  rapidjson::Value* at = &doc;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string& key = parts[i];
    if (key.empty()) return {errc::invalid_argument, name + ": empty path segment"};
    const bool last = i + 1 == parts.size();
    rapidjson::Value* next = nullptr;
    if (at->IsArray()) {
      char* end = nullptr;
      unsigned long idx = std::strtoul(key.c_str(), &end, 10);
      if (*end != '\0') return {errc::invalid_argument, name + ": '" + key + "' is not an array index"};
      // An override sets an entry the file has, or adds the next one: a gap would be entries nobody wrote.
      if (idx > at->Size())
        return {errc::invalid_argument,
                name + ": index " + key + " is past the end (the list has " + std::to_string(at->Size()) +
                    " entries; an override may set one of them or add entry " + std::to_string(at->Size()) + ")"};
      while (at->Size() <= idx) at->PushBack(rapidjson::Value(rapidjson::kObjectType), alloc);
      next = &(*at)[static_cast<rapidjson::SizeType>(idx)];
    } else {
      if (!at->IsObject()) return {errc::invalid_argument, name + ": cannot descend into a non-object"};
      auto it = at->FindMember(key.c_str());
      if (it == at->MemberEnd()) {
        at->AddMember(rapidjson::Value(key.c_str(), alloc), rapidjson::Value(rapidjson::kObjectType), alloc);
        it = at->FindMember(key.c_str());
      }
      next = &it->value;
    }
    if (last) {
      rapidjson::Value v;
      char* end = nullptr;
      double d = value.empty() ? 0 : std::strtod(value.c_str(), &end);
      const bool numeric = !value.empty() && *end == '\0';
      if (next->IsString()) {
        v.SetString(value.c_str(), alloc);  // a string key stays a string ("BrokerId": "7")
      } else if (value == "true" || value == "false") {
        v.SetBool(value == "true");
      } else if (numeric && value.find_first_of(".eE") == std::string::npos) {
        v.SetInt64(static_cast<std::int64_t>(d));
      } else if (numeric) {
        v.SetDouble(d);
      } else {
        v.SetString(value.c_str(), alloc);
      }
      *next = v;
    }
    at = next;
  }
  return {};
}

/// The key path the reader names for an override: MOONMQ_Server__Cluster__Peers__0__Address ->
/// Server.Cluster.Peers[0].Address.
std::string key_path_of(const std::string& name) {
  std::string rest = name.substr(env_prefix.size()), out;
  auto add = [&](const std::string& part) {
    const bool index = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    out += index ? "[" + part + "]" : (out.empty() ? "" : ".") + part;
  };
  for (std::size_t pos; (pos = rest.find("__")) != std::string::npos; rest.erase(0, pos + 2)) add(rest.substr(0, pos));
  add(rest);
  return out;
}

bool is_loopback(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  if (inet_pton(AF_INET, host.c_str(), &a) == 1) return (ntohl(a.s_addr) >> 24) == 127;
  return false;
}

/// "host:port" -> parts; the error names `path`.
status split_address(const std::string& address, const std::string& path, std::string& host, std::uint16_t& port) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size())
    return {errc::invalid_argument, path + ": expected \"host:port\", got \"" + address + "\""};
  host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  char* end = nullptr;
  unsigned long p = std::strtoul(address.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || p < 1 || p > 65535)
    return {errc::invalid_argument, path + ": port must be from 1 to 65535 in \"" + address + "\""};
  port = static_cast<std::uint16_t>(p);
  return {};
}

bool read_port(json::object_reader& r, std::string_view key, std::uint16_t& out) {
  std::uint32_t p = out;
  if (!r.get(key, p)) return false;
  if (p < 1 || p > 65535) return r.fail(key, "must be from 1 to 65535");
  out = static_cast<std::uint16_t>(p);
  return true;
}

/// A `Tls` section (the cluster's and the Kafka listener's share the shape).
result<tls_config> read_tls(const rapidjson::Value& v, const std::string& path) {
  json::object_reader tr(v, path);
  tls_config t;
  std::string verify = "required";  // mutual TLS unless "none" is asked for explicitly
  tr.get("CertFile", t.cert_file, true);
  tr.get("KeyFile", t.key_file, true);
  tr.get("CaFile", t.ca_file);
  tr.get("Verify", verify);
  if (tr.ok() && verify != "none" && verify != "required")
    tr.fail("Verify", "expected \"none\" or \"required\", got \"" + verify + "\"");
  t.verify_peer = verify == "required";
  if (tr.ok() && t.verify_peer && t.ca_file.empty())
    tr.fail("CaFile", "is required when Verify is \"required\" (the default; \"none\" only encrypts)");
  if (auto s = tr.finish(); !s) return s.err();
  return t;
}

status read_cluster(const rapidjson::Value& v, const std::string& path, cluster_config& c) {
  json::object_reader r(v, path);
  r.get("BrokerId", c.broker_id, true);
  r.get("Host", c.host);
  if (r.has("Port")) {
    std::uint16_t p = 0;
    if (read_port(r, "Port", p)) c.port = p;
  }
  r.get("Token", c.token);
  r.get("PeerTimeout", c.peer_timeout_seconds);
  r.get("BatchBytes", c.batch_bytes);
  r.get("MaxBodyBytes", c.max_body_bytes);
  r.get("MoveThrottleBytesPerSec", c.move_throttle_bytes_per_sec);
  r.get("ReclaimAfterSeconds", c.reclaim_after_seconds);
  r.get("AllowInsecure", c.allow_insecure);
  if (r.ok() && c.broker_id.empty()) r.fail("BrokerId", "must not be empty");
  if (r.ok() && !(c.peer_timeout_seconds > 0)) r.fail("PeerTimeout", "must be a positive number of seconds");
  if (r.ok() && (c.batch_bytes < 1024 || c.batch_bytes > (64u << 20)))
    r.fail("BatchBytes", "must be from 1024 to 67108864");
  if (r.ok() && c.max_body_bytes < c.batch_bytes + 1024)
    r.fail("MaxBodyBytes", "must exceed BatchBytes by at least 1024");

  if (const auto* peers = r.member("Peers"); peers && r.ok()) {
    if (!peers->IsArray()) {
      r.fail("Peers", std::string("expected an array, got ") + json::type_name(*peers));
    } else {
      std::set<std::string> ids{c.broker_id};
      for (rapidjson::SizeType i = 0; i < peers->Size(); ++i) {
        std::string pp = r.child_path("Peers") + "[" + std::to_string(i) + "]";
        json::object_reader pr((*peers)[i], pp);
        peer_config peer;
        std::string address;
        pr.get("Id", peer.id, true);
        pr.get("Address", address, true);
        pr.get("Token", peer.token);
        std::string kafka;
        pr.get("Kafka", kafka);
        if (pr.ok() && !kafka.empty())
          if (auto s = split_address(kafka, pr.child_path("Kafka"), peer.kafka_host, peer.kafka_port); !s) return s;
        if (pr.ok() && peer.id.empty()) pr.fail("Id", "must not be empty");
        if (pr.ok() && peer.id == c.broker_id) pr.fail("Id", "'" + peer.id + "' is this broker's own BrokerId");
        if (pr.ok() && !ids.insert(peer.id).second) pr.fail("Id", "duplicate peer id '" + peer.id + "'");
        if (pr.ok())
          if (auto s = split_address(address, pr.child_path("Address"), peer.host, peer.port); !s) return s;
        if (auto s = pr.finish(); !s) return s;
        c.peers.push_back(std::move(peer));
      }
    }
  }
  if (const auto* tls = r.member("Tls"); tls && r.ok()) {
    if (auto t = read_tls(*tls, r.child_path("Tls")); t) c.tls = *t;
    else return t.to_status();
  }
  if (const auto* raft = r.member("Raft"); raft && r.ok()) {
    json::object_reader rr(*raft, r.child_path("Raft"));
    rr.get("Enabled", c.raft.enabled);
    rr.get("HeartbeatMs", c.raft.heartbeat_ms);
    rr.get("ElectionTimeoutMinMs", c.raft.election_timeout_min_ms);
    rr.get("ElectionTimeoutMaxMs", c.raft.election_timeout_max_ms);
    rr.get("MaxLogEntries", c.raft.max_log_entries);
    if (rr.ok() && c.raft.heartbeat_ms < 10) rr.fail("HeartbeatMs", "must be at least 10");
    if (rr.ok() && c.raft.election_timeout_min_ms <= c.raft.heartbeat_ms)
      rr.fail("ElectionTimeoutMinMs", "must exceed HeartbeatMs");
    if (rr.ok() && c.raft.election_timeout_max_ms <= c.raft.election_timeout_min_ms)
      rr.fail("ElectionTimeoutMaxMs", "must exceed ElectionTimeoutMinMs");
    if (rr.ok() && c.raft.max_log_entries < 16) rr.fail("MaxLogEntries", "must be at least 16");
    if (auto s = rr.finish(); !s) return s;
  }
  if (auto s = r.finish(); !s) return s;
  if (c.port && !is_loopback(c.host) && c.token.empty() && !c.allow_insecure)
    return {errc::invalid_argument, path + ".Token: the cluster listener binds " + c.host +
                                        ", beyond loopback, without a Token; set Token (or AllowInsecure: true)"};
  return {};
}

/// `Server.Auth`: {"Tokens": [{"Name","Token","Role"}], "AllowAnonymous": bool}.
status read_auth(const rapidjson::Value& v, const std::string& path, server_config& out) {
  json::object_reader r(v, path);
  auth_config a;
  r.get("AllowAnonymous", a.allow_anonymous);
  const auto* tokens = r.member("Tokens");
  if (r.ok() && tokens && !tokens->IsArray()) r.fail("Tokens", "expected an array");
  if (auto s = r.finish(); !s) return s;
  std::set<std::string> seen;
  for (rapidjson::SizeType i = 0; tokens && i < tokens->Size(); ++i) {
    json::object_reader t((*tokens)[i], path + ".Tokens[" + std::to_string(i) + "]");
    client_token ct;
    t.get("Name", ct.name, true);
    t.get("Token", ct.token, true);
    t.get("Role", ct.role, true);
    if (t.ok() && ct.name.empty()) t.fail("Name", "must not be empty");
    if (t.ok() && ct.token.size() < 16) t.fail("Token", "must be at least 16 characters");
    if (t.ok() && ct.token.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=") !=
                      std::string::npos)
      t.fail("Token", "may hold only letters, digits and - . _ ~ + / = (what a bearer token may carry)");
    if (t.ok() && ct.role != "client" && ct.role != "admin")
      t.fail("Role", "expected \"client\" or \"admin\", got \"" + ct.role + "\"");
    if (t.ok() && !seen.insert(ct.token).second) t.fail("Token", "is the same as another token's");
    if (auto s = t.finish(); !s) return s;
    a.tokens.push_back(std::move(ct));
  }
  out.auth = std::move(a);
  return {};
}

}  // namespace

std::vector<std::string> unused_environment() {
  // The tools' own variables, which may sit in the same shell (docs/configuration.md).
  static const std::set<std::string_view> tools{"MOONMQ_FAULTS", "MOONMQ_BROKER", "MOONMQ_TOKEN"};
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    const std::string_view name = kv.substr(0, kv.find('='));
    if (name.starts_with(env_prefix) && !name.starts_with(setting_prefix) && !tools.count(name))
      out.emplace_back(name);
  }
  return out;
}

environment process_environment() {
  environment env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (!kv.starts_with(setting_prefix)) continue;
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return env;
}

result<server_config> parse_settings(std::string_view text, const environment& env, std::string_view source) {
  rapidjson::Document doc;
  if (auto s = json::parse_document(text, doc, source); !s) return s.err();
  for (const auto& [name, value] : env) {
    if (!std::string_view(name).starts_with(setting_prefix)) continue;
    if (auto s = apply_override(doc, name, value); !s)
      return error{s.code(), "environment variable " + s.message()};
  }
  json::object_reader top(doc, "");
  const auto* server = top.member("Server");
  if (auto s = top.finish(); !s) return error{s.code(), std::string(source) + ": " + s.message()};
  server_config out;
  if (!server) return out;
  // An error in a key an environment variable set names the variable, not the file.
  std::vector<std::pair<std::string, std::string>> overridden;  // key path, variable
  for (const auto& [name, value] : env)
    if (std::string_view(name).starts_with(setting_prefix)) overridden.emplace_back(key_path_of(name), name);
  auto fail = [&](const status& s) {
    // The key the error names (up to its colon) is the variable's own, or on its way (an unknown key the variable
    // made: Server.Clustr for MOONMQ_Server__Clustr__BrokerId).
    const std::string key = s.message().substr(0, s.message().find(':'));
    for (const auto& [path, name] : overridden)
      if (path == key || path.starts_with(key + ".") || path.starts_with(key + "[") ||
          s.message().starts_with(path + "."))
        return error{s.code(), "environment variable " + name + " (" + s.message() + ")"};
    return error{s.code(), std::string(source) + ": " + s.message()};
  };
  json::object_reader r(*server, "Server");
  r.get("Host", out.host);
  read_port(r, "Port", out.port);
  r.get("DataDir", out.data_dir);
  if (r.ok() && out.data_dir.empty()) r.fail("DataDir", "must not be empty");
  if (const auto* st = r.member("Storage"); st && r.ok()) {
    json::object_reader sr(*st, "Server.Storage");
    sr.get("Fsync", out.storage.fsync);
    sr.get("FsyncIntervalMs", out.storage.fsync_interval_ms);
    if (sr.ok())
      if (auto p = storage::parse_fsync_policy(out.storage.fsync); !p) sr.fail("Fsync", p.message());
    if (sr.ok() && out.storage.fsync_interval_ms < 1) sr.fail("FsyncIntervalMs", "must be at least 1");
    if (auto s = sr.finish(); !s) return fail(s);
  }
  if (const auto* auth = r.member("Auth"); auth && r.ok()) {
    if (auto s = read_auth(*auth, "Server.Auth", out); !s) return fail(s);
  }
  if (const auto* gr = r.member("Groups"); gr && r.ok()) {
    json::object_reader g(*gr, "Server.Groups");
    g.get("SessionTimeoutMs", out.groups.session_timeout_ms);
    g.get("HeartbeatIntervalMs", out.groups.heartbeat_interval_ms);
    if (g.ok() && (out.groups.heartbeat_interval_ms < 10 || out.groups.heartbeat_interval_ms > 60'000))
      g.fail("HeartbeatIntervalMs", "must be from 10 to 60000");
    if (g.ok() && out.groups.session_timeout_ms < 2 * out.groups.heartbeat_interval_ms)
      g.fail("SessionTimeoutMs", "must be at least twice HeartbeatIntervalMs");
    if (auto s = g.finish(); !s) return fail(s);
  }
  if (const auto* tx = r.member("Transactions"); tx && r.ok()) {
    json::object_reader t(*tx, "Server.Transactions");
    t.get("TimeoutMs", out.transactions.timeout_ms);
    if (t.ok() && (out.transactions.timeout_ms < 100 || out.transactions.timeout_ms > 3'600'000))
      t.fail("TimeoutMs", "must be from 100 to 3600000");
    if (auto s = t.finish(); !s) return fail(s);
  }
  if (const auto* lg = r.member("Logging"); lg && r.ok()) {
    json::object_reader l(*lg, "Server.Logging");
    l.get("Level", out.logging.level);
    l.get("Format", out.logging.format);
    if (l.ok() && out.logging.level != "debug" && out.logging.level != "info" && out.logging.level != "warn" &&
        out.logging.level != "error")
      l.fail("Level", "must be debug, info, warn or error, not \"" + out.logging.level + "\"");
    if (l.ok() && out.logging.format != "text" && out.logging.format != "json")
      l.fail("Format", "must be text or json, not \"" + out.logging.format + "\"");
    if (auto s = l.finish(); !s) return fail(s);
  }
  if (const auto* kf = r.member("Kafka"); kf && r.ok()) {
    json::object_reader k(*kf, "Server.Kafka");
    kafka_config kc;
    std::uint32_t port = 0, advertised_port = 0;
    k.get("Host", kc.host);
    k.get("Port", port, true);
    k.get("AdvertisedHost", kc.advertised_host);
    k.get("AdvertisedPort", advertised_port);
    k.get("MaxRequestBytes", kc.max_request_bytes);
    if (const auto* tls = k.member("Tls"); tls && k.ok()) {
      if (auto t = read_tls(*tls, k.child_path("Tls")); t) kc.tls = *t;
      else return fail(t.to_status());
    }
    if (k.ok() && (port < 1 || port > 65535)) k.fail("Port", "must be from 1 to 65535");
    if (k.ok() && advertised_port > 65535) k.fail("AdvertisedPort", "must be from 1 to 65535");
    if (k.ok() && (kc.max_request_bytes < 1024 || kc.max_request_bytes > (1u << 30)))
      k.fail("MaxRequestBytes", "must be from 1024 to 1073741824");
    if (auto s = k.finish(); !s) return fail(s);
    kc.port = static_cast<std::uint16_t>(port);
    kc.advertised_port = static_cast<std::uint16_t>(advertised_port ? advertised_port : port);
    if (kc.advertised_host.empty()) kc.advertised_host = kc.host;
    out.kafka = kc;
  }
  if (const auto* lim = r.member("Limits"); lim && r.ok()) {
    json::object_reader lr(*lim, "Server.Limits");
    lr.get("MaxPartitionsPerTopic", out.limits.max_partitions_per_topic);
    lr.get("MaxPartitionsPerBroker", out.limits.max_partitions_per_broker);
    lr.get("MaxOpenPartitionFiles", out.limits.max_open_partition_files);
    lr.get("MaxProducersPerPartition", out.limits.max_producers_per_partition);
    lr.get("MaxClientConnections", out.limits.max_client_connections);
    lr.get("MaxUnauthenticatedConnections", out.limits.max_unauthenticated_connections);
    lr.get("AuthTimeoutMs", out.limits.auth_timeout_ms);
    if (lr.ok() && (out.limits.max_partitions_per_topic < 1 || out.limits.max_partitions_per_topic > 10000))
      lr.fail("MaxPartitionsPerTopic", "must be from 1 to 10000");
    if (lr.ok() && out.limits.max_partitions_per_broker < 1) lr.fail("MaxPartitionsPerBroker", "must be at least 1");
    if (lr.ok() && out.limits.max_open_partition_files < 16) lr.fail("MaxOpenPartitionFiles", "must be at least 16");
    if (lr.ok() && out.limits.max_producers_per_partition < 1)
      lr.fail("MaxProducersPerPartition", "must be at least 1");
    if (lr.ok() && out.limits.max_client_connections < 8) lr.fail("MaxClientConnections", "must be at least 8");
    if (lr.ok() && out.limits.max_unauthenticated_connections < 1)
      lr.fail("MaxUnauthenticatedConnections", "must be at least 1");
    if (lr.ok() && (out.limits.auth_timeout_ms < 100 || out.limits.auth_timeout_ms > 300'000))
      lr.fail("AuthTimeoutMs", "must be from 100 to 300000");
    if (auto s = lr.finish(); !s) return fail(s);
  }
  if (const auto* cl = r.member("Cluster"); cl && r.ok()) {
    cluster_config c;
    if (auto s = read_cluster(*cl, "Server.Cluster", c); !s) return fail(s);
    out.cluster = std::move(c);
  }
  if (const auto* ab = r.member("Autobalance"); ab && r.ok()) {
    if (auto s = autobalancer::read_autobalance_config(*ab, "Server.Autobalance", out.autobalance); !s) return fail(s);
    if (out.autobalance.enabled && !out.cluster)
      return fail({errc::invalid_argument, "Server.Autobalance.Enabled: needs a Server.Cluster section"});
  }
  if (auto s = r.finish(); !s) return fail(s);
  const bool open_api = !out.auth || (out.auth->tokens.empty());
  const bool anonymous_allowed = out.auth && out.auth->allow_anonymous;
  if (open_api && !anonymous_allowed && !is_loopback(out.host))
    return fail({errc::invalid_argument, "Server.Auth: the client API binds " + out.host +
                                             ", beyond loopback, without client tokens; set Server.Auth.Tokens (or "
                                             "Server.Auth.AllowAnonymous: true)"});
  if (out.kafka && open_api && !anonymous_allowed && !is_loopback(out.kafka->host))
    return fail({errc::invalid_argument, "Server.Kafka: the Kafka listener binds " + out.kafka->host +
                                             ", beyond loopback, without client tokens; set Server.Auth.Tokens (or "
                                             "Server.Auth.AllowAnonymous: true)"});
  return out;
}

result<server_config> load_settings(const std::string& path, const environment& env) {
  auto text = posix::read_file(path);
  if (!text) return error{text.code(), "cannot read configuration " + path + ": " + text.message()};
  return parse_settings(*text, env, path);
}

}  // namespace moonmq::cluster
