#include <catch2/catch.hpp>

#include <fstream>
#include <algorithm>
#include <cstdlib>
#include <iterator>

#include "moonmq/cluster/settings_loader.hpp"

using namespace moonmq;
using namespace moonmq::cluster;

namespace {

const char* full = R"({
  "Server": {
    "Host": "127.0.0.1", "Port": 9092, "DataDir": "/var/lib/moonmq",
    "Storage": { "Fsync": "always", "FsyncIntervalMs": 200 },
    "Cluster": {
      "BrokerId": "b1", "Host": "127.0.0.1", "Port": 9095, "Token": "shared-secret", "PeerTimeout": 5,
      "BatchBytes": 262144,
      "Peers": [ { "Id": "b2", "Address": "10.0.0.2:9095", "Token": "other" }, { "Id": "b3", "Address": "[::1]:9097" } ],
      "Raft": { "Enabled": true }
    },
    "Autobalance": { "Enabled": true, "IntervalSeconds": 60, "DryRun": true, "MaxActionsPerDetect": 50,
                     "Window": 60, "MinValid": 1, "Percentile": 0.9 }
  }
})";

result<server_config> parse(const std::string& json, environment env = {}) {
  return parse_settings(json, env, "appsettings.json");
}

}  // namespace

TEST_CASE("settings: the spec's configuration is read", "[settings]") {
  auto c = parse(full);
  REQUIRE(c);
  CHECK(c->port == 9092);
  CHECK(c->data_dir == "/var/lib/moonmq");
  CHECK(c->storage.fsync == "always");
  CHECK(c->storage.fsync_interval_ms == 200);
  REQUIRE(c->cluster);
  CHECK(c->cluster->broker_id == "b1");
  CHECK(*c->cluster->port == 9095);
  CHECK(c->cluster->token == "shared-secret");
  REQUIRE(c->cluster->peers.size() == 2);
  CHECK(c->cluster->peers[0].host == "10.0.0.2");
  CHECK(c->cluster->peers[0].port == 9095);
  CHECK(c->cluster->peers[0].token == "other");
  CHECK(c->cluster->peers[1].host == "::1");
  CHECK(c->cluster->raft.enabled);
  CHECK(c->autobalance.enabled);
}

TEST_CASE("settings: defaults apply to what is left out", "[settings]") {
  auto c = parse(R"({"Server": {"Cluster": {"BrokerId": "b1"}}})");
  REQUIRE(c);
  CHECK(c->host == "127.0.0.1");
  CHECK(c->storage.fsync == "interval");
  CHECK_FALSE(c->cluster->port.has_value());  // client-only node
  CHECK(c->cluster->batch_bytes == 262144);
  CHECK(c->cluster->peer_timeout_seconds == 5);
  CHECK_FALSE(c->cluster->raft.enabled);
  CHECK_FALSE(c->autobalance.enabled);
}

TEST_CASE("settings: TLS between brokers is mutual unless Verify is \"none\"", "[settings]") {
  auto mutual = parse(R"({"Server": {"Cluster": {"BrokerId": "b1", "Tls": {"CertFile": "c", "KeyFile": "k", "CaFile": "a"}}}})");
  REQUIRE(mutual);
  CHECK(mutual->cluster->tls->verify_peer);
  auto plain = parse(R"({"Server": {"Cluster": {"BrokerId": "b1", "Tls": {"CertFile": "c", "KeyFile": "k", "Verify": "none"}}}})");
  REQUIRE(plain);
  CHECK_FALSE(plain->cluster->tls->verify_peer);
}

TEST_CASE("settings: the Kafka listener's section, its TLS in the cluster's shape, and its errors", "[settings]") {
  auto k = parse(R"({"Server": {"Kafka": {"Port": 9093, "MaxRequestBytes": 2048,
                     "Tls": {"CertFile": "c", "KeyFile": "k", "CaFile": "a"}}}})");
  REQUIRE(k);
  CHECK(k->kafka->port == 9093);
  CHECK(k->kafka->advertised_host == "127.0.0.1");
  CHECK(k->kafka->advertised_port == 9093);
  CHECK(k->kafka->max_request_bytes == 2048);
  CHECK(k->kafka->tls->verify_peer);
  CHECK(k->kafka->tls->ca_file == "a");
  auto no_ca = parse(R"({"Server": {"Kafka": {"Port": 9093, "Tls": {"CertFile": "c", "KeyFile": "k"}}}})");
  REQUIRE_FALSE(no_ca);
  CHECK_THAT(no_ca.message(), Catch::Contains("Server.Kafka.Tls.CaFile: is required"));
  auto typo = parse(R"({"Server": {"Kafka": {"Port": 9093, "Tls": {"CertFile": "c", "KeyFile": "k", "CaFile": "a", "Verfy": "none"}}}})");
  REQUIRE_FALSE(typo);
  CHECK_THAT(typo.message(), Catch::Contains("Server.Kafka.Tls.Verfy"));
  auto no_port = parse(R"({"Server": {"Kafka": {"Host": "127.0.0.1"}}})");
  REQUIRE_FALSE(no_port);
  CHECK_THAT(no_port.message(), Catch::Contains("Server.Kafka.Port"));
}

TEST_CASE("settings: environment variables override keys", "[settings]") {
  auto c = parse(full, {{"MOONMQ_Server__Cluster__BrokerId", "b7"},
                        {"MOONMQ_Server__Port", "9300"},
                        {"MOONMQ_Server__Autobalance__DryRun", "false"},
                        {"MOONMQ_Server__Cluster__Peers__1__Address", "127.0.0.1:9400"},
                        {"OTHER_VARIABLE", "ignored"}});
  REQUIRE(c);
  CHECK(c->cluster->broker_id == "b7");
  CHECK(c->port == 9300);
  CHECK_FALSE(c->autobalance.dry_run);
  CHECK(c->cluster->peers[1].port == 9400);
}

TEST_CASE("settings: only MOONMQ_Server__ variables are configuration (the tools' own variables are not)",
          "[settings]") {
  auto c = parse(full, {{"MOONMQ_BROKER", "127.0.0.1:9092"}, {"MOONMQ_TOKEN", "x"}, {"MOONMQ_FAULTS", "a=crash"},
                        {"MOONMQ_Other", "1"}, {"MOONMQ_Server__Port", "9301"}});
  INFO((c ? std::string() : c.message()));
  REQUIRE(c);
  CHECK(c->port == 9301);
}

TEST_CASE("settings: an override of the wrong type is reported naming the key", "[settings]") {
  auto c = parse(full, {{"MOONMQ_Server__Port", "high"}});
  REQUIRE_FALSE(c);
  CHECK_THAT(c.message(), Catch::Contains("Server.Port"));
  // The variable is named, not the file it overrode.
  CHECK_THAT(c.message(), Catch::StartsWith("environment variable MOONMQ_Server__Port"));
  auto peer = parse(full, {{"MOONMQ_Server__Cluster__Peers__1__Address", "nowhere"}});
  REQUIRE_FALSE(peer);
  CHECK_THAT(peer.message(), Catch::Contains("MOONMQ_Server__Cluster__Peers__1__Address"));
  auto file = parse(full, {{"MOONMQ_Server__Port", "9300"}, {"MOONMQ_Server__Cluster__PeerTimeout", "0"}});
  REQUIRE_FALSE(file);
  CHECK_THAT(file.message(), Catch::Contains("MOONMQ_Server__Cluster__PeerTimeout"));
  CHECK_THAT(file.message(), !Catch::Contains("MOONMQ_Server__Port"));
}

TEST_CASE("settings: an override's unknown key or an index past the list's end names the variable, not the file",
          "[settings]") {
  auto typo = parse(full, {{"MOONMQ_Server__Clustr__BrokerId", "b9"}});
  REQUIRE_FALSE(typo);
  CHECK_THAT(typo.message(), Catch::StartsWith("environment variable MOONMQ_Server__Clustr__BrokerId") &&
                                 Catch::Contains("Server.Clustr"));
  auto past = parse(full, {{"MOONMQ_Server__Cluster__Peers__5__Address", "127.0.0.1:9500"}});
  REQUIRE_FALSE(past);
  CHECK_THAT(past.message(), Catch::StartsWith("environment variable MOONMQ_Server__Cluster__Peers__5__Address") &&
                                 Catch::Contains("past the end"));
}

TEST_CASE("settings: MOONMQ_ variables that configure nothing are found, the tools' own are not", "[settings]") {
  ::setenv("MOONMQ_Server_Port", "abc", 1);
  ::setenv("MOONMQ_BROKER", "127.0.0.1:9092", 1);
  const auto unused = cluster::unused_environment();
  ::unsetenv("MOONMQ_Server_Port");
  ::unsetenv("MOONMQ_BROKER");
  CHECK(std::find(unused.begin(), unused.end(), "MOONMQ_Server_Port") != unused.end());
  CHECK(std::find(unused.begin(), unused.end(), "MOONMQ_BROKER") == unused.end());
}

TEST_CASE("settings: faults are errors naming the key", "[settings]") {
  auto check = [](const std::string& json, const std::string& expected) {
    auto c = parse(json);
    REQUIRE_FALSE(c);
    CHECK(c.code() == errc::invalid_argument);
    CHECK_THAT(c.message(), Catch::Contains(expected));
    CHECK_THAT(c.message(), Catch::StartsWith("appsettings.json"));
  };
  check(R"({"Server": {"Prot": 1}})", "Server.Prot: unknown key");
  check(R"({"Servr": {}})", "Servr: unknown key");
  check(R"({"Server": {"Port": "9092"}})", "Server.Port: expected a whole number");
  check(R"({"Server": {"Port": 70000}})", "Server.Port: must be from 1 to 65535");
  check(R"({"Server": {"Cluster": {}}})", "Server.Cluster.BrokerId: is required");
  check(R"({"Server": {"Cluster": {"BrokerId": "b1", "Peers": [{"Id": "b2", "Address": "h:1"},
                                                                   {"Id": "b2", "Address": "h:2"}]}}})",
        "Server.Cluster.Peers[1].Id: duplicate peer id 'b2'");
  check(R"({"Server": {"Cluster": {"BrokerId": "b1", "Peers": [{"Id": "b1", "Address": "h:1"}]}}})", "own BrokerId");
  check(R"({"Server": {"Cluster": {"BrokerId": "b1", "Peers": [{"Id": "b2", "Address": "nohost"}]}}})",
        "Server.Cluster.Peers[0].Address: expected \"host:port\"");
  check(R"({"Server": {"Cluster": {"BrokerId": "b1", "Tls": {"CertFile": "c", "KeyFile": "k", "Verify": "maybe"}}}})",
        "Server.Cluster.Tls.Verify");
  // Verify is "required" unless set to "none": a CA to check peers with must be given.
  check(R"({"Server": {"Cluster": {"BrokerId": "b1", "Tls": {"CertFile": "c", "KeyFile": "k"}}}})",
        "Server.Cluster.Tls.CaFile");
  check(R"({"Server": {"Storage": {"Fsync": "sometimes"}}})", "Server.Storage.Fsync");
  check(R"({"Server": {"Autobalance": {"Enabled": true}}})", "needs a Server.Cluster section");
  check(R"({"Server": {"Autobalance": {"Windw": 3}}})", "Server.Autobalance.Windw: unknown key");
  check(R"({"Server": )", "not valid JSON");
}

TEST_CASE("settings: a cluster listener beyond loopback needs a Token", "[settings]") {
  auto open = parse(R"({"Server": {"Cluster": {"BrokerId": "b1", "Host": "0.0.0.0", "Port": 9095}}})");
  REQUIRE_FALSE(open);
  CHECK_THAT(open.message(), Catch::Contains("Server.Cluster.Token"));
  CHECK(parse(R"({"Server": {"Cluster": {"BrokerId": "b1", "Host": "0.0.0.0", "Port": 9095, "Token": "t"}}})"));
  CHECK(parse(R"({"Server": {"Cluster": {"BrokerId": "b1", "Host": "0.0.0.0", "Port": 9095,
                                         "AllowInsecure": true}}})"));
  CHECK(parse(R"({"Server": {"Cluster": {"BrokerId": "b1", "Host": "127.0.0.2", "Port": 9095}}})"));
}

TEST_CASE("settings: a missing file is an error naming it", "[settings]") {
  auto c = load_settings("/nonexistent/appsettings.json", {});
  REQUIRE_FALSE(c);
  CHECK_THAT(c.message(), Catch::Contains("/nonexistent/appsettings.json"));
}

TEST_CASE("settings: the example in docs/configuration.md is valid and the operator's keys are documented",
          "[settings][docs]") {
  std::ifstream in(std::string(MOONMQ_SOURCE_DIR) + "/docs/configuration.md");
  REQUIRE(in);
  std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto from = doc.find("```json");
  REQUIRE(from != std::string::npos);
  from += 7;
  const std::string example = doc.substr(from, doc.find("```", from) - from);
  auto c = parse(example);
  INFO((c ? std::string() : c.message()));
  REQUIRE(c);
  CHECK(c->logging.format == "json");
  CHECK(c->cluster->move_throttle_bytes_per_sec == 52428800);
  // The keys an operator reaches for are in the reference.
  for (const char* key : {"Logging__Level", "Logging__Format", "Cluster__MoveThrottleBytesPerSec", "Storage__Fsync",
                          "Limits__MaxOpenPartitionFiles", "Limits__MaxClientConnections", "Groups__SessionTimeoutMs",
                          "Transactions__TimeoutMs"}) {
    CHECK_THAT(doc, Catch::Contains(std::string(key).substr(std::string(key).rfind("__") + 2)));
  }
  auto bad_level = parse(full, {{"MOONMQ_Server__Logging__Level", "loud"}});
  REQUIRE_FALSE(bad_level);
  CHECK_THAT(bad_level.message(), Catch::Contains("debug, info, warn or error"));
  auto bad_format = parse(full, {{"MOONMQ_Server__Logging__Format", "xml"}});
  REQUIRE_FALSE(bad_format);
  CHECK_THAT(bad_format.message(), Catch::Contains("text or json"));
  auto few_connections = parse(full, {{"MOONMQ_Server__Limits__MaxClientConnections", "4"}});
  REQUIRE_FALSE(few_connections);
  CHECK_THAT(few_connections.message(), Catch::Contains("MaxClientConnections"));
  auto connections = parse(full, {{"MOONMQ_Server__Limits__MaxClientConnections", "64"}});
  REQUIRE(connections);
  CHECK(connections->limits.max_client_connections == 64);
}
