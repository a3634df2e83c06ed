#include <catch2/catch.hpp>

#include <map>

#include "cluster/topic_json.hpp"
#include "moonmq/autobalancer/config.hpp"
#include "moonmq/cluster/topic_catalog.hpp"

using namespace moonmq;
using namespace moonmq::cluster;

namespace {

topic_change create(const std::string& name, std::vector<broker_id> owners, std::uint64_t expect = 0) {
  return {topic_op::create, name, expect, std::move(owners)};
}

}  // namespace

TEST_CASE("topic catalog: of two creates of one name made against the same version, exactly one applies",
          "[topics]") {
  topic_catalog c;
  auto first = c.apply(create("ev2", {broker_id("b1")}));
  REQUIRE(first);
  CHECK(first->version == 1);
  CHECK(first->partitions() == 1);
  auto second = c.apply(create("ev2", {broker_id("b3")}));
  CHECK(second.code() == errc::already_exists);
  CHECK(*c.first_owner({"ev2", 0}) == broker_id("b1"));  // the loser changed nothing
  CHECK_FALSE(c.first_owner({"ev2", 1}));
  CHECK_FALSE(c.first_owner({"other", 0}));
}

TEST_CASE("topic catalog: grow and delete are compare-and-set on the topic's version", "[topics]") {
  topic_catalog c;
  REQUIRE(c.apply(create("t", {broker_id("b1"), broker_id("b2")})));
  SECTION("a grow against the current version adds the partitions with their first owners") {
    auto g = c.apply({topic_op::grow, "t", 1, {broker_id("b3")}});
    REQUIRE(g);
    CHECK(g->version == 2);
    CHECK(g->partitions() == 3);
    CHECK(*c.first_owner({"t", 2}) == broker_id("b3"));
    SECTION("a second grow made against the old version loses, naming both versions") {
      auto late = c.apply({topic_op::grow, "t", 1, {broker_id("b1")}});
      CHECK(late.code() == errc::conflict);
      CHECK_THAT(late.message(), Catch::Contains("at version 2") && Catch::Contains("against version 1"));
      CHECK(c.find("t")->partitions() == 3);
    }
  }
  SECTION("a delete made against the current version deletes; the record stays with its version") {
    auto d = c.apply({topic_op::remove, "t", 1, {}});
    REQUIRE(d);
    CHECK(d->deleted);
    CHECK(c.live("t") == nullptr);
    CHECK(c.find("t")->version == 2);
    CHECK_FALSE(c.first_owner({"t", 0}));
    CHECK(c.apply({topic_op::grow, "t", 2, {broker_id("b1")}}).code() == errc::not_found);
    CHECK(c.apply({topic_op::remove, "t", 2, {}}).code() == errc::not_found);
    SECTION("a create of the name again continues from the deleted version, so a stale change cannot touch it") {
      CHECK(c.apply(create("t", {broker_id("b2")}, 0)).code() == errc::conflict);
      auto again = c.apply(create("t", {broker_id("b2")}, 2));
      REQUIRE(again);
      CHECK(again->version == 3);
      CHECK(c.apply({topic_op::remove, "t", 1, {}}).code() == errc::conflict);
    }
  }
  SECTION("changes that add nothing, or a delete that adds something, are refused") {
    CHECK(c.apply({topic_op::grow, "t", 1, {}}).code() == errc::invalid_argument);
    CHECK(c.apply({topic_op::remove, "t", 1, {broker_id("b1")}}).code() == errc::invalid_argument);
    CHECK(c.apply(create("u", {})).code() == errc::invalid_argument);
    CHECK(c.apply({topic_op::grow, "nope", 0, {broker_id("b1")}}).code() == errc::not_found);
  }
}

TEST_CASE("topic catalog: a broker that learns late takes only newer records", "[topics]") {
  topic_catalog coordinator, late;
  REQUIRE(coordinator.apply(create("t", {broker_id("b1")})));
  REQUIRE(coordinator.apply({topic_op::grow, "t", 1, {broker_id("b2")}}));
  const topic_record v2 = *coordinator.find("t");
  REQUIRE(coordinator.apply({topic_op::remove, "t", 2, {}}));
  const topic_record v3 = *coordinator.find("t");
  CHECK(late.learn(v3));
  CHECK_FALSE(late.learn(v2));  // arrived out of order: the delete stands
  CHECK(late.find("t")->deleted);
  CHECK(late == coordinator);
}

TEST_CASE("topic catalog: partitions spread to the broker holding the fewest, ties to the earlier one", "[topics]") {
  auto owners = spread_partitions({{broker_id("b1"), 4}, {broker_id("b2"), 0}, {broker_id("b3"), 1}}, 6);
  std::vector<std::string> ids;
  for (const auto& o : owners) ids.push_back(o.value());
  CHECK(ids == std::vector<std::string>{"b2", "b2", "b3", "b2", "b3", "b2"});
  auto even = spread_partitions({{broker_id("b1"), 0}, {broker_id("b2"), 0}, {broker_id("b3"), 0}}, 3);
  CHECK(even == std::vector<broker_id>{broker_id("b1"), broker_id("b2"), broker_id("b3")});
}

TEST_CASE("topic catalog: with capacities stated, a broker twice the size is given twice the partitions",
          "[topics][capacity]") {
  autobalancer::autobalance_config c;
  CHECK(autobalancer::relative_capacities(c, {"b1", "b2"}) == std::vector<double>{1.0, 1.0});  // none stated
  c.default_capacity.nw_in = 1000;
  c.capacity["b3"].nw_in = 2000;
  c.capacity["b3"].disk = 5000;  // disk is not stated for b1 and b2: left out
  const auto w = autobalancer::relative_capacities(c, {"b1", "b2", "b3"});
  REQUIRE(w.size() == 3);
  CHECK(w[0] == Approx(0.75));
  CHECK(w[2] == Approx(1.5));
  auto owners = spread_partitions({{broker_id("b1"), 0}, {broker_id("b2"), 0}, {broker_id("b3"), 0}}, 8, w);
  std::map<std::string, int> per;
  for (const auto& o : owners) ++per[o.value()];
  CHECK(per == std::map<std::string, int>{{"b1", 2}, {"b2", 2}, {"b3", 4}});
}

TEST_CASE("topic catalog: changes and catalogs read back from JSON, and bad ones name the field", "[topics]") {
  topic_change c{topic_op::grow, "orders", 4, {broker_id("b1"), broker_id("b2")}};
  auto back = wire::read_topic_change(wire::topic_change_body(c));
  REQUIRE(back);
  CHECK(*back == c);
  CHECK_THAT(wire::read_topic_change(R"({"op":"shrink","name":"t","expect":0,"added":[]})").message(),
             Catch::Contains("op"));
  CHECK_THAT(wire::read_topic_change(R"({"op":"create","name":"a/b","expect":0,"added":["b1"]})").message(),
             Catch::Contains("name"));
  CHECK_THAT(wire::read_topic_change(R"({"op":"create","name":"t","expect":0,"added":[""]})").message(),
             Catch::Contains("added"));

  topic_catalog cat;
  REQUIRE(cat.apply(create("a", {broker_id("b1"), broker_id("b2")})));
  REQUIRE(cat.apply(create("b", {broker_id("b3")})));
  REQUIRE(cat.apply({topic_op::remove, "b", 1, {}}));
  const std::string text = json::object([&](json::writer& w) { wire::write_catalog(w, cat); });
  rapidjson::Document d;
  REQUIRE(json::parse_object(text, d));
  auto read = wire::read_catalog(d, "topics.json");
  REQUIRE(read);
  CHECK(*read == cat);
  rapidjson::Document old;
  REQUIRE(json::parse_object(R"({"owners":[],"controller":{"term":1,"id":"b1"}})", old));
  CHECK(wire::read_catalog(old, "snapshot")->size() == 0);  // a snapshot from before topics were metadata
  rapidjson::Document bad;
  REQUIRE(json::parse_object(R"({"topics":[{"name":"t","version":0,"created":0,"owners":["b1"]}]})", bad));
  CHECK_THAT(wire::read_catalog(bad, "topics.json").message(), Catch::Contains("topics.json.topics[0].version"));
}
