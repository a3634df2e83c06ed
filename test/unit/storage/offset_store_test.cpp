#include <catch2/catch.hpp>

#include "moonmq/storage/durable_offset_store.hpp"
#include <fstream>

#include "moonmq/storage/file_state_file.hpp"
#include "support/process.hpp"

using namespace moonmq;
using namespace moonmq::storage;

namespace {

std::unique_ptr<offset_store> make(const std::string& kind, const std::string& dir) {
  if (kind == "memory") return std::make_unique<memory_offset_store>();
  auto s = open_durable_offset_store(dir);
  REQUIRE(s);
  return std::move(*s);
}

}  // namespace

TEST_CASE("offset store: commits are read back per group and partition", "[offset_store]") {
  std::string kind = GENERATE("memory", "durable");
  INFO(kind);
  test::temp_dir dir;
  auto s = make(kind, dir.path());
  topic_partition tp{"orders", 1};
  CHECK_FALSE(s->committed("g1", tp).has_value());
  REQUIRE(s->commit("g1", tp, 500));
  REQUIRE(s->commit("g2", tp, 100));
  REQUIRE(s->commit("g1", {"orders", 2}, 7));
  CHECK(*s->committed("g1", tp) == 500);
  REQUIRE(s->commit("g1", tp, 300));  // a group may rewind
  CHECK(*s->committed("g1", tp) == 300);
  CHECK(s->groups_for(tp) == std::vector<group_offset>{{"g1", 300}, {"g2", 100}});
  CHECK_FALSE(s->commit("", tp, 1));
}

TEST_CASE("offset store: a commit's metadata is kept with its offset, replaced by the next commit and read back after "
          "a reopen",
          "[offset_store]") {
  std::string kind = GENERATE("memory", "durable");
  INFO(kind);
  test::temp_dir dir;
  const topic_partition tp{"t", 0};
  const std::string odd = std::string("line one\nline two\0 and a NUL", 28);
  {
    auto s = make(kind, dir.path());
    REQUIRE(s->commit("g", tp, 10, "first"));
    CHECK(*s->committed_with_metadata("g", tp) == committed_offset{10, "first"});
    REQUIRE(s->commit("g", tp, 12, odd));
    REQUIRE(s->commit("h", tp, 5));
    CHECK(*s->committed_with_metadata("g", tp) == committed_offset{12, odd});
    CHECK(*s->committed_with_metadata("h", tp) == committed_offset{5, ""});
    CHECK(s->groups_for(tp) == std::vector<group_offset>{{"g", 12, odd}, {"h", 5, ""}});
    CHECK(s->commit("g", tp, 13, std::string(max_commit_metadata + 1, 'm')).code() == errc::invalid_argument);
    CHECK(*s->commit_if_higher("h", tp, 6, "pushed"));
    CHECK(*s->committed_with_metadata("h", tp) == committed_offset{6, "pushed"});
    if (kind == "memory") return;
  }
  auto s = make(kind, dir.path());
  CHECK(*s->committed_with_metadata("g", tp) == committed_offset{12, odd});
  CHECK(*s->committed_with_metadata("h", tp) == committed_offset{6, "pushed"});
  CHECK(s->of_group("g") == std::vector<std::pair<topic_partition, committed_offset>>{{tp, {12, odd}}});
}

TEST_CASE("offset store: a pushed offset only ever raises a group's offset", "[offset_store]") {
  std::string kind = GENERATE("memory", "durable");
  INFO(kind);
  test::temp_dir dir;
  auto s = make(kind, dir.path());
  topic_partition tp{"t", 0};
  CHECK(*s->commit_if_higher("g", tp, 50));
  CHECK_FALSE(*s->commit_if_higher("g", tp, 40));
  CHECK(*s->committed("g", tp) == 50);
  CHECK(*s->commit_if_higher("g", tp, 60));
  CHECK(*s->committed("g", tp) == 60);
}

TEST_CASE("offset store: a deleted topic's offsets are forgotten, for every group and partition, durably",
          "[offset_store]") {
  std::string kind = GENERATE("memory", "durable");
  INFO(kind);
  test::temp_dir dir;
  {
    auto s = make(kind, dir.path());
    REQUIRE(s->commit("g1", {"gone", 0}, 500));
    REQUIRE(s->commit("g2", {"gone", 3}, 7));
    REQUIRE(s->commit("g1", {"kept", 0}, 42));
    REQUIRE(s->forget_topic("gone"));
    CHECK_FALSE(s->committed("g1", {"gone", 0}));
    CHECK(s->groups_for({"gone", 3}).empty());
    CHECK(*s->committed("g1", {"kept", 0}) == 42);
    REQUIRE(s->forget_topic("never"));  // nothing to forget
    if (kind == "memory") return;
  }
  auto s = make(kind, dir.path());  // reopened: still forgotten; a later topic of the name starts with none
  CHECK_FALSE(s->committed("g1", {"gone", 0}));
  CHECK_FALSE(s->committed("g2", {"gone", 3}));
  CHECK(*s->committed("g1", {"kept", 0}) == 42);
  REQUIRE(s->commit("g1", {"gone", 0}, 3));
  CHECK(*s->committed("g1", {"gone", 0}) == 3);
}

TEST_CASE("durable offset store: commits survive a reopen", "[offset_store]") {
  test::temp_dir dir;
  {
    auto s = make("durable", dir.path());
    REQUIRE(s->commit("g", {"t", 3}, 1234));
  }
  auto s = make("durable", dir.path());
  CHECK(*s->committed("g", {"t", 3}) == 1234);
}

TEST_CASE("durable offset store: a commit appends to the log, which is compacted once it has grown", "[offset_store]") {
  test::temp_dir dir;
  const std::string log = dir.path() + "/committed-offsets.log";
  {
    auto s = open_durable_offset_store(dir.path(), default_logger(), 4096);
    REQUIRE(s);
    for (int i = 0; i < 2000; ++i) REQUIRE((*s)->commit("g" + std::to_string(i % 4), {"t", i % 3}, i));
    // 2,000 commits of 12 (group, partition) pairs: the log holds about what 12 need, not 2,000.
    CHECK(test::slurp(log).size() < 4 * 4096);
    CHECK(*(*s)->committed("g3", {"t", 2}) == 1991);
  }
  auto s = open_durable_offset_store(dir.path());
  REQUIRE(s);
  for (int g = 0; g < 4; ++g)
    for (int p = 0; p < 3; ++p) CHECK((*s)->committed("g" + std::to_string(g), {"t", p}).has_value());
  CHECK(*(*s)->committed("g3", {"t", 2}) == 1991);
  CHECK(*(*s)->committed("g0", {"t", 0}) == 1992);
}

TEST_CASE("durable offset store: a torn last commit is truncated, damage before it is refused naming the file",
          "[offset_store][crash]") {
  test::temp_dir dir;
  const std::string log = dir.path() + "/committed-offsets.log";
  {
    auto s = make("durable", dir.path());
    REQUIRE(s->commit("g", {"t", 0}, 10));
    REQUIRE(s->commit("g", {"t", 0}, 20));
  }
  const std::string whole = test::slurp(log);
  SECTION("torn tail, with zero fill after it") {
    std::ofstream(log, std::ios::binary | std::ios::trunc) << whole.substr(0, whole.size() - 3) + std::string(512, '\0');
    auto s = make("durable", dir.path());
    CHECK(*s->committed("g", {"t", 0}) == 10);  // the torn commit was never acknowledged
    REQUIRE(s->commit("g", {"t", 0}, 30));
    CHECK(*make("durable", dir.path())->committed("g", {"t", 0}) == 30);
  }
  SECTION("damage in the middle") {
    std::string bad = whole;
    bad[10] ^= 0x5a;
    std::ofstream(log, std::ios::binary | std::ios::trunc) << bad;
    auto s = open_durable_offset_store(dir.path());
    REQUIRE_FALSE(s);
    CHECK(s.code() == errc::corrupt);
    CHECK_THAT(s.message(), Catch::Contains("committed-offsets.log"));
  }
}

TEST_CASE("durable offset store: the document an older version wrote is carried over, or refused when corrupt",
          "[offset_store]") {
  test::temp_dir dir;
  const std::string old = dir.path() + "/committed-offsets.json";
  SECTION("readable") {
    std::ofstream(old) << R"({"version":1,"offsets":[{"group":"g","topic":"t","partition":2,"offset":77}]})";
    auto s = open_durable_offset_store(dir.path());
    REQUIRE(s);
    CHECK(*(*s)->committed("g", {"t", 2}) == 77);
    CHECK_FALSE(std::ifstream(old).good());  // carried into the log, then removed
    CHECK(*make("durable", dir.path())->committed("g", {"t", 2}) == 77);
  }
  SECTION("corrupt") {
    std::ofstream(old) << R"({"version":1,"offsets":[{"group":"g","topic":"t"}]})";
    auto s = open_durable_offset_store(dir.path());
    REQUIRE_FALSE(s);
    CHECK(s.code() == errc::corrupt);
    CHECK_THAT(s.message(), Catch::Contains("committed-offsets.json"));
  }
}

TEST_CASE("durable offset store: a group id that is not printable UTF-8 is refused, and the log stays readable",
          "[offset_store]") {
  test::temp_dir dir;
  {
    auto s = make("durable", dir.path());
    CHECK(s->commit(std::string("a\0b", 3), {"t", 0}, 1).code() == errc::invalid_argument);
    CHECK(s->commit("bad \xff", {"t", 0}, 1).code() == errc::invalid_argument);
    CHECK(s->commit_if_higher(std::string(256, 'g'), {"t", 0}, 1).code() == errc::invalid_argument);
    CHECK(s->commit("t", {"bad/topic", 0}, 1).code() == errc::invalid_argument);
    REQUIRE(s->commit("g", {"t", 0}, 5));
  }
  CHECK(*make("durable", dir.path())->committed("g", {"t", 0}) == 5);
}
