// Kafka's classic protocol members in the group state machine: generations, the broker's assignment over every
// owner, revoke before assign with eager and cooperative members, moves that change nothing, fencing of older
// generations, per-member session timeouts, and members over HTTP beside them. Time is passed in.
#include <catch2/catch.hpp>

#include <random>

#include "moonmq/groups/group.hpp"
#include "moonmq/groups/group_service.hpp"
#include "moonmq/storage/state_file.hpp"
#include "support/group_spread.hpp"

using namespace moonmq;
using namespace moonmq::groups;
using moonmq::test::clear;
using moonmq::test::spread;

namespace {

const broker_id b1("b1"), b2("b2"), b3("b3");

/// No partition is handed to two members.
bool exclusive(const group& g) {
  std::set<topic_partition> seen;
  for (const auto& [id, m] : g.state().members)
    for (const auto& [tp, since] : m.handed)
      if (!seen.insert(tp).second) return false;
  return true;
}

/// An eager Kafka consumer: what it holds, and its generation.
struct eager {
  std::string id;
  std::uint64_t generation = 0;
  std::vector<topic_partition> held;
};

eager join(group& g, const std::string& id, time_ms now, std::set<std::string> topics = {"t"}) {
  auto j = g.join_classic({id, b1, std::move(topics), 0, false, {}}, now);
  auto s = g.sync_classic(j.member_id, j.generation, now);
  REQUIRE(s);
  return {j.member_id, j.generation, s->assignment};
}

/// One heartbeat round of an eager consumer: told to rejoin, it gives up everything, joins and syncs.
void round(group& g, eager& c, time_ms now) {
  auto h = g.heartbeat_classic(c.id, c.generation, now);
  REQUIRE(h);
  if (!h->rejoin) return;
  c = join(g, c.id, now, g.state().members.at(c.id).topics);
}

std::size_t total_held(const std::vector<eager*>& all) {
  std::size_t n = 0;
  for (const auto* c : all) n += c->held.size();
  return n;
}

}  // namespace

TEST_CASE("groups classic: the broker assigns every partition of every owner, evenly, one holder each", "[groups]") {
  group g("g", {});
  g.set_placement(spread("t", 6, {b1, b2, b3}));
  auto a = join(g, "a", 0);
  clear(g);
  a = join(g, "a", 0);
  CHECK(a.held.size() == 6);  // one member fetching anywhere takes partitions of all three owners
  auto b = join(g, "b", 1);
  auto c = join(g, "c", 1);
  std::vector<eager*> all{&a, &b, &c};
  for (time_ms t = 2; t < 20; ++t) {
    for (auto* m : all) round(g, *m, t);
    clear(g);
    REQUIRE(exclusive(g));
  }
  for (auto* m : all) CHECK(m->held.size() == 2);
  CHECK(total_held(all) == 6);
}

TEST_CASE("groups classic: a rejoining eager member takes its own partitions back at once, others wait for the "
          "owner's clearance",
          "[groups]") {
  group g("g", {});
  g.set_placement(spread("t", 4, {b1, b2}));
  auto a = join(g, "a", 0);
  clear(g);
  a = join(g, "a", 0);
  REQUIRE(a.held.size() == 4);
  const auto before = a.generation;
  a = join(g, "a", 1);  // a rejoin: nothing cleared in between
  CHECK(a.held.size() == 4);
  CHECK(a.generation == before + 1);
  auto b = join(g, "b", 2);
  CHECK(b.held.empty());  // what b is to get is still a's
  round(g, a, 3);         // a is told to rejoin and gives up b's share
  CHECK(a.held.size() == 2);
  auto h = g.heartbeat_classic(b.id, b.generation, 3);
  REQUIRE(h);
  CHECK_FALSE(h->rejoin);  // freed, but not cleared by the owners yet
  clear(g);
  round(g, b, 4);
  CHECK(b.held.size() == 2);
  CHECK(exclusive(g));
}

TEST_CASE("groups classic: older generations are fenced: sync, heartbeat and commits", "[groups]") {
  group g("g", {});
  g.set_placement(spread("t", 2, {b1}));
  auto a = join(g, "a", 0);
  clear(g);
  a = join(g, "a", 0);
  const topic_partition t0{"t", 0};
  CHECK(g.check_commit("a", a.generation, t0));
  const auto old = a.generation;
  a = join(g, "a", 1);
  CHECK(g.check_commit("a", a.generation, t0));
  CHECK(g.check_commit("a", old, t0).code() == errc::conflict);
  CHECK(g.heartbeat_classic("a", old, 1).code() == errc::conflict);
  CHECK(g.sync_classic("a", old, 1).code() == errc::conflict);
  CHECK(g.heartbeat_classic("nobody", 1, 1).code() == errc::not_found);
  REQUIRE(g.leave("a"));
  CHECK(g.check_commit("a", a.generation, t0).code() == errc::conflict);
}

TEST_CASE("groups classic: a partition move changes nothing for members that fetch anywhere", "[groups]") {
  group g("g", {});
  g.set_placement(spread("t", 4, {b1, b2}));
  auto a = join(g, "a", 0);
  auto b = join(g, "b", 0);
  std::vector<eager*> all{&a, &b};
  for (time_ms t = 1; t < 10; ++t) {
    for (auto* m : all) round(g, *m, t);
    clear(g);
  }
  REQUIRE(total_held(all) == 4);
  const auto epoch = g.state().epoch;
  const auto target = g.state().target;
  g.set_placement(spread("t", 4, {b2, b3}));  // every partition moved
  CHECK(g.state().epoch == epoch);
  CHECK(g.state().target == target);
  for (auto* m : all) {
    auto h = g.heartbeat_classic(m->id, m->generation, 11);
    REQUIRE(h);
    CHECK_FALSE(h->rejoin);
  }
}

TEST_CASE("groups classic: a cooperative member keeps what it holds across a join and gives up only what it lost, "
          "after reporting it",
          "[groups]") {
  group g("g", {});
  g.set_placement(spread("t", 4, {b1}));
  auto j = g.join_classic({"a", b1, {"t"}, 0, true, {}}, 0);
  clear(g);
  j = g.join_classic({"a", b1, {"t"}, 0, true, {}}, 0);
  auto s = g.sync_classic("a", j.generation, 0);
  REQUIRE(s);
  REQUIRE(s->assignment.size() == 4);
  const std::vector<topic_partition> held = s->assignment;
  j = g.join_classic({"a", b1, {"t"}, 0, true, held}, 1);  // a cooperative rejoin keeps its partitions
  s = g.sync_classic("a", j.generation, 1);
  REQUIRE(s);
  CHECK(s->assignment.size() == 4);
  // b joins: a is told to rejoin, and its next assignment lacks b's share, which stays a's until a reports it gone.
  auto jb = g.join_classic({"b", b1, {"t"}, 0, true, {}}, 2);
  CHECK(g.heartbeat_classic("a", j.generation, 2)->rejoin);
  j = g.join_classic({"a", b1, {"t"}, 0, true, held}, 3);
  s = g.sync_classic("a", j.generation, 3);
  REQUIRE(s);
  CHECK(s->assignment.size() == 2);
  clear(g);
  auto sb = g.sync_classic("b", jb.generation, 3);
  REQUIRE(sb);
  CHECK(sb->assignment.empty());  // a still holds them
  j = g.join_classic({"a", b1, {"t"}, 0, true, s->assignment}, 4);  // a reports what it kept
  clear(g);
  CHECK(g.heartbeat_classic("b", jb.generation, 4)->rejoin);
  jb = g.join_classic({"b", b1, {"t"}, 0, true, {}}, 5);
  sb = g.sync_classic("b", jb.generation, 5);
  REQUIRE(sb);
  CHECK(sb->assignment.size() == 2);
  CHECK(exclusive(g));
}

TEST_CASE("groups classic: each member's own session timeout decides when it is removed", "[groups]") {
  group g("g", {1000, 100});
  g.set_placement(spread("t", 2, {b1}));
  g.join_classic({"short", b1, {"t"}, 0, false, {}}, 0);
  g.join_classic({"long", b1, {"t"}, 30'000, false, {}}, 0);
  CHECK(g.expire(1500) == std::vector<std::string>{"short"});
  CHECK(g.expire(29'000).empty());
  CHECK(g.expire(30'001) == std::vector<std::string>{"long"});
}

TEST_CASE("groups classic: beside a member over HTTP, which takes only its broker's partitions, nothing is held "
          "twice",
          "[groups]") {
  group g("g", {});
  g.set_placement(spread("t", 6, {b1, b2, b3}));
  auto h = g.join("http", b1, {"t"}, 0);
  auto k = join(g, "kafka", 0);
  std::vector<eager*> kafka{&k};
  for (time_ms t = 1; t < 20; ++t) {
    clear(g);
    auto beat = g.heartbeat(h.member_id, h.member_epoch, h.assignment, t);
    REQUIRE(beat);
    h = *beat;
    round(g, k, t);
    REQUIRE(exclusive(g));
  }
  for (const auto& tp : h.assignment) CHECK(tp.partition % 3 == 0);  // b1's partitions only
  CHECK(h.assignment.size() + k.held.size() == 6);
}

TEST_CASE("groups classic: many eager members joining, leaving and crashing in random order never share a partition",
          "[groups]") {
  std::mt19937 rng(7);
  group g("g", {5000, 500});
  g.set_placement(spread("t", 12, {b1, b2, b3}));
  std::map<std::string, eager> members;
  int next = 0;
  for (time_ms t = 0; t < 400; ++t) {
    const int what = static_cast<int>(rng() % 10);
    if (what == 0 || members.empty()) {
      const std::string id = "m" + std::to_string(next++);
      members[id] = join(g, id, t);
    } else if (what == 1) {
      auto it = std::next(members.begin(), static_cast<long>(rng() % members.size()));
      REQUIRE(g.leave(it->first));
      members.erase(it);
    } else {
      for (auto& [id, c] : members) round(g, c, t);
    }
    if (rng() % 2) clear(g);
    REQUIRE(exclusive(g));
  }
  for (time_ms t = 400; t < 420; ++t) {
    for (auto& [id, c] : members) round(g, c, t);
    clear(g);
  }
  std::size_t held = 0;
  for (const auto& [id, c] : members) held += c.held.size();
  CHECK(held == 12);  // settled: everything held again
}

TEST_CASE("groups classic: a classic member survives a restart of the coordinator with its generation", "[groups]") {
  storage::memory_keyed_log disk("group-state.log");
  auto place = [](const std::set<std::string>&) -> std::optional<std::vector<placement>> { return spread("t", 2, {b1}); };
  auto svc = group_service::open({b1, {}}, disk, place, 0);
  REQUIRE(svc);
  auto j = (*svc)->join_classic("g", {"", b1, {"t"}, 20'000, false, {}}, 0);
  REQUIRE(j);
  svc = group_service::open({b1, {}}, disk, place, 0);
  REQUIRE(svc);
  CHECK((*svc)->heartbeat_classic("g", j->member_id, j->generation, 15'000));  // past the group's 10 s default
  (*svc)->tick(15'000);
  CHECK((*svc)->describe("g")->members.size() == 1);
  CHECK((*svc)->describe("g")->members.front().classic);
}

TEST_CASE("groups classic: a partition no broker reports during a move's handover stays with its member, for the "
          "session timeout at most",
          "[groups]") {
  group g("g", {10'000, 1000});
  g.set_placement(spread("t", 2, {b1}), 0);
  auto a = join(g, "a", 0);
  clear(g);
  a = join(g, "a", 0);
  REQUIRE(a.held.size() == 2);
  const auto epoch = g.state().epoch;
  g.set_placement({{{"t", 0}, b1}}, 100);  // t-1 is in handover: nobody reports it
  CHECK(g.state().epoch == epoch);
  CHECK_FALSE(g.heartbeat_classic("a", a.generation, 100)->rejoin);
  g.set_placement({{{"t", 0}, b1}, {{"t", 1}, b2}}, 900);  // it comes back at its new owner
  CHECK(g.state().epoch == epoch);
  g.set_placement({{{"t", 0}, b1}}, 1000);  // gone for longer than the session timeout: the topic lost it
  g.set_placement({{{"t", 0}, b1}}, 12'000);
  CHECK(g.state().epoch > epoch);
  CHECK(g.heartbeat_classic("a", a.generation, 12'000)->rejoin);
}

TEST_CASE("groups classic: an eager member takes back without a clearance only what nobody else was handed since, "
          "and an owner's answer older than a handover clears nothing",
          "[groups]") {
  group g("g", {});
  g.set_placement(spread("t", 2, {b1}));
  auto a = join(g, "a", 0);
  clear(g);
  a = join(g, "a", 0);
  REQUIRE(a.held.size() == 2);
  // a joins again (it gave up both, and may take them back), but before its SyncGroup b joins, is handed one of
  // them, and leaves.
  auto ja = g.join_classic({"a", b1, {"t"}, 0, false, {}}, 1);
  auto jb = g.join_classic({"b", b1, {"t"}, 0, false, {}}, 1);
  clear(g);
  auto sb = g.sync_classic("b", jb.generation, 1);
  REQUIRE(sb);
  REQUIRE(sb->assignment.size() == 1);
  const topic_partition bs = sb->assignment.front();
  REQUIRE(g.leave("b"));
  auto sa = g.sync_classic("a", ja.generation, 2);
  REQUIRE(sa);
  CHECK(sa->assignment.size() == 1);  // its own other partition; b's must be cleared first (b may have committed)
  CHECK(std::find(sa->assignment.begin(), sa->assignment.end(), bs) == sa->assignment.end());

  // The owner is asked to clear b's partition; before its answer, a is handed it (cleared by an earlier answer) and
  // gives it up again by joining: the answer in flight is older than that, and clears nothing.
  const auto asked = g.handovers(bs);
  clear(g);
  REQUIRE(g.heartbeat_classic("a", ja.generation, 3)->rejoin);
  ja = g.join_classic({"a", b1, {"t"}, 0, false, {}}, 3);
  sa = g.sync_classic("a", ja.generation, 3);
  REQUIRE(sa);
  REQUIRE(sa->assignment.size() == 2);
  ja = g.join_classic({"a", b1, {"t"}, 0, false, {}}, 4);  // gives both up again
  g.cleared_by_owner(bs, asked);
  CHECK(g.state().cleared.count(bs) == 0);
  g.cleared_by_owner(bs, g.handovers(bs));  // a fresh answer does
  CHECK(g.state().cleared.count(bs) == 1);
}
