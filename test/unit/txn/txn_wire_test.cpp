// The transaction coordinator's calls (lib/txn/txn_wire.hpp): what the forwarding broker writes is what the
// coordinator reads, field for field; a call with an unknown field, a bad name or an epoch out of range is refused;
// the answer to an add is read leniently.
#include <catch2/catch.hpp>

#include "txn/txn_wire.hpp"

using namespace moonmq;
using namespace moonmq::txn;

TEST_CASE("txn wire: init, add, offsets and end round-trip", "[txn][wire]") {
  wire::init_request init{"tx-1", {{true, 30'000}, producer_identity{7, 3}}};
  auto i = wire::read_init_request(wire::write(init));
  REQUIRE(i);
  CHECK(i->transactional_id == "tx-1");
  CHECK(i->options.session.keeps_epoch);
  CHECK(i->options.session.timeout_ms == 30'000);
  REQUIRE(i->options.expected);
  CHECK(i->options.expected->producer_id == 7);
  CHECK(i->options.expected->epoch == 3);
  auto bare = wire::read_init_request(wire::write(wire::init_request{"tx-2", {}}));
  REQUIRE(bare);
  CHECK_FALSE(bare->options.expected);

  wire::add_request add{"tx-1", 7, 3, {{{"orders", 0}, broker_id("b2")}, {{"orders", 1}, broker_id("")}}, true};
  auto a = wire::read_add_request(wire::write(add));
  REQUIRE(a);
  CHECK(a->producer_id == 7);
  CHECK(a->epoch == 3);
  CHECK(a->replace_owners);
  REQUIRE(a->partitions.size() == 2);
  CHECK(a->partitions[0].second == broker_id("b2"));
  CHECK(a->partitions[1].second.value().empty());  // the sender's own

  offsets_call off{"tx-1", 7, 3, "g", {{{"g", {"orders", 2}, 41}, broker_id("b3")}}};
  auto o = wire::read_offsets_call(wire::write(off));
  REQUIRE(o);
  CHECK(o->group == "g");
  REQUIRE(o->offsets.size() == 1);
  CHECK(o->offsets[0].first == txn_offset{"g", {"orders", 2}, 41});
  CHECK(o->offsets[0].second == broker_id("b3"));

  auto e = wire::read_end_call(wire::write(end_call{"tx-1", 7, 3, true, true}));
  REQUIRE(e);
  CHECK(e->commit);
  CHECK(e->wait);
  CHECK(e->epoch == 3);
}

TEST_CASE("txn wire: a call with an unknown field, a bad name or an epoch out of range is refused", "[txn][wire]") {
  CHECK_FALSE(wire::read_end_call(R"({"transactional_id":"t","producer_id":1,"producer_epoch":0,"commit":true,"x":1})"));
  CHECK_FALSE(wire::read_end_call(R"({"transactional_id":"t","producer_id":1,"commit":true})"));
  auto big = wire::read_end_call(R"({"transactional_id":"t","producer_id":1,"producer_epoch":4294967296,"commit":true})");
  REQUIRE_FALSE(big);
  CHECK(big.message().find("producer_epoch") != std::string::npos);
  auto name = wire::read_init_request(R"({"transactional_id":""})");
  REQUIRE_FALSE(name);
  CHECK(name.message().find("transactional_id") != std::string::npos);
  CHECK_FALSE(wire::read_init_request(R"({"transactional_id":"t","timeout_ms":-1})"));
  CHECK_FALSE(wire::read_add_request(
      R"({"transactional_id":"t","producer_id":1,"producer_epoch":0,"partitions":[{"topic":"a b","partition":0}]})"));
  CHECK_FALSE(wire::read_offsets_call(
      R"({"transactional_id":"t","producer_id":1,"producer_epoch":0,"group":"g","offsets":[{"topic":"a","partition":0}]})"));
}

TEST_CASE("txn wire: an add's answer names the owners held, and an unreadable one is not believed", "[txn][wire]") {
  wire::add_answer held{{{{"orders", 0}, broker_id("b3")}}, true};
  auto a = wire::read_add_answer(wire::write(held));
  REQUIRE(a);
  CHECK(a->partitions.at({"orders", 0}) == broker_id("b3"));
  CHECK(a->keeps_epoch);
  CHECK(wire::read_add_answer("{}"));  // an older coordinator: says nothing
  // Owners that cannot be read are not believed; whether the session keeps its epoch still is.
  auto unreadable = wire::read_add_answer(R"({"partitions":"b3","keeps_epoch":true})");
  REQUIRE(unreadable);
  CHECK(unreadable->partitions.empty());
  CHECK(unreadable->keeps_epoch);
  CHECK_FALSE(wire::read_add_answer("not json"));
}

TEST_CASE("txn wire: the coordinator's calls to an owner round-trip, and a 421 names the owner", "[txn][wire]") {
  wire::owner_call marker{wire::owner_route::markers, {"orders", 3}, 9, 4, true};
  marker.coordinator_epoch = 2;
  marker.number = 5;
  auto m = wire::read_owner_call(wire::owner_route::markers, wire::write(marker));
  REQUIRE(m);
  CHECK(m->partition == topic_partition{"orders", 3});
  CHECK(m->producer_id == 9);
  CHECK(m->epoch == 4);
  CHECK(m->commit);
  CHECK(m->coordinator_epoch == 2);
  CHECK(m->number == 5);

  wire::owner_call offsets{wire::owner_route::commit_offsets, {"orders", 1}};
  offsets.group = "g";
  offsets.offset = 77;
  auto o = wire::read_owner_call(wire::owner_route::commit_offsets, wire::write(offsets));
  REQUIRE(o);
  CHECK(o->group == "g");
  CHECK(o->offset == 77);

  // A marker from a coordinator that predates its epoch and number reads as 0 for both.
  auto old = wire::read_owner_call(wire::owner_route::markers,
                                   R"({"topic":"t","partition":0,"producer_id":1,"producer_epoch":0,"commit":false})");
  REQUIRE(old);
  CHECK(old->coordinator_epoch == 0);
  CHECK(old->number == 0);
  // An enroll is not a marker: "commit" is a field it does not know.
  CHECK_FALSE(wire::read_owner_call(wire::owner_route::enroll,
                                    R"({"topic":"t","partition":0,"producer_id":1,"producer_epoch":0,"commit":true})"));
  CHECK_FALSE(wire::owner_route_named("abort"));
  CHECK(wire::owner_route_named("markers") == wire::owner_route::markers);

  CHECK(wire::read_not_owner(wire::write_not_owner(broker_id("b2"))) == broker_id("b2"));
  CHECK_FALSE(wire::read_not_owner(R"({"error":"not_owner","owner":""})"));
  CHECK_FALSE(wire::read_not_owner("{}"));
}

TEST_CASE("txn wire: a call's transactional id is read before the rest, for the 421 that sends it on",
          "[txn][wire]") {
  CHECK(wire::peek_transactional_id(R"({"transactional_id":"tx-9","producer_id":1,"unknown":true})") == "tx-9");
  CHECK_FALSE(wire::peek_transactional_id(R"({"transactional_id":7})"));
  CHECK_FALSE(wire::peek_transactional_id("[]"));
}
