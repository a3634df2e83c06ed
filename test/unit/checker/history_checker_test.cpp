// The history checker's own tests: one hand-written history per anomaly class, a clean one, and bad input.
#include "checker/history.hpp"

#include <catch2/catch.hpp>

#include "support/process.hpp"

using moonmq::check::check_history;

namespace {
/// The report's counts of a history that must parse.
std::map<std::string, std::size_t> counts(const std::string& history) {
  auto r = check_history(history);
  REQUIRE(r);
  INFO(r->to_json());
  return r->counts();
}
}  // namespace

TEST_CASE("history checker: a clean history with retries, a committed and an aborted transaction, a failed and an "
          "unknown write, and forward offsets has no anomaly",
          "[checker]") {
  const std::string h = R"(
{"op":"produce","topic":"t","partition":0,"value":"a","outcome":"ok","offset":0}
{"op":"produce","topic":"t","partition":0,"value":"a","outcome":"ok","offset":0}
{"op":"produce","topic":"t","partition":0,"value":"b","outcome":"fail"}
{"op":"produce","topic":"t","partition":0,"value":"c","outcome":"info"}
{"op":"produce","topic":"t","partition":0,"value":"x1","outcome":"ok","offset":40,"txn":"T:1"}
{"op":"produce","topic":"t","partition":1,"value":"x2","outcome":"ok","offset":0,"txn":"T:1"}
{"op":"txn","txn":"T:1","outcome":"commit"}
{"op":"produce","topic":"t","partition":1,"value":"y1","outcome":"ok","offset":30,"txn":"T:2"}
{"op":"txn","txn":"T:2","outcome":"abort"}
{"op":"offset_commit","group":"g","topic":"t","partition":0,"offset":10,"outcome":"ok"}
{"op":"offset_read","group":"g","topic":"t","partition":0,"offset":10}
{"op":"offset_commit","group":"g","topic":"t","partition":0,"offset":5,"outcome":"fail"}
{"op":"offset_read","group":"g","topic":"t","partition":0,"offset":12}
{"op":"read","topic":"t","partition":0,"isolation":"committed","final":true,"records":[{"offset":0,"value":"a"},{"offset":20,"value":"c"},{"offset":40,"value":"x1"}]}
{"op":"read","topic":"t","partition":1,"isolation":"committed","final":true,"records":[{"offset":0,"value":"x2"}]}
{"op":"read","topic":"t","partition":1,"isolation":"uncommitted","records":[{"offset":0,"value":"x2"},{"offset":30,"value":"y1"}]}
)";
  auto r = check_history(h);
  REQUIRE(r);
  INFO(r->to_json());
  CHECK(r->anomalies.empty());
  CHECK(r->ops == 16);
  CHECK(r->acknowledged == 5);
}

TEST_CASE("history checker: each anomaly class is found and names the record and both observations", "[checker]") {
  SECTION("inconsistent offset: one offset, two values") {
    auto c = counts(R"({"op":"produce","topic":"t","partition":0,"value":"a","outcome":"ok","offset":0}
{"op":"read","topic":"t","partition":0,"isolation":"committed","final":true,"records":[{"offset":0,"value":"z"},{"offset":9,"value":"a"}]})");
    CHECK(c["inconsistent_offset"] == 1);
    CHECK(c["duplicate"] == 1);  // a is at 0 (acknowledged) and at 9 (read)
  }
  SECTION("duplicate: one value at two offsets") {
    auto r = check_history(R"({"op":"produce","topic":"t","partition":0,"value":"a","outcome":"ok","offset":0}
{"op":"read","topic":"t","partition":0,"isolation":"committed","final":true,"records":[{"offset":0,"value":"a"},{"offset":9,"value":"a"}]})");
    REQUIRE(r);
    REQUIRE(r->counts() == std::map<std::string, std::size_t>{{"duplicate", 1}});
    const auto& a = r->anomalies[0];
    CHECK(a.record == "a");
    REQUIRE(a.observations.size() == 2);
    CHECK_THAT(a.observations[0], Catch::Contains("\"offset\":0"));
    CHECK_THAT(a.observations[1], Catch::Contains("\"offset\":9"));
  }
  SECTION("aborted read (G1a): a committed read returns an aborted transaction's record") {
    auto r = check_history(R"({"op":"produce","topic":"t","partition":0,"value":"x","outcome":"ok","offset":0,"txn":"T:1"}
{"op":"txn","txn":"T:1","outcome":"abort"}
{"op":"read","topic":"t","partition":0,"isolation":"committed","records":[{"offset":0,"value":"x"}]}
{"op":"read","topic":"t","partition":0,"isolation":"uncommitted","records":[{"offset":0,"value":"x"}]})");
    REQUIRE(r);
    CHECK(r->counts() == std::map<std::string, std::size_t>{{"aborted_read", 1}});
    CHECK_THAT(r->anomalies[0].observations[0], Catch::Contains("\"op\":3"));
    CHECK_THAT(r->anomalies[0].observations[1], Catch::Contains("\"outcome\":\"abort\""));
  }
  SECTION("torn transaction: the final reads show part of a committed transaction") {
    auto c = counts(R"({"op":"produce","topic":"t","partition":0,"value":"x1","outcome":"ok","offset":0,"txn":"T:1"}
{"op":"produce","topic":"t","partition":1,"value":"x2","outcome":"ok","offset":0,"txn":"T:1"}
{"op":"txn","txn":"T:1","outcome":"commit"}
{"op":"read","topic":"t","partition":0,"isolation":"committed","final":true,"records":[{"offset":0,"value":"x1"}]}
{"op":"read","topic":"t","partition":1,"isolation":"committed","final":true,"records":[]})");
    CHECK(c["torn_transaction"] == 1);
    CHECK(c["unseen_after_drain"] == 1);  // x2 itself
  }
  SECTION("torn transaction of unknown outcome: part of it visible") {
    auto c = counts(R"({"op":"produce","topic":"t","partition":0,"value":"x1","outcome":"ok","offset":0,"txn":"T:1"}
{"op":"produce","topic":"t","partition":1,"value":"x2","outcome":"ok","offset":0,"txn":"T:1"}
{"op":"read","topic":"t","partition":0,"isolation":"committed","final":true,"records":[{"offset":0,"value":"x1"}]}
{"op":"read","topic":"t","partition":1,"isolation":"committed","final":true,"records":[]})");
    CHECK(c == std::map<std::string, std::size_t>{{"torn_transaction", 1}});
  }
  SECTION("lost write: a read passes over an acknowledged offset") {
    auto c = counts(R"({"op":"produce","topic":"t","partition":0,"value":"a","outcome":"ok","offset":0}
{"op":"produce","topic":"t","partition":0,"value":"b","outcome":"ok","offset":10}
{"op":"produce","topic":"t","partition":0,"value":"c","outcome":"ok","offset":20}
{"op":"read","topic":"t","partition":0,"isolation":"uncommitted","records":[{"offset":0,"value":"a"},{"offset":20,"value":"c"}]}
{"op":"read","topic":"t","partition":0,"isolation":"committed","final":true,"records":[{"offset":0,"value":"a"},{"offset":10,"value":"b"},{"offset":20,"value":"c"}]})");
    CHECK(c == std::map<std::string, std::size_t>{{"lost_write", 1}});
  }
  SECTION("unseen after the drain: an acknowledged record the final reads do not have") {
    auto r = check_history(R"({"op":"produce","topic":"t","partition":0,"value":"a","outcome":"ok","offset":0}
{"op":"produce","topic":"t","partition":0,"value":"b","outcome":"ok","offset":10}
{"op":"read","topic":"t","partition":0,"isolation":"committed","final":true,"records":[{"offset":0,"value":"a"}]})");
    REQUIRE(r);
    CHECK(r->counts() == std::map<std::string, std::size_t>{{"unseen_after_drain", 1}});
    CHECK(r->anomalies[0].record == "b");
    CHECK(r->anomalies[0].observations.size() == 2);
  }
  SECTION("a committed read skipping an open or aborted transaction's offsets is no lost write") {
    auto c = counts(R"({"op":"produce","topic":"t","partition":0,"value":"a","outcome":"ok","offset":0}
{"op":"produce","topic":"t","partition":0,"value":"x","outcome":"ok","offset":10,"txn":"T:1"}
{"op":"produce","topic":"t","partition":0,"value":"c","outcome":"ok","offset":20}
{"op":"txn","txn":"T:1","outcome":"abort"}
{"op":"read","topic":"t","partition":0,"isolation":"committed","final":true,"records":[{"offset":0,"value":"a"},{"offset":20,"value":"c"}]})");
    CHECK(c.empty());
  }
  SECTION("a refused write that is read") {
    auto c = counts(R"({"op":"produce","topic":"t","partition":0,"value":"a","outcome":"fail"}
{"op":"produce","topic":"t","partition":0,"value":"b","outcome":"fail"}
{"op":"produce","topic":"t","partition":0,"value":"b","outcome":"info"}
{"op":"read","topic":"t","partition":0,"isolation":"uncommitted","records":[{"offset":0,"value":"a"},{"offset":5,"value":"b"}]})");
    CHECK(c == std::map<std::string, std::size_t>{{"failed_write_visible", 1}});  // b may have been written
  }
  SECTION("committed offset going backwards") {
    auto r = check_history(R"({"op":"offset_commit","group":"g","topic":"t","partition":0,"offset":10,"outcome":"ok"}
{"op":"offset_read","group":"g","topic":"t","partition":0,"offset":10}
{"op":"offset_read","group":"g","topic":"t","partition":0,"offset":4})");
    REQUIRE(r);
    CHECK(r->counts() == std::map<std::string, std::size_t>{{"offset_backwards", 1}});
    CHECK(r->anomalies[0].record == "g/t-0");
    CHECK_THAT(r->anomalies[0].observations[1], Catch::Contains("\"offset\":4"));
  }
}

TEST_CASE("history checker: a malformed history is refused naming the line", "[checker]") {
  for (const char* bad : {"{\"op\":\"produce\",\"topic\":\"t\",\"partition\":0,\"value\":\"a\",\"outcome\":\"ok\"}",
                          "{\"op\":\"fly\"}", "not json",
                          "{\"op\":\"read\",\"topic\":\"t\",\"partition\":0,\"isolation\":\"dirty\",\"records\":[]}"}) {
    INFO(bad);
    auto r = check_history(std::string("\n") + bad);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.message(), Catch::Contains("history line 2"));
  }
}

TEST_CASE("history checker: the report is one JSON document with counts and anomalies", "[checker]") {
  auto r = check_history(R"({"op":"produce","topic":"t","partition":0,"value":"b","outcome":"ok","offset":10}
{"op":"read","topic":"t","partition":0,"isolation":"committed","final":true,"records":[]})");
  REQUIRE(r);
  CHECK(r->to_json() ==
        R"({"ops":2,"acknowledged":1,"counts":{"unseen_after_drain":1},"anomalies":[{"type":"unseen_after_drain","record":"b","observations":[{"op":1,"kind":"produce","partition":"t-0","outcome":"ok","offset":10,"value":"b"},{"op":2,"kind":"read","partition":"t-0","isolation":"committed","final":true}]}]})");
}

TEST_CASE("history-check: the command exits 0 for a clean history, 1 with anomalies (printed as JSON), 2 for bad "
          "input",
          "[checker]") {
  const std::string clean = R"({"op":"produce","topic":"t","partition":0,"value":"a","outcome":"ok","offset":0}
{"op":"read","topic":"t","partition":0,"isolation":"committed","final":true,"records":[{"offset":0,"value":"a"}]})";
  auto ok = moonmq::test::run_process({MOONMQ_HISTORY_CHECK_BIN}, clean);
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.out, Catch::Contains("\"anomalies\":[]"));
  auto lost = moonmq::test::run_process(
      {MOONMQ_HISTORY_CHECK_BIN},
      R"({"op":"produce","topic":"t","partition":0,"value":"a","outcome":"ok","offset":0}
{"op":"read","topic":"t","partition":0,"isolation":"committed","final":true,"records":[]})");
  CHECK(lost.exit_code == 1);
  CHECK_THAT(lost.out, Catch::Contains("unseen_after_drain"));
  auto bad = moonmq::test::run_process({MOONMQ_HISTORY_CHECK_BIN}, "{");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("history line 1"));
}
