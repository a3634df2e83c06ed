// raft::service's edge: what it refuses before a message reaches the node.
#include <catch2/catch.hpp>

#include <asio/io_context.hpp>
#include <asio/thread_pool.hpp>

#include "moonmq/raft/service.hpp"
#include "support/manual_runtime.hpp"
#include "moonmq/transport/loopback_transport.hpp"
#include "raft/message_json.hpp"

using namespace moonmq;

namespace {

struct nothing final : raft::state_machine {
  void apply(const raft::entry&) override {}
  void restore(const std::string&) override {}
  std::string snapshot() const override { return "{}"; }
};

}  // namespace

TEST_CASE("raft service: a message's sender must be the broker the request comes from, and a member",
          "[raft][auth]") {
  raft::memory_storage disk;
  nothing machine;
  transport::loopback_network net;
  auto link = net.transport_for("b1");
  transport::peer_client peers(*link, {broker_id("b1"), "secret", {}, std::chrono::milliseconds(100)});
  asio::io_context io;
  asio::thread_pool pool(1);
  null_logger log;
  raft::service_options o;
  o.self = "b1";
  o.peers = {"b2", "b3"};
  test::manual_runtime rt;
  o.rt = &rt;
  auto svc = raft::service::open(o, disk, machine, peers, io, pool, log);
  REQUIRE(svc);
  raft::message m;
  m.type = raft::message_type::append;
  m.from = "b3";
  m.to = "b1";
  m.term = 7;
  transport::request r;
  r.path = "/cluster/raft/append";
  r.body = raft::wire::encode(m);
  r.headers[transport::header_from] = "b2";  // b2's credentials, speaking as b3
  auto posing = (*svc)->handle(r);
  CHECK(posing.status == 401);
  CHECK_THAT(posing.body, Catch::Contains("from b3 sent as X-Cluster-From b2"));
  m.from = "b9";
  r.body = raft::wire::encode(m);
  r.headers[transport::header_from] = "b9";
  CHECK((*svc)->handle(r).status == 400);  // not a member
  m.from = "b2";
  r.body = raft::wire::encode(m);
  r.headers[transport::header_from] = "b2";
  CHECK((*svc)->handle(r).status == 204);
  (*svc)->stop();
  pool.join();
}
