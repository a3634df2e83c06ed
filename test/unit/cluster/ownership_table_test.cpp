#include <catch2/catch.hpp>

#include <fstream>

#include "moonmq/cluster/local_ownership_table.hpp"
#include "moonmq/cluster/raft_ownership_table.hpp"
#include "moonmq/storage/file_state_file.hpp"
#include "support/process.hpp"

using namespace moonmq;
using namespace moonmq::cluster;

namespace {

std::unique_ptr<ownership_table> open_at(const std::string& dir, const std::string& self = "b1") {
  auto t =
      open_local_ownership_table(broker_id(self), storage::make_file_state_file(dir + "/cluster-assignments.json"));
  REQUIRE(t);
  return std::move(*t);
}

}  // namespace

TEST_CASE("ownership: a partition with no entry is served locally", "[ownership]") {
  test::temp_dir dir;
  auto t = open_at(dir.path());
  topic_partition tp{"orders", 0};
  CHECK_FALSE(t->owner(tp).has_value());
  CHECK(serves(*t, tp, broker_id("b1")));
  CHECK(owner_as_seen_by(*t, tp, broker_id("b1")) == broker_id("b1"));
}

TEST_CASE("ownership: a change is persisted before it is acknowledged and survives a restart", "[ownership]") {
  test::temp_dir dir;
  topic_partition tp{"orders", 0};
  {
    auto t = open_at(dir.path());
    REQUIRE(t->record({tp, broker_id("b2"), 1, true}));
    CHECK(test::slurp(dir.path() + "/cluster-assignments.json").find("\"broker\":\"b2\"") != std::string::npos);
    CHECK_FALSE(serves(*t, tp, broker_id("b1")));
  }
  auto t = open_at(dir.path());
  CHECK(*t->owner(tp) == broker_id("b2"));
  CHECK(t->entries() == std::vector<ownership_entry>{{tp, broker_id("b2"), 1, true}});
}

TEST_CASE("ownership: versions only grow, and a compare-and-set decides once", "[ownership]") {
  test::temp_dir dir;
  auto t = open_at(dir.path(), "b2");
  topic_partition tp{"orders", 0};
  REQUIRE(t->record({tp, broker_id("b1"), 4, false}));  // a reservation: b1 serves at version 4
  SECTION("an older or equal-but-different fact is refused, the same fact is ok") {
    CHECK(t->record({tp, broker_id("b3"), 3, false}).code() == errc::conflict);
    CHECK(t->record({tp, broker_id("b3"), 4, false}).code() == errc::conflict);
    CHECK(t->record({tp, broker_id("b1"), 4, false}));
    CHECK(*t->entry(tp) == ownership_entry{tp, broker_id("b1"), 4, false});
  }
  SECTION("the confirm of version 5 and the rollback to version 6 exclude each other, whichever comes first") {
    const ownership_entry confirm{tp, broker_id("b2"), 5, false}, rollback{tp, broker_id("b1"), 6, false};
    const bool confirm_first = GENERATE(true, false);
    if (confirm_first) {
      REQUIRE(t->record(confirm, ownership_point{5, true}));
      CHECK(t->record(confirm, ownership_point{5, true}));  // a retried confirm is ok
      CHECK(t->record(rollback, ownership_point{5, true}).code() == errc::conflict);
      CHECK(serves(*t, tp, broker_id("b2")));
    } else {
      REQUIRE(t->record(rollback, ownership_point{5, true}));
      CHECK(t->record(confirm, ownership_point{5, true}).code() == errc::conflict);  // a late confirm changes nothing
      CHECK_FALSE(serves(*t, tp, broker_id("b2")));
    }
  }
  SECTION("at one version a confirmed owner is newer than the same owner in handover") {
    REQUIRE(t->record({tp, broker_id("b2"), 5, true}));
    CHECK_FALSE(serves(*t, tp, broker_id("b2")));
    REQUIRE(t->record({tp, broker_id("b2"), 5, false}));
    CHECK(serves(*t, tp, broker_id("b2")));
    CHECK(t->record({tp, broker_id("b2"), 5, true}).code() == errc::conflict);
  }
}

TEST_CASE("ownership: a table written before versions is read at version 0", "[ownership]") {
  test::temp_dir dir;
  std::ofstream(dir.path() + "/cluster-assignments.json")
      << R"({"version":1,"assignments":[{"topic":"t","partition":0,"broker":"b2"}]})";
  auto t = open_at(dir.path());
  CHECK(*t->entry({"t", 0}) == ownership_entry{{"t", 0}, broker_id("b2"), 0, false});
}

TEST_CASE("ownership: a failed write leaves the table unchanged", "[ownership]") {
  auto file = std::make_unique<storage::memory_state_file>("cluster-assignments.json");
  auto* raw = file.get();
  auto t = open_local_ownership_table(broker_id("b1"), std::move(file));
  REQUIRE(t);
  raw->fail_next_replace();
  CHECK_FALSE((*t)->record({{"t", 0}, broker_id("b2"), 1, false}));
  CHECK_FALSE((*t)->owner({"t", 0}).has_value());
}

TEST_CASE("ownership: a corrupt or unreadable table stops start-up, never resets to empty", "[ownership][crash]") {
  test::temp_dir dir;
  const std::string path = dir.path() + "/cluster-assignments.json";
  std::string bad = GENERATE(std::string("{\"version\":1,\"assignments\":[{\"topic\":\"t\""),
                             std::string("{\"version\":1,\"assignments\":[{\"topic\":\"t\",\"partition\":0}]}"),
                             std::string("{\"version\":9,\"assignments\":[]}"), std::string("garbage"));
  std::ofstream(path) << bad;
  auto t = open_local_ownership_table(broker_id("b1"), storage::make_file_state_file(path));
  REQUIRE_FALSE(t);
  CHECK(t.code() == errc::corrupt);
  CHECK_THAT(t.message(), Catch::Contains(path));
}

TEST_CASE("ownership: several changes at once are all persisted, or none", "[ownership]") {
  test::temp_dir dir;
  {
    auto t = open_at(dir.path());
    REQUIRE(t->record({{"orders", 3}, broker_id("b3"), 2, false}));
    REQUIRE(t->record_all({{{"orders", 0}, broker_id("b2")},
                           {{"orders", 1}, broker_id("b2")},
                           {{"orders", 3}, broker_id("b2")}}));  // older than what is there: skipped
    CHECK_FALSE(t->record_all({{{"orders", 2}, broker_id("b2")}, {{"orders", 4}, broker_id("")}}));
  }
  auto t = open_at(dir.path());
  CHECK(t->owner({"orders", 0}) == broker_id("b2"));
  CHECK(t->owner({"orders", 1}) == broker_id("b2"));
  CHECK_FALSE(t->owner({"orders", 2}));  // the refused batch changed nothing
  CHECK(t->owner({"orders", 3}) == broker_id("b3"));
  CHECK(t->entries().size() == 3);
}

TEST_CASE("ownership: the replicated table applies owner and controller entries and survives a snapshot",
          "[ownership][raft]") {
  test::temp_dir dir;
  raft_ownership_table t(broker_id("b1"), open_at(dir.path()));
  auto owner_entry = [](const std::string& topic, int p, const std::string& b, int version, int expect) {
    return raft::entry{3, 0, raft::entry_kind::owner,
                       "{\"topic\":\"" + topic + "\",\"partition\":" + std::to_string(p) + ",\"broker\":\"" + b +
                           "\",\"version\":" + std::to_string(version) + ",\"expect\":" + std::to_string(expect) + "}"};
  };
  t.apply(owner_entry("orders", 0, "b2", 1, 0));
  t.apply(owner_entry("orders", 1, "b3", 1, 0));
  t.apply(owner_entry("orders", 0, "b3", 2, 1));  // a later move of the same partition wins
  t.apply(owner_entry("orders", 0, "b9", 2, 0));  // a compare-and-set that lost: nothing changes
  t.apply(raft::entry{4, 0, raft::entry_kind::controller, "b2"});
  // Unreadable entries change nothing.
  t.apply(raft::entry{4, 0, raft::entry_kind::owner, "{not json"});
  t.apply(raft::entry{4, 0, raft::entry_kind::owner, R"({"topic":"orders","partition":-1,"broker":"b9"})"});
  t.apply(raft::entry{4, 0, raft::entry_kind::owner, R"({"topic":"orders","partition":1})"});
  CHECK(t.owner({"orders", 0}) == broker_id("b3"));
  CHECK(t.entry({"orders", 0})->version == 2);
  CHECK(t.owner({"orders", 1}) == broker_id("b3"));
  CHECK_FALSE(t.owner({"orders", 2}));
  CHECK(t.controller().claim_epoch == epoch(4));
  CHECK(t.controller().controller == broker_id("b2"));

  test::temp_dir other;
  raft_ownership_table copy(broker_id("b2"), open_at(other.path(), "b2"));
  copy.apply(owner_entry("stale", 0, "b1", 1, 0));  // replaced by the snapshot
  copy.restore(t.snapshot());
  CHECK(copy.replicated_entries() == t.replicated_entries());
  CHECK(copy.replicated_entries().size() == 2);
  CHECK(copy.controller().claim_epoch == epoch(4));
  CHECK(copy.controller().controller == broker_id("b2"));
  CHECK_FALSE(copy.owner({"stale", 0}));
}

TEST_CASE("ownership: of the replicated and the local layer the newer entry counts, and nothing is served before "
          "catching up", "[ownership][raft]") {
  test::temp_dir dir;
  raft_ownership_table t(broker_id("b1"), open_at(dir.path()));
  const topic_partition tp{"orders", 0};
  CHECK_FALSE(serves(t, tp, broker_id("b1")));  // not caught up yet
  t.caught_up();
  CHECK(serves(t, tp, broker_id("b1")));
  // A source's handover marker, written before its cutover is decided: served by nobody here.
  REQUIRE(t.record({tp, broker_id("b2"), 1, true}));
  CHECK_FALSE(serves(t, tp, broker_id("b1")));
  // The log rolls the move back at version 2: the marker is older and no longer counts.
  t.apply(raft::entry{3, 7, raft::entry_kind::owner,
                      R"({"topic":"orders","partition":0,"broker":"b1","version":2,"expect":1})"});
  CHECK(serves(t, tp, broker_id("b1")));
  // A stale local reservation (version 0) does not hide the replicated owner.
  REQUIRE(t.record({{"orders", 1}, broker_id("b3"), 0, false}));
  t.apply(raft::entry{3, 8, raft::entry_kind::owner,
                      R"({"topic":"orders","partition":1,"broker":"b1","version":1,"expect":0})"});
  CHECK(serves(t, {"orders", 1}, broker_id("b1")));
}
