#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include "moonmq/autobalancer/snapshot_json.hpp"

using namespace moonmq::autobalancer;

namespace {

const char* example = R"({
  "brokers": [ {"id": "b1", "active": true}, {"id": "b2"} ],
  "partitions": [
    {"topic": "orders", "partition": 0, "broker": "b1", "nw_in": 2097152.0, "nw_out": 4194304.0, "disk": 1073741824},
    {"topic": "orders", "partition": 1, "broker": "b1", "nw_in": 2097152.0, "nw_out": 4194304.0, "disk": 1073741824}
  ],
  "autobalance": { "MaxActionsPerDetect": 50,
                   "Goals": [ {"Name": "NW_IN", "Deviation": 0.1, "DetectThreshold": 1048576},
                              {"Name": "NW_OUT"}, {"Name": "DISK"}, {"Name": "PARTITION_COUNT"} ] }
})";

}  // namespace

TEST_CASE("the snapshot format of the design is read", "[snapshot_json]") {
  auto in = parse_planner_input(example);
  REQUIRE(in);
  CHECK(in->snap.broker_count() == 2);
  CHECK(in->snap.partition_count() == 2);
  CHECK(in->snap.load(0, resource::nw_out) == 4194304.0);
  CHECK(in->snap.broker_load(0, resource::disk) == 2.0 * 1073741824);
  CHECK(in->config.goals.size() == 4);
  CHECK(*in->config.goals[0].detect_threshold == 1048576);
}

TEST_CASE("snapshot faults name the field", "[snapshot_json]") {
  auto check = [](const char* json, const char* message) {
    auto in = parse_planner_input(json);
    REQUIRE_FALSE(in);
    CHECK(in.message() == message);
  };
  check("[1,", "snapshot: not valid JSON at byte 3: Invalid value.");
  check(R"({"partitions": []})", "brokers: is required");
  check(R"({"brokers": []})", "partitions: is required");
  check(R"({"brokers": {}, "partitions": []})", "brokers: expected an array, got an object");
  check(R"({"brokers": [], "partitions": [], "extra": 1})", "extra: unknown key");
  check(R"({"brokers": [{"active": true}], "partitions": []})", "brokers[0].id: is required");
  check(R"({"brokers": [{"id": "b1"}, {"id": "b1"}], "partitions": []})", "brokers[1].id: broker 'b1' is listed twice");
  check(R"({"brokers": [{"id": "b1"}], "partitions": [{"topic": "t", "partition": 0}]})",
        "partitions[0].broker: is required");
  check(R"({"brokers": [{"id": "b1"}], "partitions": [{"topic": "t", "partition": 0, "broker": "b7"}]})",
        "partitions[0].broker: unknown broker 'b7'");
  check(R"({"brokers": [{"id": "b1"}], "partitions": [{"topic": "t", "partition": 0, "broker": "b1", "nw_in": -1}]})",
        "partitions[0].nw_in: must not be negative");
  check(R"({"brokers": [{"id": "b1"}], "partitions": [{"topic": "t", "partition": 0, "broker": "b1", "disk": "x"}]})",
        "partitions[0].disk: expected a number, got a string");
  check(R"({"brokers": [{"id": "b1"}], "partitions": [{"topic": "t", "partition": -2, "broker": "b1"}]})",
        "partitions[0].partition: must be from 0 to 2147483647");
  check(R"({"brokers": [{"id": "b1"}], "partitions": [{"topic": "t", "partition": 0, "broker": "b1"},
                                                        {"topic": "t", "partition": 0, "broker": "b1"}]})",
        "partitions[1].partition: t-0 is listed twice");
  check(R"({"brokers": [], "partitions": [], "autobalance": {"Window": "x"}})",
        "autobalance.Window: expected a whole number from 0 to 4294967295, got a string");
}

TEST_CASE("the plan is rendered in the design's format", "[snapshot_json]") {
  auto in = parse_planner_input(example);
  REQUIRE(in);
  auto d = anomaly_detector::create(in->config);
  REQUIRE(d);
  planner_report report = run_planner(in->snap, *d, true, 10);
  std::string json = render_plan_json(report);
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  REQUIRE(doc["actions"].IsArray());
  REQUIRE(doc["actions"].Size() == 1);
  const auto& a = doc["actions"][0];
  CHECK(std::string(a["type"].GetString()) == "MOVE");
  CHECK(std::string(a["topic"].GetString()) == "orders");
  CHECK(std::string(a["src"].GetString()) == "b1");
  CHECK(std::string(a["dest"].GetString()) == "b2");
  CHECK(doc["passes"].GetUint() == 2);
  CHECK(doc["converged"].GetBool());
  const auto& b1 = doc["brokers"][0];
  CHECK(std::string(b1["id"].GetString()) == "b1");
  CHECK(b1["before"]["partitions"].GetUint() == 2);
  CHECK(b1["after"]["partitions"].GetUint() == 1);
  CHECK(b1["before"]["nw_in"].GetDouble() == 4194304.0);
  CHECK(b1["after"]["disk"].GetDouble() == 1073741824.0);
  std::string text = render_plan_text(report);
  CHECK_THAT(text, Catch::Contains("MOVE orders-"));
  CHECK_THAT(text, Catch::Contains("converged"));
}

TEST_CASE("a rendered snapshot reads back as the same planner input, goals and exclusions included",
          "[autobalancer][snapshot]") {
  snapshot snap;
  auto b1 = snap.add_broker("b1");
  auto b2 = snap.add_broker("b\"2", false);  // an id that needs escaping, inactive
  snap.add_partition("orders", 0, b1, {{100.5, 200, 3000}});
  snap.add_partition("orders", 1, b2, {{0, 0, 12}});
  snap.add_partition("__internal", 0, b1, {{1, 1, 1}});
  autobalance_config config;
  config.max_actions_per_detect = 7;
  config.excluded_brokers = {"b3"};
  config.excluded_topics = {"audit"};
  config.goals = {{"DISK", 0.2, std::nullopt, 0.01}, {"PARTITION_COUNT", std::nullopt, std::nullopt, std::nullopt}};
  auto text = render_planner_input(snap, &config);
  auto back = parse_planner_input(text);
  INFO(text);
  REQUIRE(back);
  REQUIRE(back->snap.broker_count() == 2);
  CHECK(back->snap.broker_id(1) == "b\"2");
  CHECK_FALSE(back->snap.active(1));
  REQUIRE(back->snap.partition_count() == 3);
  for (partition_index p = 0; p < 3; ++p) {
    CHECK(back->snap.topic(p) == snap.topic(p));
    CHECK(back->snap.partition_number(p) == snap.partition_number(p));
    CHECK(back->snap.owner(p) == snap.owner(p));
    for (auto r : {resource::nw_in, resource::nw_out, resource::disk})
      CHECK(back->snap.load(p, r) == snap.load(p, r));
  }
  CHECK(back->config.max_actions_per_detect == 7);
  CHECK(back->config.excluded_brokers == std::vector<std::string>{"b3"});
  CHECK(back->config.excluded_topics == std::vector<std::string>{"audit"});
  REQUIRE(back->config.goals.size() == 2);
  CHECK(back->config.goals[0].name == "DISK");
  CHECK(back->config.goals[0].deviation == 0.2);
  CHECK(back->config.goals[0].min_change == 0.01);
  CHECK_FALSE(back->config.goals[1].deviation);
}

TEST_CASE("a broker's held disk goes through the planner input", "[autobalancer][snapshot][held]") {
  snapshot snap;
  auto b1 = snap.add_broker("b1");
  snap.add_broker("b2");
  snap.add_partition("orders", 0, b1, {{0, 0, 100}});
  snap.set_held_disk(b1, 5000);
  auto back = parse_planner_input(render_planner_input(snap));
  REQUIRE(back);
  CHECK(back->snap.held_disk(0) == 5000);
  CHECK(back->snap.broker_load(0, resource::disk) == 100);  // room taken under the capacity, not load
  CHECK(back->snap.held_disk(1) == 0);
  CHECK_FALSE(parse_planner_input(R"({"brokers":[{"id":"b1","held_disk":-1}],"partitions":[]})"));
}

TEST_CASE("broker capacities and MaxUtilization go through the planner input", "[snapshot_json][capacity]") {
  auto in = parse_planner_input(R"({"brokers":[{"id":"b1","capacity":{"nw_in":100,"disk":5000}},{"id":"b2"}],
    "partitions":[],"autobalance":{"MaxUtilization":0.7,
      "Capacity":{"Default":{"NwIn":10,"NwOut":20,"Disk":30},"Brokers":{"b2":{"Disk":60}}}}})");
  REQUIRE(in);
  CHECK(in->snap.capacity(0, resource::nw_in) == 100);
  CHECK(in->snap.capacity(0, resource::nw_out) == 0);
  CHECK(in->snap.capacity(0, resource::disk) == 5000);
  CHECK(in->config.max_utilization == 0.7);
  CHECK(in->config.capacity_of("b2") == broker_capacity{10, 20, 60});
  CHECK(in->config.capacity_of("b9") == broker_capacity{10, 20, 30});
  auto back = parse_planner_input(render_planner_input(in->snap, &in->config));
  REQUIRE(back);
  CHECK(back->snap.capacity(0, resource::disk) == 5000);
  CHECK(back->config.capacity == in->config.capacity);
  CHECK(back->config.default_capacity == in->config.default_capacity);
  CHECK(back->config.max_utilization == 0.7);

  CHECK_THAT(parse_planner_input(R"({"brokers":[{"id":"b1","capacity":{"nw_in":0}}],"partitions":[]})").message(),
             Catch::Contains("brokers[0].capacity.nw_in: must be positive"));
  CHECK_THAT(parse_planner_input(R"({"brokers":[],"partitions":[],"autobalance":{"MaxUtilization":1.5}})").message(),
             Catch::Contains("MaxUtilization"));
  CHECK_THAT(
      parse_planner_input(R"({"brokers":[],"partitions":[],"autobalance":{"Capacity":{"Brokers":{"b1":{"Nw":1}}}}})")
          .message(),
      Catch::Contains("Capacity.Brokers.b1.Nw"));
}
