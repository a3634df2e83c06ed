// The reclaim executor over the loopback network: a copy a move left behind is listed with its idle time, kept until
// it has been idle for the delay (time passed in), then deleted once its owner confirms it serves the partition; an
// operator's reclaim takes it at once; a peer that does not answer might be sending a copy, so nothing goes.
#include <catch2/catch.hpp>

#include <rapidjson/document.h>

#include "moonmq/cluster/reclaim_executor.hpp"
#include "support/in_process_cluster.hpp"

using namespace moonmq;
using namespace moonmq::test;

namespace {

rapidjson::Document parsed(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  return d;
}

}  // namespace

TEST_CASE("reclaim executor: a moved partition's copy goes once idle for the delay and confirmed by its owner",
          "[reclaim]") {
  in_process_cluster c(3, 4096);
  const topic_partition tp{"orders", 0};
  REQUIRE(c[1].store.ensure_topic("orders", 1));
  for (int i = 0; i < 10; ++i) REQUIRE(c.produce(1, tp, {rec(std::string(100, 'r'))}));
  REQUIRE(c.move(1, tp, 2));
  REQUIRE(*c[1].store.size_bytes(tp) > 0);  // the copy the move left on b1

  std::int64_t now_ms = 5'000'000;
  cluster::reclaim_options o;
  o.self = broker_id("b1");
  o.after_seconds = 60;
  o.peers = {"b2", "b3"};
  o.steady_ms = [&now_ms] { return now_ms; };
  cluster::reclaim_executor reclaim(o, c[1].state(), *c[1].journal, *c[1].reassigner, *c[1].peers);
  CHECK(reclaim.round_seconds() == 10.0);

  auto list = parsed(reclaim.list_document());
  REQUIRE(list["copies"].Size() == 1);
  CHECK(list["copies"][0]["eligible"].GetBool());
  CHECK(list["copies"][0]["idle_seconds"].GetDouble() == 0);
  CHECK(parsed(reclaim.reclaim(true))["reclaimed"].Empty());  // not idle long enough
  now_ms += 30'000;
  list = parsed(reclaim.list_document());
  CHECK(list["copies"][0]["idle_seconds"].GetDouble() == 30);
  CHECK(list["copies"][0]["reclaimed_in_seconds"].GetDouble() == 30);

  SECTION("a peer that does not answer might be sending one: nothing goes") {
    c.net.partition("b1", "b3");
    now_ms += 60'000;
    list = parsed(reclaim.list_document());
    CHECK_FALSE(list["copies"][0]["eligible"].GetBool());
    CHECK(list["copies"][0].HasMember("held_by"));
    CHECK(parsed(reclaim.reclaim(false))["reclaimed"].Empty());
    CHECK(*c[1].store.size_bytes(tp) > 0);
  }
  SECTION("idle past the delay: a round deletes it") {
    now_ms += 31'000;
    auto done = parsed(reclaim.reclaim(true));
    REQUIRE(done["reclaimed"].Size() == 1);
    CHECK(done["bytes"].GetUint64() > 0);
    CHECK(parsed(reclaim.list_document())["copies"].Empty());
    CHECK(cluster::serves(*c[2].ownership, tp, broker_id("b2")));
  }
  SECTION("an operator takes every eligible copy at once") {
    auto done = parsed(reclaim.reclaim(false));
    CHECK(done["reclaimed"].Size() == 1);
    CHECK(done["failed"].Empty());
  }
}
