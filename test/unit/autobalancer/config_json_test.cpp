#include <catch2/catch.hpp>

#include "moonmq/autobalancer/config_json.hpp"

using namespace moonmq::autobalancer;

TEST_CASE("an empty Autobalance section takes every default", "[config]") {
  auto c = parse_autobalance_config("{}");
  REQUIRE(c);
  CHECK_FALSE(c->enabled);
  CHECK(c->interval_seconds == 60);
  CHECK(c->dry_run);
  CHECK(c->max_actions_per_detect == 50);
  CHECK(c->window == 60);
  CHECK(c->min_valid == 1);
  CHECK(c->percentile == 0.9);
  REQUIRE(c->goals.size() == 4);
  CHECK(c->goals[0].name == "NW_IN");
  CHECK(c->goals[3].name == "PARTITION_COUNT");
}

TEST_CASE("every documented key is read", "[config]") {
  auto c = parse_autobalance_config(R"({
    "Enabled": true, "IntervalSeconds": 5, "DryRun": false, "MaxActionsPerDetect": 7, "Window": 30,
    "MinValid": 3, "Percentile": 0.5, "MaxMovesPerBroker": 2,
    "ExcludedTopics": ["audit"], "ExcludedBrokers": ["b9"],
    "Goals": [ {"Name": "DISK", "Deviation": 0.2, "DetectThreshold": 100, "MinChange": 0.01}, {"Name": "NW_IN"} ]
  })");
  REQUIRE(c);
  CHECK(c->enabled);
  CHECK(c->interval_seconds == 5);
  CHECK_FALSE(c->dry_run);
  CHECK(c->max_actions_per_detect == 7);
  CHECK(c->window == 30);
  CHECK(c->min_valid == 3);
  CHECK(c->percentile == 0.5);
  CHECK(c->max_moves_per_broker == 2);
  CHECK(c->excluded_topics == std::vector<std::string>{"audit"});
  CHECK(c->excluded_brokers == std::vector<std::string>{"b9"});
  REQUIRE(c->goals.size() == 2);
  CHECK(c->goals[0].name == "DISK");
  CHECK(*c->goals[0].deviation == 0.2);
  CHECK(*c->goals[0].detect_threshold == 100);
  CHECK(*c->goals[0].min_change == 0.01);
  CHECK_FALSE(c->goals[1].deviation.has_value());
}

TEST_CASE("configuration faults name the key", "[config]") {
  auto check = [](const char* json, const char* message) {
    auto c = parse_autobalance_config(json);
    REQUIRE_FALSE(c);
    CHECK(c.message() == message);
  };
  check(R"({"Enabeld": true})", "Autobalance.Enabeld: unknown key");
  check(R"({"Enabled": "yes"})", "Autobalance.Enabled: expected true or false, got a string");
  check(R"({"IntervalSeconds": -1})",
        "Autobalance.IntervalSeconds: expected a whole number from 0 to 4294967295, got a number");
  check(R"({"IntervalSeconds": 0})", "Autobalance.IntervalSeconds: must be at least 1");
  check(R"({"Percentile": 1.5})", "Autobalance.Percentile: must be in (0, 1]");
  check(R"({"Window": 10, "MinValid": 11})", "Autobalance.MinValid: must not exceed Window");
  check(R"({"Goals": {}})", "Autobalance.Goals: expected an array of goals, got an object");
  check(R"({"Goals": [{"Deviation": 0.1}]})", "Autobalance.Goals[0].Name: is required");
  check(R"({"Goals": [{"Name": "DISK", "Deviaton": 0.1}]})", "Autobalance.Goals[0].Deviaton: unknown key");
  check(R"({"Goals": [{"Name": "DISK", "Deviation": -0.1}]})", "Autobalance.Goals[0].Deviation: must be in [0, 1)");
  check(R"({"Goals": [{"Name": "DISK"}, {"Name": "DISK"}]})", "Autobalance.Goals[1].Name: goal 'DISK' listed twice");
  check(R"({"ExcludedTopics": ["a", 3]})", "Autobalance.ExcludedTopics[1]: expected a string, got a number");
  check(R"([1, 2])", "Autobalance: expected an object, got an array");
}

TEST_CASE("malformed JSON is reported with its position", "[config]") {
  auto c = parse_autobalance_config(R"({"Enabled": tru})");
  REQUIRE_FALSE(c);
  CHECK_THAT(c.message(), Catch::StartsWith("Autobalance: not valid JSON at byte"));
  auto trailing = parse_autobalance_config(R"({} {})");
  CHECK_FALSE(trailing);
}
