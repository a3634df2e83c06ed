// The consumer group state machine: membership, ownership-aware balanced and sticky assignment, revoke before
// assign, session timeouts, epochs and fenced commits; time is passed in, nothing runs on a thread.
#include <catch2/catch.hpp>

#include <random>

#include "moonmq/groups/group.hpp"
#include "support/group_spread.hpp"

using namespace moonmq;
using namespace moonmq::groups;
using moonmq::test::clear;
using moonmq::test::spread;

namespace {

const broker_id b1("b1"), b2("b2"), b3("b3");

std::set<topic_partition> as_set(const std::vector<topic_partition>& v) { return {v.begin(), v.end()}; }

/// No partition is handed to two members.
void check_exclusive(const group& g) {
  std::map<topic_partition, std::string> seen;
  for (const auto& [id, m] : g.state().members)
    for (const auto& [tp, since] : m.handed) {
      auto other = seen.find(tp);
      INFO(tp.topic << "-" << tp.partition << " handed to " << id << " and "
                    << (other == seen.end() ? std::string("nobody") : other->second));
      CHECK(other == seen.end());
      seen[tp] = id;
    }
}

/// A member that heartbeats reporting exactly what it was handed (a well-behaved consumer); owners clear first.
member_answer beat(group& g, const member_answer& last, time_ms now) {
  clear(g);
  auto a = g.heartbeat(last.member_id, last.member_epoch, last.assignment, now);
  REQUIRE(a);
  return *a;
}

}  // namespace

TEST_CASE("groups: partitions are shared evenly among the members on their owner, and only those", "[groups]") {
  group g("g", {});
  g.set_placement(spread("orders", 6, {b1, b2, b3}));  // b1: 0,3  b2: 1,4  b3: 2,5
  auto a = g.join("m-a", b1, {"orders"}, 0);
  auto b = g.join("m-b", b1, {"orders"}, 0);
  auto c = g.join("m-c", b2, {"orders"}, 0);
  for (time_ms t = 1; t <= 3; ++t) {  // a gives up what went to b, then b gets it
    a = beat(g, a, t);
    b = beat(g, b, t);
    c = beat(g, c, t);
  }
  CHECK(a.assignment.size() == 1);
  CHECK(b.assignment.size() == 1);
  CHECK(as_set(c.assignment) == std::set<topic_partition>{{"orders", 1}, {"orders", 4}});
  for (const auto& tp : a.assignment) CHECK(tp.partition % 3 == 0);  // only b1's partitions
  // b3's partitions have no member connected to b3: unassigned, and saying why.
  REQUIRE(g.unassigned_partitions().size() == 2);
  CHECK(g.unassigned_partitions()[0].owner == b3);
  CHECK_THAT(g.unassigned_partitions()[0].reason, Catch::Contains("no member connected to b3"));
  check_exclusive(g);
}

TEST_CASE("groups: a partition changes member only after its holder no longer holds it", "[groups]") {
  group g("g", {});
  g.set_placement(spread("t", 4, {b1}));
  auto a = beat(g, g.join("m-a", b1, {"t"}, 0), 0);
  REQUIRE(a.assignment.size() == 4);
  const auto epoch_before = g.state().epoch;
  auto b = g.join("m-b", b1, {"t"}, 1);
  CHECK(g.state().epoch > epoch_before);  // the target changed
  CHECK(b.assignment.empty());            // a still holds everything: nothing is handed to b yet
  check_exclusive(g);
  // a's heartbeat: two of its partitions are revoked from what it is handed; it still reports holding all four.
  auto a2 = g.heartbeat(a.member_id, a.member_epoch, a.assignment, 2);
  REQUIRE(a2);
  CHECK(a2->assignment.size() == 2);
  CHECK(a2->member_epoch > a.member_epoch);
  b = beat(g, b, 3);
  CHECK(b.assignment.empty());  // still reported held by a
  check_exclusive(g);
  // a reports it let them go; now b gets them.
  a = beat(g, *a2, 4);
  b = beat(g, b, 5);
  CHECK(b.assignment.size() == 2);
  for (const auto& tp : a.assignment) CHECK(as_set(b.assignment).count(tp) == 0);
  check_exclusive(g);
}

TEST_CASE("groups: a member silent for the session timeout is removed and its partitions go to the others",
          "[groups]") {
  group g("g", {5000, 1000});
  g.set_placement(spread("t", 4, {b1}));
  auto a = g.join("m-a", b1, {"t"}, 0);
  auto b = g.join("m-b", b1, {"t"}, 0);
  a = beat(g, a, 100);
  b = beat(g, b, 100);
  a = beat(g, a, 200);
  REQUIRE(a.assignment.size() == 2);
  CHECK(g.expire(5000).empty());
  // b keeps heartbeating, a falls silent.
  for (time_ms t = 1000; t <= 6000; t += 1000) b = beat(g, b, t);
  auto gone = g.expire(6000);
  CHECK(gone == std::vector<std::string>{"m-a"});
  b = beat(g, b, 6100);
  CHECK(b.assignment.size() == 4);
  // The removed member is a zombie now: its heartbeat and its commits are refused.
  CHECK(g.heartbeat("m-a", a.member_epoch, a.assignment, 6200).code() == errc::not_found);
  CHECK(g.check_commit("m-a", a.member_epoch, a.assignment[0]).code() == errc::conflict);
}

TEST_CASE("groups: assignment is sticky: a new member takes only its share, from the fullest", "[groups]") {
  group g("g", {});
  g.set_placement(spread("t", 6, {b1}));
  auto a = g.join("m-a", b1, {"t"}, 0);
  auto b = g.join("m-b", b1, {"t"}, 0);
  for (int i = 0; i < 3; ++i) {
    a = beat(g, a, i);
    b = beat(g, b, i);
  }
  const auto before = g.state().target;
  g.join("m-c", b1, {"t"}, 10);
  std::size_t moved = 0;
  for (const auto& [tp, holder] : g.state().target) moved += before.at(tp) != holder ? 1 : 0;
  CHECK(moved == 2);  // 6 partitions over 3 members: two move, four stay
}

TEST_CASE("groups: commits are fenced by member and epoch", "[groups]") {
  group g("g", {});
  g.set_placement(spread("t", 2, {b1}));
  auto a = beat(g, g.join("m-a", b1, {"t"}, 0), 0);
  REQUIRE(a.assignment.size() == 2);
  const topic_partition p0{"t", 0}, p1{"t", 1};
  CHECK(g.check_commit("m-a", a.member_epoch, p0));
  CHECK(g.check_commit("m-a", a.member_epoch + 1, p0).code() == errc::conflict);  // an epoch it never had
  CHECK(g.check_commit("m-a", 0, p0).code() == errc::conflict);                   // before it held p0
  CHECK(g.check_commit("m-x", 1, p0).code() == errc::conflict);                   // not a member
  // b joins; p1 goes to b once a lets it go. a's commits of p1 are refused from the moment it is revoked.
  auto b = g.join("m-b", b1, {"t"}, 1);
  a = beat(g, a, 2);
  REQUIRE(a.assignment.size() == 1);
  const topic_partition moved = a.assignment[0] == p0 ? p1 : p0;
  CHECK(g.check_commit("m-a", a.member_epoch, moved).code() == errc::conflict);
  a = beat(g, a, 3);
  b = beat(g, b, 4);
  REQUIRE(b.assignment == std::vector<topic_partition>{moved});
  CHECK(g.check_commit("m-b", b.member_epoch, moved));
  // An older epoch of the member, from after it got the partition, is still fine (its answer may not have arrived).
  auto kept = a.assignment[0];
  CHECK(g.check_commit("m-a", a.member_epoch, kept));
  REQUIRE(g.holder_of(moved));
  CHECK(g.holder_of(moved)->first == "m-b");
}

TEST_CASE("groups: a heartbeat needs the member's epoch (or the one before it), and others are fenced", "[groups]") {
  group g("g", {});
  g.set_placement(spread("t", 2, {b1}));
  auto a = beat(g, g.join("m-a", b1, {"t"}, 0), 0);
  auto lost = g.heartbeat("m-a", a.member_epoch, a.assignment, 1);  // say this answer never arrives
  REQUIRE(lost);
  g.join("m-b", b1, {"t"}, 2);
  clear(g);
  auto bumped = g.heartbeat("m-a", a.member_epoch, a.assignment, 3);  // the previous epoch: accepted
  REQUIRE(bumped);
  CHECK(bumped->member_epoch > a.member_epoch);
  CHECK(g.heartbeat("m-a", bumped->member_epoch + 5, {}, 4).code() == errc::conflict);
  CHECK(g.heartbeat("m-a", 0, {}, 4).code() == errc::conflict);
  CHECK(g.heartbeat("nobody", 1, {}, 4).code() == errc::not_found);
}

TEST_CASE("groups: a partition that moves to another broker goes to a member connected there", "[groups]") {
  group g("g", {});
  g.set_placement({{{"t", 0}, b1}, {{"t", 1}, b1}});
  auto a = beat(g, g.join("m-a", b1, {"t"}, 0), 0);
  auto c = g.join("m-c", b2, {"t"}, 0);
  REQUIRE(a.assignment.size() == 2);
  CHECK(c.assignment.empty());
  g.set_placement({{{"t", 0}, b1}, {{"t", 1}, b2}});  // the Reassigner moved t-1 to b2
  a = beat(g, a, 1);
  a = beat(g, a, 2);
  c = beat(g, c, 3);
  CHECK(a.assignment == std::vector<topic_partition>{{"t", 0}});
  CHECK(c.assignment == std::vector<topic_partition>{{"t", 1}});
  check_exclusive(g);
}

TEST_CASE("groups: restored from its durable state, a group keeps members, partitions and epochs", "[groups]") {
  group g("g", {});
  g.set_placement(spread("t", 4, {b1}));
  auto a = g.join("m-a", b1, {"t"}, 0);
  auto b = g.join("m-b", b1, {"t"}, 0);
  for (int i = 1; i < 4; ++i) {
    a = beat(g, a, i);
    b = beat(g, b, i);
  }
  group restored(g.state(), {}, 1000);  // the coordinator restarted
  restored.set_placement(spread("t", 4, {b1}));
  CHECK(restored.state().epoch == g.state().epoch);
  auto a2 = restored.heartbeat("m-a", a.member_epoch, a.assignment, 1001);
  REQUIRE(a2);
  CHECK(a2->member_epoch == a.member_epoch);  // nothing changed for it
  CHECK(as_set(a2->assignment) == as_set(a.assignment));
  CHECK(restored.check_commit("m-b", b.member_epoch, b.assignment[0]));
  CHECK(restored.check_commit("m-b", b.member_epoch - 1, b.assignment[0]).code() == errc::conflict);
}

TEST_CASE("groups: under random joins, leaves, silences and moves no partition is ever handed to two members, and "
          "every assignable partition ends up handed",
          "[groups]") {
  std::mt19937 rng(GENERATE(1u, 2u, 3u, 4u, 5u));
  group g("g", {3000, 1000});
  const std::vector<broker_id> brokers{b1, b2, b3};
  std::vector<placement> where = spread("t", 12, brokers);
  g.set_placement(where);
  std::map<std::string, member_answer> live;
  time_ms now = 0;
  for (int step = 0; step < 400; ++step) {
    now += 100;
    const int action = static_cast<int>(rng() % 10);
    if (action == 0 && live.size() < 6) {
      const std::string id = "m" + std::to_string(step);
      live[id] = g.join(id, brokers[rng() % 3], {"t"}, now);
    } else if (action == 1 && !live.empty()) {
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      (void)g.leave(it->first);
      live.erase(it);
    } else if (action == 2) {
      where[rng() % where.size()].owner = brokers[rng() % 3];  // a move
      g.set_placement(where);
    } else {
      clear(g);
      for (auto it = live.begin(); it != live.end();) {
        if (rng() % 20 == 0) {  // falls silent for good
          it = live.erase(it);
          continue;
        }
        auto a = g.heartbeat(it->first, it->second.member_epoch, it->second.assignment, now);
        if (a) it->second = *a;
        it = a ? std::next(it) : live.erase(it);
      }
    }
    for (const auto& id : g.expire(now)) live.erase(id);
    check_exclusive(g);
  }
  // Two more members, so that the group subscribes to the topic whatever happened above.
  live["late-1"] = g.join("late-1", b1, {"t"}, now);
  live["late-2"] = g.join("late-2", b2, {"t"}, now);
  // Quiet now: the live members heartbeat each second until the silent ones have timed out and everything settled.
  for (int round = 0; round < 8; ++round) {
    now += 1000;
    for (auto& [id, a] : live) a = beat(g, a, now);
    for (const auto& id : g.expire(now)) CHECK(live.count(id) == 0);
  }
  std::size_t handed = 0;
  for (const auto& [id, a] : live) handed += a.assignment.size();
  CHECK(handed + g.unassigned_partitions().size() == where.size());
  check_exclusive(g);
}

TEST_CASE("groups: a partition is handed only after its owner cleared it since its last holder lost it", "[groups]") {
  group g("g", {});
  g.set_placement({{{"t", 0}, b2}});
  auto a = g.join("m-a", b2, {"t"}, 0);
  CHECK(a.assignment.empty());  // not cleared yet
  REQUIRE(g.needing_clearance() == std::vector<placement>{{{"t", 0}, b2}});
  g.cleared_by_owner({"t", 0});
  auto a1 = g.heartbeat("m-a", a.member_epoch, {}, 1);
  REQUIRE(a1);
  CHECK(a1->assignment == std::vector<topic_partition>{{"t", 0}});
  CHECK(g.needing_clearance().empty());
  g.cleared_by_owner({"t", 0});  // while someone holds it: ignored
  CHECK(g.state().cleared.empty());
  // a leaves: the partition waits for a fresh clearance before b gets it.
  auto b = g.join("m-b", b2, {"t"}, 2);
  REQUIRE(g.leave("m-a"));
  auto b1_ = g.heartbeat("m-b", b.member_epoch, {}, 3);
  REQUIRE(b1_);
  CHECK(b1_->assignment.empty());
  CHECK(g.needing_clearance().size() == 1);
  g.cleared_by_owner({"t", 0});
  auto b2_ = g.heartbeat("m-b", b1_->member_epoch, {}, 4);
  REQUIRE(b2_);
  CHECK(b2_->assignment == std::vector<topic_partition>{{"t", 0}});
}

TEST_CASE("groups: a rejoin with a known id fences the incarnation that held it before", "[groups]") {
  group g("g", {});
  g.set_placement(spread("t", 2, {b1}));
  auto a = beat(g, g.join("m-a", b1, {"t"}, 0), 0);
  REQUIRE(a.assignment.size() == 2);
  auto again = g.join("m-a", b1, {"t"}, 1);  // another process presenting the same id
  CHECK(again.member_epoch > a.member_epoch);
  CHECK(again.assignment.empty());  // revoked: handed again only through clearance
  CHECK(g.check_commit("m-a", a.member_epoch, a.assignment[0]).code() == errc::conflict);
  again = beat(g, again, 2);
  CHECK(again.assignment.size() == 2);
  CHECK(g.check_commit("m-a", again.member_epoch, again.assignment[0]));
}

TEST_CASE("groups: a member that joins a full group gets its share, even when the shares were already even",
          "[groups]") {
  group g("g", {});
  g.set_placement(spread("t", 4, {b1}));
  auto a = g.join("m-a", b1, {"t"}, 0);
  auto b = g.join("m-b", b1, {"t"}, 0);
  for (int i = 1; i < 4; ++i) {
    a = beat(g, a, i);
    b = beat(g, b, i);
  }
  REQUIRE(a.assignment.size() == 2);
  g.join("m-c", b1, {"t"}, 10);
  std::map<std::string, int> counts;
  for (const auto& [tp, holder] : g.state().target) ++counts[holder];
  CHECK(counts["m-c"] == 1);  // 4 over 3: 2, 1, 1 (it used to keep 2 and 2 and leave the newcomer idle)
  CHECK(counts["m-a"] + counts["m-b"] == 3);
}
