// Consumer groups over an in-process cluster: three brokers on the loopback network, each with its group
// coordinator and /cluster/group/* routes, the real Reassigner moving partitions under them, and one clock the test
// advances. What the multi-process tests show with real daemons, here with faults placed exactly (a partitioned
// coordinator, lost clearance answers, a coordinator restart) and without waiting for wall-clock time.

#include <catch2/catch.hpp>

#include "groups/group_wire.hpp"
#include "json/writer.hpp"
#include "moonmq/cluster/local_loads.hpp"
#include "moonmq/groups/group_routes.hpp"
#include "support/group_placements.hpp"
#include "support/group_settling.hpp"
#include "support/in_process_cluster.hpp"

using namespace moonmq;
using namespace std::chrono_literals;


namespace {

struct group_cluster {
  test::in_process_cluster c;
  groups::time_ms now = 0;
  std::vector<broker_id> ids;
  std::vector<std::unique_ptr<storage::memory_keyed_log>> disks;
  std::vector<std::unique_ptr<groups::group_service>> services;
  std::vector<std::unique_ptr<groups::group_routes>> routes;

  explicit group_cluster(int n) : c(n) {
    for (int i = 1; i <= n; ++i) {
      ids.emplace_back(c[i].id);
      disks.push_back(std::make_unique<storage::memory_keyed_log>(c[i].id + "/group-state.log"));
    }
    services.resize(static_cast<std::size_t>(n));
    routes.resize(static_cast<std::size_t>(n));
    for (int i = 1; i <= n; ++i) start(i);
  }

  /// Starts (or restarts, from its disk) broker i's group coordinator and routes.
  void start(int i) {
    auto& b = c[i];
    b.groups = nullptr;
    auto svc = groups::group_service::open({ids[idx(i)], {1500, 100}}, *disks[idx(i)],
                                           test::placements_of(c), now);
    REQUIRE(svc);
    services[idx(i)] = std::move(*svc);
    routes[idx(i)] = std::make_unique<groups::group_routes>(*services[idx(i)], *b.peers, ids, [this] { return now; });
    b.groups = [r = routes[idx(i)].get()](const transport::request& req) { return r->handle_cluster(req); };
    b.group_service = services[idx(i)].get();
    b.group_routes = routes[idx(i)].get();
  }

  /// One tick of every broker's ticker: coordinators expire and follow owners, owners are asked for clearances.
  void round(groups::time_ms step = 100) {
    now += step;
    for (auto& s : services) s->tick(now);
    for (auto& r : routes) r->clear_pending();
  }

  int broker_of(const broker_id& id) const {
    return static_cast<int>(std::find(ids.begin(), ids.end(), id) - ids.begin()) + 1;
  }
  int coordinator(const std::string& group) { return broker_of(routes[0]->coordinator_of(group)); }
  static std::size_t idx(int i) { return static_cast<std::size_t>(i - 1); }
};

/// A consumer whose connection lives on broker `via`, speaking to the group through that broker's routes.
struct consumer {
  consumer(group_cluster& cluster, int broker) : g(cluster), via(broker) {}

  group_cluster& g;
  int via;
  std::string id;
  std::uint64_t epoch = 0;
  std::set<int> partitions;

  groups::group_routes& routes() { return *g.routes[group_cluster::idx(via)]; }

  /// Joins (again, with its id, when it has one); the HTTP status moonmqd's client API would answer.
  int join() { return take(routes().join({"g", id, g.ids[group_cluster::idx(via)], {"t"}})); }

  int beat() {
    groups::heartbeat_call c{"g", id, epoch, {}};
    for (int p : partitions) c.owned.push_back({"t", p});
    return take(routes().heartbeat(c));
  }

  /// Commits `offset` of t-p through broker `at`'s offsets front end (moonmqd's commit: the owner writes it to its
  /// offset store if the fence passes).
  status commit(int p, std::uint64_t offset, int at) {
    auto r = g.c[at].offsets_frontend().commit({"g", {"t", p}, offset, id, epoch});
    return r ? status{} : status{r.refused().err};
  }

  /// Only the coordinator's fence, asked through broker `at` (a no-op write): whether it admits this member.
  status fence_at(int p, int at) {
    return g.routes[group_cluster::idx(at)]->fenced_commit("g", id, epoch, {"t", p}, [] { return status{}; });
  }

 private:
  int take(const outcome<groups::member_answer>& a) {
    if (!a) return groups::wire::refusal_response(a.err(), "fenced_member").status;
    id = a->member_id;
    epoch = a->member_epoch;
    partitions.clear();
    for (const auto& tp : a->assignment) partitions.insert(tp.partition);
    return 200;
  }
};

/// Rounds until every one of `count` partitions is held by exactly one member and a round changes nothing.
void settle(group_cluster& g, const std::vector<consumer*>& members, std::size_t count) {
  for (int i = 0; i < 200; ++i) {
    g.round();
    if (test::settled_after_heartbeats(members, count)) return;
  }
  FAIL("the group did not settle");
}

/// Topic t with `n` partitions, created on broker 1 and moved so that partition p ends on broker `owners[p]`.
void place(group_cluster& g, const std::vector<int>& owners) {
  REQUIRE(g.c[1].store.ensure_topic("t", static_cast<std::int32_t>(owners.size())));
  for (std::size_t p = 0; p < owners.size(); ++p)  // a record in each, so that small commits are inside the log
    REQUIRE(g.c.produce(1, {"t", static_cast<std::int32_t>(p)}, {test::rec("first")}));
  for (std::size_t p = 0; p < owners.size(); ++p)
    if (owners[p] != 1) REQUIRE(g.c.move(1, {"t", static_cast<std::int32_t>(p)}, owners[p]));
}

}  // namespace

TEST_CASE("in-process groups: calls anywhere reach the coordinator, members get only what their broker owns, and "
          "commits are fenced at every broker",
          "[groups][integration]") {
  group_cluster g(3);
  place(g, {1, 1, 2, 2, 3, 3});
  consumer m1{g, 1}, m2{g, 1}, m3{g, 2}, m4{g, 2}, m5{g, 3}, m6{g, 3};
  std::vector<consumer*> members{&m1, &m2, &m3, &m4, &m5, &m6};
  for (auto* m : members) REQUIRE(m->join() == 200);
  settle(g, members, 6);
  const std::vector<int> owner{1, 1, 2, 2, 3, 3};
  for (auto* m : members) {
    REQUIRE(m->partitions.size() == 1);
    CHECK(owner[static_cast<std::size_t>(*m->partitions.begin())] == m->via);
  }
  // Calls through a broker that does not coordinate were forwarded (and only those).
  const int coordinator = g.coordinator("g");
  CHECK(g.c.net.delivered("/cluster/group/join") == 4);

  // The holder commits at the owner; anyone else is fenced, whichever broker the commit arrives at.
  const int p = *m3.partitions.begin();
  CHECK(m3.commit(p, 5, 2));
  CHECK(*g.c[2].offsets.committed("g", {"t", p}) == 5);
  for (int at = 1; at <= 3; ++at) {
    auto fenced = m4.fence_at(p, at);
    REQUIRE_FALSE(fenced);
    CHECK(fenced.code() == errc::conflict);
    // A commit is written only at the owner: elsewhere it is refused before the coordinator is asked.
    auto commit = m4.commit(p, 9, at);
    REQUIRE_FALSE(commit);
    CHECK(commit.code() == (at == 2 ? errc::conflict : errc::not_owner));
  }
  CHECK(*g.c[2].offsets.committed("g", {"t", p}) == 5);
  // An epoch the holder had before it held the partition is fenced too.
  consumer old = m3;
  old.epoch = 0;
  CHECK_FALSE(old.commit(p, 9, 2));

  // A broker cannot claim a member lives elsewhere: a forwarded join must name the forwarder.
  const int forwarder = coordinator == 1 ? 2 : 1;
  const int elsewhere = 6 - coordinator - forwarder;
  auto forged = g.routes[group_cluster::idx(forwarder)]->join({"g", "", g.ids[group_cluster::idx(elsewhere)], {"t"}});
  REQUIRE_FALSE(forged);
  CHECK(forged.code() == errc::invalid_argument);

  // A clearance or a commit check naming no valid topic is refused, not answered.
  for (const char* route : {"clear", "check"}) {
    transport::request bad;
    bad.method = "POST";
    bad.path = std::string("/cluster/group/") + route;
    bad.body = R"({"group":"g","member_id":"m","topic":"","partition":0})";
    CHECK(g.routes[0]->handle_cluster(bad).status == 400);
  }
}

TEST_CASE("in-process groups: an unreachable coordinator is 503 naming it, and nothing is committed meanwhile",
          "[groups][integration]") {
  group_cluster g(3);
  place(g, {1, 2, 3});
  const int coordinator = g.coordinator("g");
  const int other = coordinator == 1 ? 2 : 1;
  consumer m{g, other};
  REQUIRE(m.join() == 200);
  settle(g, {&m}, 1);
  REQUIRE(m.partitions.size() == 1);
  const int p = *m.partitions.begin();

  g.c.net.partition(g.c[other].id, g.c[coordinator].id);
  consumer late{g, other};
  auto refused = late.routes().join({"g", "", g.ids[group_cluster::idx(other)], {"t"}});
  REQUIRE_FALSE(refused);
  CHECK(refused.code() == errc::unavailable);
  CHECK_THAT(refused.message(), Catch::Contains(g.c[coordinator].id));
  CHECK(m.beat() == 503);
  // The owner cannot ask whether the member still holds the partition: no commit is written.
  auto s = m.commit(p, 3, other);
  REQUIRE_FALSE(s);
  CHECK(s.code() == errc::unavailable);
  CHECK_FALSE(g.c[other].offsets.committed("g", {"t", p}));

  g.c.net.heal();
  CHECK(m.beat() == 200);
  CHECK(m.commit(p, 3, other));
}

TEST_CASE("in-process groups: a moved partition goes to a member on its new owner with its committed offset, and "
          "its former holder is fenced",
          "[groups][integration]") {
  group_cluster g(2);
  place(g, {1, 1});
  std::vector<std::uint64_t> at;  // each record's offset (a byte position in the log)
  for (int i = 0; i < 10; ++i) {
    auto r = g.c.produce(1, {"t", 1}, {test::rec("r" + std::to_string(i))});
    REQUIRE(r);
    at.push_back(r->offsets.at(0));
  }
  const std::uint64_t end = *g.c[1].store.end_offset({"t", 1});
  consumer m1{g, 1}, m2{g, 2};
  REQUIRE(m1.join() == 200);
  REQUIRE(m2.join() == 200);
  settle(g, {&m1, &m2}, 2);
  REQUIRE(m1.partitions == std::set<int>{0, 1});  // b1 owns both
  REQUIRE(m1.commit(1, at[6], 1));

  REQUIRE(g.c.move(1, {"t", 1}, 2));
  settle(g, {&m1, &m2}, 2);
  CHECK(m1.partitions == std::set<int>{0});
  CHECK(m2.partitions == std::set<int>{1});
  // The committed offset travelled with the partition; m2 resumes from it and finds every record from there.
  REQUIRE(g.c[2].offsets.committed("g", {"t", 1}));
  CHECK(*g.c[2].offsets.committed("g", {"t", 1}) == at[6]);
  auto rest = g.c[2].store.read({"t", 1}, at[6], 1 << 20);
  INFO((rest ? std::string() : rest.message()));
  REQUIRE(rest);
  CHECK(rest->next_offset == end);  // records 6 to 9, all there
  CHECK(rest->end_offset == end);
  CHECK(m2.commit(1, end, 2));
  auto zombie = m1.commit(1, 7, 2);
  REQUIRE_FALSE(zombie);
  CHECK(zombie.code() == errc::conflict);
}

TEST_CASE("in-process groups: a partition changes holder only after its owner's clearance is heard, even when the "
          "answers are lost",
          "[groups][integration]") {
  group_cluster g(3);
  const int coordinator = g.coordinator("g");
  const int owner = coordinator == 1 ? 2 : 1;  // clearances cross the network
  std::vector<int> owners{owner, owner};
  REQUIRE(g.c[owner].store.ensure_topic("t", 2));
  consumer m1{g, owner};
  REQUIRE(m1.join() == 200);
  settle(g, {&m1}, 2);
  REQUIRE(m1.partitions.size() == 2);

  // Every clearance runs on the owner but its answer is lost.
  const auto cleared_before = g.c.net.delivered("/cluster/group/clear");
  g.c.net.set_hook([](const std::string&, const std::string&, const transport::request& r) {
    return r.path == "/cluster/group/clear" ? transport::fate::lose_response : transport::fate::deliver;
  });
  consumer m2{g, owner};
  REQUIRE(m2.join() == 200);
  for (int i = 0; i < 100; ++i) {  // 10 s of rounds: m1 lets one go, nobody is handed it
    g.round();
    REQUIRE(m1.beat() == 200);
    REQUIRE(m2.beat() == 200);
    CHECK(m1.partitions.size() + m2.partitions.size() <= 2);
    for (int p : m2.partitions) CHECK_FALSE(m1.partitions.count(p));
  }
  CHECK(m1.partitions.size() == 1);
  CHECK(m2.partitions.empty());
  const auto asked = g.c.net.delivered("/cluster/group/clear") - cleared_before;
  CHECK(asked >= 2);  // asked again...
  CHECK(asked <= 3);  // ...but only every clear_retry (5 s), not every round

  g.c.net.set_hook({});
  settle(g, {&m1, &m2}, 2);
  CHECK(m1.partitions.size() == 1);
  CHECK(m2.partitions.size() == 1);
}

TEST_CASE("in-process groups: a restarted coordinator keeps members, holdings and epochs, so stale commits stay "
          "fenced",
          "[groups][integration]") {
  group_cluster g(3);
  place(g, {1, 2, 3});
  consumer m1{g, 1}, m2{g, 2}, m3{g, 3};
  std::vector<consumer*> members{&m1, &m2, &m3};
  for (auto* m : members) REQUIRE(m->join() == 200);
  settle(g, members, 3);
  const int p = *m1.partitions.begin();
  consumer before_handed = m1, ahead = m1;
  before_handed.epoch = 0;       // before m1 was handed p
  ahead.epoch = m1.epoch + 1;  // an epoch the coordinator never gave
  const auto before = m1;

  const int coordinator = g.coordinator("g");
  const std::uint64_t epoch = g.services[group_cluster::idx(coordinator)]->describe("g")->epoch;
  g.start(coordinator);  // kill -9 and back: only group-state.log remains
  settle(g, members, 3);
  CHECK(m1.id == before.id);
  CHECK(m1.partitions == before.partitions);
  CHECK(g.services[group_cluster::idx(coordinator)]->describe("g")->epoch >= epoch);
  CHECK(m1.commit(p, 1, 1));  // its epoch is still the one the coordinator knows (had it restarted at 0: fenced)
  CHECK_FALSE(before_handed.commit(p, 2, 1));
  CHECK_FALSE(ahead.commit(p, 2, 1));
  CHECK(*g.c[1].offsets.committed("g", {"t", p}) == 1);
}
