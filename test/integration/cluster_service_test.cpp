// The inter-broker routes' rules: authentication, fencing, bad input, and forwarding limits.
#include <catch2/catch.hpp>

#include "support/in_process_cluster.hpp"

using namespace moonmq;
using namespace moonmq::test;
using transport::request;

namespace {

request make(const std::string& method, const std::string& path, std::string body = "",
             std::map<std::string, std::string> params = {}) {
  request r;
  r.method = method;
  r.path = path;
  r.body = std::move(body);
  r.params = std::move(params);
  r.headers[transport::header_token] = "secret";
  return r;
}

/// The state of one broker b1 in memory, for a cluster_service built by hand.
struct standalone_state {
  storage::memory_partition_store store;
  storage::memory_offset_store offsets;
  std::unique_ptr<cluster::ownership_table> table = std::move(
      *cluster::open_local_ownership_table(broker_id("b1"), std::make_unique<storage::memory_state_file>()));
  std::unique_ptr<cluster::controller_fence> fence = std::move(
      *cluster::open_file_controller_fence(broker_id("b1"), std::make_unique<storage::memory_state_file>()));
  cluster::traffic counters;
  cluster::partition_gates gates;
  cluster::producer_states producers{store};
  null_logger log;
  cluster::cluster_state state() { return {store, offsets, *table, *fence, counters, gates, producers, log}; }
};

}  // namespace

TEST_CASE("service: a missing or wrong token is 401 and nothing is done", "[service][auth]") {
  in_process_cluster c(1);
  auto r = make("POST", "/cluster/ensure", R"({"topic":"t","partitions":1})");
  r.headers.erase(transport::header_token);
  CHECK(c[1].service->handle(r).status == 401);
  r.headers[transport::header_token] = "secreT";
  CHECK(c[1].service->handle(r).status == 401);
  r.headers[transport::header_token] = "secret-but-longer";
  CHECK(c[1].service->handle(r).status == 401);
  CHECK_FALSE(c[1].store.partition_count("t"));
  r.headers[transport::header_token] = "secret";
  CHECK(c[1].service->handle(r).status == 200);
}

TEST_CASE("service: a peer's own token overrides the cluster token", "[service][auth]") {
  standalone_state b;
  cluster::cluster_service svc({broker_id("b1"), "cluster-secret", {{"b2", "b2-secret"}}, 1 << 20, {}, {}}, b.state());
  auto r = make("GET", "/cluster/loads");
  r.headers[transport::header_from] = "b2";
  r.headers[transport::header_token] = "cluster-secret";
  CHECK(svc.handle(r).status == 401);
  r.headers[transport::header_token] = "b2-secret";
  CHECK(svc.handle(r).status == 200);
  r.headers[transport::header_from] = "b3";  // no override: the cluster token
  CHECK(svc.handle(r).status == 401);
  r.headers[transport::header_token] = "cluster-secret";
  CHECK(svc.handle(r).status == 200);
}

TEST_CASE("service: a request's identity must hold together: a known peer, per-peer tokens need a sender, and under "
          "mutual TLS the certificate names the sender",
          "[service][auth]") {
  standalone_state b;
  cluster::cluster_state st = b.state();
  SECTION("with only per-peer tokens, a request that names no sender is refused") {
    cluster::cluster_service svc({broker_id("b1"), "", {{"b2", "b2-secret"}}, 1 << 20, {}, {}, {"b2", "b3"}}, st);
    auto r = make("GET", "/cluster/loads");
    r.headers.erase(transport::header_token);
    CHECK(svc.handle(r).status == 401);  // it used to be compared with the empty cluster token, and pass
    r.headers[transport::header_from] = "b2";
    r.headers[transport::header_token] = "b2-secret";
    CHECK(svc.handle(r).status == 200);
    r.headers[transport::header_from] = "b3";  // a peer without a token of its own, and no cluster token
    CHECK(svc.handle(r).status == 401);
  }
  SECTION("a sender that is not a peer, or none, is refused, whatever token it has") {
    cluster::cluster_service svc({broker_id("b1"), "secret", {}, 1 << 20, {}, {}, {"b2", "b3"}}, st);
    auto r = make("GET", "/cluster/loads");
    CHECK(svc.handle(r).status == 401);  // the shared token alone does not say which peer this is
    r.headers[transport::header_from] = "b9";
    CHECK(svc.handle(r).status == 401);
    r.headers[transport::header_from] = "b2";
    CHECK(svc.handle(r).status == 200);
  }
  SECTION("under mutual TLS, the certificate must name the sender") {
    cluster::cluster_service svc({broker_id("b1"), "secret", {}, 1 << 20, {}, {}, {"b2", "b3"}, true}, st);
    auto r = make("GET", "/cluster/loads");
    r.headers[transport::header_from] = "b2";
    r.peer_names = {"localhost", "b2"};
    CHECK(svc.handle(r).status == 200);
    r.headers[transport::header_from] = "b3";  // b2's certificate, claiming to be b3
    CHECK(svc.handle(r).status == 401);
    r.headers.erase(transport::header_from);
    CHECK(svc.handle(r).status == 401);
  }
}

TEST_CASE("service: a controller epoch above the highest there may be is refused, never persisted", "[service][fence]") {
  in_process_cluster c(1);
  auto r = make("POST", "/cluster/ensure", R"({"topic":"t","partitions":1})");
  r.headers[transport::header_epoch] = "18446744073709551615";
  r.headers[transport::header_controller] = "b9";
  CHECK(c[1].service->handle(r).status == 400);
  CHECK(c[1].fence->highest().claim_epoch == epoch(0));
  auto claim = make("POST", "/cluster/controller/claim", R"({"epoch":18446744073709551615,"controller":"b9"})");
  CHECK(c[1].service->handle(claim).status == 400);
  CHECK(c[1].fence->highest().claim_epoch == epoch(0));
}

TEST_CASE("service: control-plane routes refuse a superseded controller with 409 and data-plane routes never check",
          "[service][fence]") {
  in_process_cluster c(1);
  REQUIRE(c[1].fence->check({epoch(4), broker_id("b2")}));
  auto ensure = make("POST", "/cluster/ensure", R"({"topic":"t","partitions":1})");
  ensure.headers[transport::header_epoch] = "3";
  ensure.headers[transport::header_controller] = "b1";
  auto r = c[1].service->handle(ensure);
  CHECK(r.status == 409);
  CHECK_THAT(r.body, Catch::Contains("stale_epoch"));
  CHECK_FALSE(c[1].store.partition_count("t"));  // refused before acting
  ensure.headers.erase(transport::header_epoch);
  CHECK(c[1].service->handle(ensure).status == 400);  // half a claim
  ensure.headers.erase(transport::header_controller);
  CHECK(c[1].service->handle(ensure).status == 200);  // no claim at all: hand-driven, bypasses the fence

  auto owner = make("POST", "/cluster/owner", R"({"topic":"t","partition":0,"broker":"b9"})");
  owner.headers[transport::header_epoch] = "2";
  owner.headers[transport::header_controller] = "b2";
  CHECK(c[1].service->handle(owner).status == 409);
  CHECK_FALSE(c[1].ownership->owner({"t", 0}).has_value());

  auto produce = make("POST", "/cluster/append", storage::encode_frame(rec("x")),
                      {{"topic", "t"}, {"partition", "0"}, {"mode", "produce"}});
  produce.headers[transport::header_epoch] = "1";
  produce.headers[transport::header_controller] = "b1";
  CHECK(c[1].service->handle(produce).status == 200);

  auto claim = make("POST", "/cluster/controller/claim", R"({"epoch":3,"controller":"b7"})");
  CHECK(c[1].service->handle(claim).status == 409);
  claim.body = R"({"epoch":5,"controller":"b7"})";
  CHECK(c[1].service->handle(claim).status == 200);
  CHECK(c[1].fence->highest().claim_epoch == epoch(5));
}

TEST_CASE("service: bad input is a 4xx with a JSON error, and nothing is half-applied", "[service][input]") {
  in_process_cluster c(1);
  REQUIRE(c[1].store.ensure_topic("t", 1));
  auto check = [&](request r, int status, const std::string& fragment) {
    auto resp = c[1].service->handle(r);
    CHECK(resp.status == status);
    CHECK_THAT(resp.body, Catch::Contains(fragment));
    CHECK_THAT(resp.body, Catch::StartsWith("{\"error\":"));
  };
  check(make("POST", "/cluster/ensure", "{not json"), 400, "not valid JSON");
  check(make("POST", "/cluster/ensure", R"({"topic":"t"})"), 400, "partitions: is required");
  check(make("POST", "/cluster/ensure", R"({"topic":"t","partitions":1,"extra":true})"), 400, "extra: unknown key");
  check(make("POST", "/cluster/ensure", R"({"topic":"a/b","partitions":1})"), 400, "outside [A-Za-z0-9._-]");
  check(make("POST", "/cluster/append", "junk", {{"topic", "t"}, {"partition", "0"}, {"expected_offset", "0"}}), 400,
        "not whole valid frames");
  check(make("POST", "/cluster/append", "", {{"topic", "t"}, {"partition", "x"}, {"expected_offset", "0"}}), 400,
        "partition: expected a whole number");
  check(make("POST", "/cluster/offsets",
             R"({"topic":"t","partition":0,"offsets":[{"group":"g","offset":5},{"group":"","offset":1}]})"),
        400, "offsets[1]");
  CHECK_FALSE(c[1].offsets.committed("g", {"t", 0}).has_value());  // the good entry was not applied either
  check(make("GET", "/cluster/nowhere"), 404, "not a cluster route");
  check(make("POST", "/cluster/group/join", "{}"), 501, "not available yet");
  check(make("POST", "/cluster/raft/vote", "{}"), 501, "not available yet");
  check(make("POST", "/cluster/ensure", std::string(70u << 20, ' ')), 413, "exceeds");
}

TEST_CASE("service: a migration batch at the wrong offset is 412 with the real end offset", "[service][append]") {
  in_process_cluster c(1);
  REQUIRE(c[1].store.ensure_topic("t", 1));
  std::string frames = storage::encode_frame(rec("a"));
  auto r = make("POST", "/cluster/append", frames, {{"topic", "t"}, {"partition", "0"}, {"expected_offset", "0"}});
  CHECK(c[1].service->handle(r).status == 200);
  auto again = c[1].service->handle(r);
  CHECK(again.status == 412);
  CHECK_THAT(again.body, Catch::Contains("\"end_offset\":" + std::to_string(frames.size())));
}

TEST_CASE("service: loads report served partitions with their counters", "[service][loads]") {
  in_process_cluster c(2);
  REQUIRE(c[1].store.ensure_topic("t", 2));
  REQUIRE(c.produce(1, {"t", 0}, {rec("hello")}));
  REQUIRE(test::set_owner(*c[1].ownership, {"t", 1}, broker_id("b2")));
  auto resp = c[1].service->handle(make("GET", "/cluster/loads"));
  REQUIRE(resp.status == 200);
  CHECK_THAT(resp.body, Catch::Contains("\"partition\":0"));
  CHECK_THAT(resp.body, Catch::Contains("\"produced_bytes\":" + std::to_string(storage::frame_size(rec("hello")))));
  CHECK(resp.body.find("\"partition\":1") == std::string::npos);
}

TEST_CASE("router: a forwarded produce is never forwarded again, and a chain of owners ends in an error", "[router]") {
  in_process_cluster c(4);
  for (int i = 1; i <= 4; ++i) REQUIRE(c[i].store.ensure_topic("t", 1));
  topic_partition tp{"t", 0};
  REQUIRE(test::set_owner(*c[1].ownership, tp, broker_id("b2")));
  REQUIRE(test::set_owner(*c[2].ownership, tp, broker_id("b3")));
  SECTION("one hint is followed") {
    auto r = c.produce(1, tp, {rec("v")});
    REQUIRE(r);
    CHECK(r->broker == broker_id("b3"));
    CHECK(*c[2].store.end_offset(tp) == 0);
  }
  SECTION("a chain longer than two hops stops") {
    REQUIRE(test::set_owner(*c[3].ownership, tp, broker_id("b4")));
    REQUIRE(test::set_owner(*c[4].ownership, tp, broker_id("b1")));
    auto r = c.produce(1, tp, {rec("v")});
    REQUIRE_FALSE(r);
    CHECK(r.code() == errc::not_owner);
    CHECK_THAT(r.message(), Catch::Contains("chain"));
    for (int i = 1; i <= 4; ++i) CHECK(*c[i].store.end_offset(tp) == 0);
  }
  SECTION("an owner that does not know the topic yet answers a retriable error, not an internal one") {
    // Found by torture with topics created beside the traffic: under Raft the owner had not yet applied the create.
    REQUIRE(c[3].store.remove_topic("t"));
    auto r = c.produce(1, tp, {rec("v")});
    REQUIRE_FALSE(r);
    CHECK(r.code() == errc::unavailable);
    CHECK_THAT(r.message(), Catch::Contains("b3") && Catch::Contains("try again"));
  }
  SECTION("an unreachable owner is an error naming it") {
    c.net.partition("b1", "b2");
    auto r = c.produce(1, tp, {rec("v")});
    REQUIRE_FALSE(r);
    CHECK(r.code() == errc::unavailable);
    CHECK_THAT(r.message(), Catch::Contains("b2"));
  }
}

TEST_CASE("service: a broker named the owner of a partition it has no log of refuses the entry and does not say it "
          "serves it",
          "[service][topics]") {
  // A move's confirm that arrives after its topic's delete removed the logs here (a move that outlived its topic).
  in_process_cluster c(2);
  auto confirm = make("POST", "/cluster/owner", R"({"topic":"gone","partition":0,"broker":"b1","version":1})");
  auto refused = c[1].service->handle(confirm);
  CHECK(refused.status == 404);
  CHECK_THAT(refused.body, Catch::Contains("no log of gone-0"));
  CHECK_FALSE(c[1].ownership->entry({"gone", 0}));
  auto ask = make("GET", "/cluster/owner");
  ask.params = {{"topic", "gone"}, {"partition", "0"}};
  auto asked = c[1].service->handle(ask);
  REQUIRE(asked.status == 200);
  CHECK_THAT(asked.body, Catch::Contains("\"serves\":false"));
  // With the log, the same confirm is recorded.
  REQUIRE(c[1].store.ensure_topic("gone", 1));
  CHECK(c[1].service->handle(confirm).status == 200);
  CHECK(c[1].ownership->entry({"gone", 0})->owner == broker_id("b1"));
}
