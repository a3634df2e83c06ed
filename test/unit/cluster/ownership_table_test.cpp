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
    REQUIRE(t->set_owner(tp, broker_id("b2")));
    CHECK(test::slurp(dir.path() + "/cluster-assignments.json").find("\"broker\":\"b2\"") != std::string::npos);
    CHECK_FALSE(serves(*t, tp, broker_id("b1")));
  }
  auto t = open_at(dir.path());
  CHECK(*t->owner(tp) == broker_id("b2"));
  CHECK(t->entries() == std::vector<ownership_entry>{{tp, broker_id("b2")}});
}

TEST_CASE("ownership: recording this broker as owner clears the entry", "[ownership]") {
  test::temp_dir dir;
  auto t = open_at(dir.path(), "b2");
  topic_partition tp{"orders", 0};
  REQUIRE(t->set_owner(tp, broker_id("b1")));
  REQUIRE(t->set_owner(tp, broker_id("b2")));
  CHECK_FALSE(t->owner(tp).has_value());
  CHECK(t->entries().empty());
}

TEST_CASE("ownership: a failed write leaves the table unchanged", "[ownership]") {
  auto file = std::make_unique<storage::memory_state_file>("cluster-assignments.json");
  auto* raw = file.get();
  auto t = open_local_ownership_table(broker_id("b1"), std::move(file));
  REQUIRE(t);
  raw->fail_next_replace();
  CHECK_FALSE((*t)->set_owner({"t", 0}, broker_id("b2")));
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
    REQUIRE(t->set_owner({"orders", 3}, broker_id("b3")));
    REQUIRE(t->set_owners({{{"orders", 0}, broker_id("b2")},
                           {{"orders", 1}, broker_id("b2")},
                           {{"orders", 3}, broker_id("b1")}}));  // b1 is this broker: clears the entry
    CHECK_FALSE(t->set_owners({{{"orders", 2}, broker_id("b2")}, {{"orders", 4}, broker_id("")}}));
  }
  auto t = open_at(dir.path());
  CHECK(t->owner({"orders", 0}) == broker_id("b2"));
  CHECK(t->owner({"orders", 1}) == broker_id("b2"));
  CHECK_FALSE(t->owner({"orders", 2}));  // the refused batch changed nothing
  CHECK_FALSE(t->owner({"orders", 3}));
  CHECK(t->entries().size() == 2);
}

TEST_CASE("ownership: the replicated table applies owner and controller entries and survives a snapshot",
          "[ownership][raft]") {
  test::temp_dir dir;
  raft_ownership_table t(broker_id("b1"), open_at(dir.path()));
  auto owner_entry = [](const std::string& topic, int p, const std::string& b) {
    return raft::entry{
        3, 0, raft::entry_kind::owner,
        "{\"topic\":\"" + topic + "\",\"partition\":" + std::to_string(p) + ",\"broker\":\"" + b + "\"}"};
  };
  t.apply(owner_entry("orders", 0, "b2"));
  t.apply(owner_entry("orders", 1, "b3"));
  t.apply(owner_entry("orders", 0, "b3"));  // a later move of the same partition wins
  t.apply(raft::entry{4, 0, raft::entry_kind::controller, "b2"});
  // Unreadable entries change nothing.
  t.apply(raft::entry{4, 0, raft::entry_kind::owner, "{not json"});
  t.apply(raft::entry{4, 0, raft::entry_kind::owner, R"({"topic":"orders","partition":-1,"broker":"b9"})"});
  t.apply(raft::entry{4, 0, raft::entry_kind::owner, R"({"topic":"orders","partition":1})"});
  CHECK(t.owner({"orders", 0}) == broker_id("b3"));
  CHECK(t.owner({"orders", 1}) == broker_id("b3"));
  CHECK_FALSE(t.owner({"orders", 2}));
  CHECK(t.controller().claim_epoch == epoch(4));
  CHECK(t.controller().controller == broker_id("b2"));

  test::temp_dir other;
  raft_ownership_table copy(broker_id("b2"), open_at(other.path(), "b2"));
  copy.apply(owner_entry("stale", 0, "b1"));  // replaced by the snapshot
  copy.restore(t.snapshot());
  CHECK(copy.replicated_entries() == t.replicated_entries());
  CHECK(copy.replicated_entries().size() == 2);
  CHECK(copy.controller().claim_epoch == epoch(4));
  CHECK(copy.controller().controller == broker_id("b2"));
  CHECK_FALSE(copy.owner({"stale", 0}));
}
