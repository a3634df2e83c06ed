#include <catch2/catch.hpp>

#include "moonmq/storage/durable_offset_store.hpp"
#include "moonmq/storage/file_state_file.hpp"
#include "support/process.hpp"

using namespace moonmq;
using namespace moonmq::storage;

namespace {

std::unique_ptr<offset_store> make(const std::string& kind, const std::string& dir) {
  if (kind == "memory") return std::make_unique<memory_offset_store>();
  auto s = open_durable_offset_store(make_file_state_file(dir + "/committed-offsets.json"));
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

TEST_CASE("durable offset store: commits survive a reopen", "[offset_store]") {
  test::temp_dir dir;
  {
    auto s = make("durable", dir.path());
    REQUIRE(s->commit("g", {"t", 3}, 1234));
  }
  auto s = make("durable", dir.path());
  CHECK(*s->committed("g", {"t", 3}) == 1234);
}

TEST_CASE("durable offset store: a failed write is not acknowledged and changes nothing", "[offset_store]") {
  auto file = std::make_unique<memory_state_file>("offsets");
  auto* raw = file.get();
  auto s = open_durable_offset_store(std::move(file));
  REQUIRE(s);
  REQUIRE((*s)->commit("g", {"t", 0}, 10));
  raw->fail_next_replace();
  CHECK_FALSE((*s)->commit("g", {"t", 0}, 20));
  CHECK(*(*s)->committed("g", {"t", 0}) == 10);
}

TEST_CASE("durable offset store: a corrupt document is an error naming the file", "[offset_store][crash]") {
  auto file = std::make_unique<memory_state_file>("committed-offsets.json");
  file->set(std::string("{\"version\":1,\"offsets\":[{\"group\":\"g\",\"topic\":\"t\"}]}"));
  auto s = open_durable_offset_store(std::move(file));
  REQUIRE_FALSE(s);
  CHECK(s.code() == errc::corrupt);
  CHECK_THAT(s.message(), Catch::Contains("committed-offsets.json"));
}
