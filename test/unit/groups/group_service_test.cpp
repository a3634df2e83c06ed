// The group coordinator around the state machine: where a group lives, durable group state, and commit checks.
#include <catch2/catch.hpp>

#include "moonmq/groups/group_service.hpp"

using namespace moonmq;
using namespace moonmq::groups;


namespace {

placement_source two_partitions_on(const broker_id& owner) {
  return [owner](const std::set<std::string>& topics) -> std::optional<std::vector<placement>> {
    std::vector<placement> out;
    for (const auto& t : topics)
      for (int p = 0; p < 2; ++p) out.push_back({{t, p}, owner});
    return out;
  };
}

/// Every owner clears what waits for it.
void clear(group_service& svc) {
  for (const auto& [g, p] : svc.pending_clearances()) svc.clearance_done(g, p.partition);
}

}  // namespace

TEST_CASE("groups service: a group's coordinator is the same on every broker and groups spread over brokers",
          "[groups]") {
  const std::vector<broker_id> brokers{broker_id("b2"), broker_id("b1"), broker_id("b3")};
  std::map<broker_id, int> count;
  for (int i = 0; i < 300; ++i) {
    const std::string g = "group-" + std::to_string(i);
    auto c = coordinator_of(g, brokers);
    CHECK(c == coordinator_of(g, {broker_id("b3"), broker_id("b2"), broker_id("b1")}));  // order does not matter
    ++count[c];
  }
  CHECK(count.size() == 3);
  for (const auto& [b, n] : count) CHECK(n > 50);
}

TEST_CASE("groups service: group state survives a restart of the coordinator, epochs and all", "[groups]") {
  storage::memory_keyed_log disk("group-state.log");
  const broker_id b1("b1");
  auto svc = group_service::open({b1, {}}, disk, two_partitions_on(b1), 0);
  REQUIRE(svc);
  auto a = (*svc)->join("g", "", b1, {"t"}, 0);
  REQUIRE(a);
  CHECK(a->member_id.size() == 32);  // chosen by the coordinator
  auto b = (*svc)->join("g", "", b1, {"t"}, 0);
  REQUIRE(b);
  for (int t = 1; t <= 3; ++t) {
    clear(**svc);
    a = (*svc)->heartbeat("g", a->member_id, a->member_epoch, a->assignment, t);
    b = (*svc)->heartbeat("g", b->member_id, b->member_epoch, b->assignment, t);
    REQUIRE(a);
    REQUIRE(b);
  }
  REQUIRE(a->assignment.size() == 1);
  const auto epoch = (*svc)->describe("g")->epoch;
  svc->reset();  // kill -9: only the disk remains

  // It starts before it knows the cluster's partitions: the restored assignment stands meanwhile.
  bool known = false;
  auto later = [&](const std::set<std::string>& topics) -> std::optional<std::vector<placement>> {
    if (!known) return std::nullopt;
    return two_partitions_on(b1)(topics);
  };
  auto again = group_service::open({b1, {}}, disk, later, 1000);
  REQUIRE(again);
  auto d = (*again)->describe("g");
  REQUIRE(d);
  CHECK(d->epoch == epoch);
  CHECK(d->members.size() == 2);
  auto a2 = (*again)->heartbeat("g", a->member_id, a->member_epoch, a->assignment, 1001);
  REQUIRE(a2);
  CHECK(a2->assignment == a->assignment);  // kept its partition
  known = true;
  (*again)->tick(1002);
  a2 = (*again)->heartbeat("g", a->member_id, a2->member_epoch, a2->assignment, 1003);
  REQUIRE(a2);
  CHECK(a2->assignment == a->assignment);  // and keeps it once the partitions are known: sticky
  CHECK((*again)->describe("g")->epoch == epoch);
  CHECK((*again)->check_commit("g", a->member_id, a->member_epoch, a->assignment[0]));
  // The other member's partition is still its own: a's commit of it is fenced.
  CHECK((*again)->check_commit("g", a->member_id, a->member_epoch, b->assignment[0]).code() == errc::conflict);
}

TEST_CASE("groups service: without members a commit needs no member, with members it must name one", "[groups]") {
  storage::memory_keyed_log disk("group-state.log");
  const broker_id b1("b1");
  auto svc = group_service::open({b1, {}}, disk, two_partitions_on(b1), 0);
  REQUIRE(svc);
  CHECK((*svc)->check_commit("g", "", 0, {"t", 0}));
  CHECK((*svc)->check_commit("g", "ghost", 1, {"t", 0}).code() == errc::conflict);
  auto a = (*svc)->join("g", "", b1, {"t"}, 0);
  REQUIRE(a);
  CHECK((*svc)->has_members("g"));
  CHECK((*svc)->check_commit("g", "", 0, {"t", 0}).code() == errc::conflict);
  REQUIRE((*svc)->leave("g", a->member_id));
  CHECK((*svc)->check_commit("g", "", 0, {"t", 0}));
  CHECK((*svc)->join("g", "", b1, {}, 0).code() == errc::invalid_argument);
}

TEST_CASE("groups service: an unreadable group state stops the coordinator, naming the file", "[groups]") {
  storage::memory_keyed_log disk("group-state.log");
  REQUIRE(disk.put("g", R"({"id":"g","epoch":2})", true));
  auto svc = group_service::open({broker_id("b1"), {}}, disk, {}, 0);
  REQUIRE_FALSE(svc);
  CHECK(svc.code() == errc::corrupt);
  CHECK_THAT(svc.message(), Catch::Contains("group-state.log") && Catch::Contains("group g"));
}

TEST_CASE("groups service: ids are the coordinator's to give, and a group with no members is dropped", "[groups]") {
  storage::memory_keyed_log disk("group-state.log");
  const broker_id b1("b1");
  auto svc = group_service::open({b1, {}}, disk, two_partitions_on(b1), 0);
  REQUIRE(svc);
  CHECK((*svc)->join("g", "my-own-id", b1, {"t"}, 0).code() == errc::not_found);
  auto a = (*svc)->join("g", "", b1, {"t"}, 0);
  REQUIRE(a);
  CHECK((*svc)->join("g", a->member_id, b1, {"t"}, 1));  // a known id rejoins
  REQUIRE((*svc)->leave("g", a->member_id));
  (*svc)->tick(2);
  CHECK((*svc)->groups().empty());
  CHECK_FALSE((*svc)->describe("g"));
}

TEST_CASE("groups service: the list of groups pages in byte order after a name", "[groups][list_page]") {
  storage::memory_keyed_log disk("group-state.log");
  const broker_id b1("b1");
  auto svc = group_service::open({b1, {}}, disk, two_partitions_on(b1), 0);
  REQUIRE(svc);
  for (const char* g : {"b", "a", "c", "ab"}) REQUIRE((*svc)->join(g, "", b1, {"t"}, 0));
  CHECK((*svc)->groups() == std::vector<std::string>{"a", "ab", "b", "c"});
  CHECK((*svc)->groups("", 2) == std::vector<std::string>{"a", "ab"});
  CHECK((*svc)->groups("ab", 2) == std::vector<std::string>{"b", "c"});
  CHECK((*svc)->groups("aa", 1) == std::vector<std::string>{"ab"});  // after a name that is not a group
  CHECK((*svc)->groups("c", 5).empty());
}

TEST_CASE("groups service: each change appends the changed group alone, a dropped group is forgotten, and an older "
          "single-document state is carried into the log",
          "[groups]") {
  const broker_id b1("b1");
  storage::memory_keyed_log disk("group-state.log");
  {
    // An older version's document, as it wrote it: one group with one member holding t-0.
    storage::memory_state_file legacy("group-state.json");
    REQUIRE(legacy.replace(
        R"({"version":1,"groups":[{"id":"old","epoch":3,"members":[{"id":"m1","broker":"b1","epoch":2,)"
        R"("previous_epoch":1,"topics":["t"],"owned":[],"handed":[{"topic":"t","partition":0,"since":2}]}],)"
        R"("target":[{"topic":"t","partition":0,"member":"m1"}],"cleared":[]}]})"));
    auto svc = group_service::open({b1, {}}, disk, two_partitions_on(b1), 0, *default_logger(), no_metrics(), &legacy);
    REQUIRE(svc);
    REQUIRE((*svc)->describe("old"));
    CHECK((*svc)->describe("old")->members.front().handed.count({"t", 0}) == 1);
    CHECK(disk.entries().count("old") == 1);  // carried over, synced
    const auto before = disk.entries().at("old");
    auto a = (*svc)->join("new", "", b1, {"t"}, 0);
    REQUIRE(a);
    CHECK(disk.entries().count("new") == 1);
    CHECK(disk.entries().at("old") == before);  // a change of one group writes that group only
    REQUIRE((*svc)->leave("new", a->member_id));
    (*svc)->tick(1);
  }
  auto again = group_service::open({b1, {}}, disk, two_partitions_on(b1), 2);
  REQUIRE(again);
  CHECK((*again)->describe("old"));
  CHECK_FALSE((*again)->describe("new"));  // dropped when it had no members: its record is empty
  CHECK(disk.entries().at("new").empty());
}

TEST_CASE("groups service: a group takes at most its maximum of members, whichever protocol they join by",
          "[groups]") {
  const broker_id b1("b1");
  storage::memory_keyed_log disk("group-state.log");
  group_service_options o{b1, {}};
  o.max_members = 2;
  auto svc = group_service::open(o, disk, two_partitions_on(b1), 0);
  REQUIRE(svc);
  auto a = (*svc)->join("g", "", b1, {"t"}, 0);
  REQUIRE(a);
  REQUIRE((*svc)->join_classic("g", {"", b1, {"t"}, 0, false, {}}, 0));
  CHECK((*svc)->join("g", "", b1, {"t"}, 0).code() == errc::resource_exhausted);
  CHECK((*svc)->join_classic("g", {"", b1, {"t"}, 0, false, {}}, 0).code() == errc::resource_exhausted);
  CHECK((*svc)->join("g", a->member_id, b1, {"t"}, 1));  // a member already in may join again
  REQUIRE((*svc)->leave("g", a->member_id));
  CHECK((*svc)->join("g", "", b1, {"t"}, 2));
}
