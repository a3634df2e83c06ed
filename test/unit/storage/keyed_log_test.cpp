// The keyed log: the latest value per key survives a reopen, a torn last record is cut off, damage before it is
// refused, zeros written ahead for synced puts are kept and written over, and compaction keeps exactly the latest
// values.
#include <catch2/catch.hpp>

#include <fstream>

#include "moonmq/storage/file_keyed_log.hpp"
#include "moonmq/storage/record.hpp"
#include "support/process.hpp"

using namespace moonmq;
using namespace moonmq::storage;

namespace {
std::unique_ptr<keyed_log> open_at(const std::string& path, std::size_t compact_at = 4u << 20) {
  auto l = open_file_keyed_log(path, default_logger(), compact_at);
  INFO((l ? std::string() : l.message()));
  REQUIRE(l);
  return std::move(*l);
}
std::string frame_of(const std::string& key, const std::string& value) {
  record r;
  r.key = key;
  r.value = value;
  return encode_frame(r);
}
std::uintmax_t size_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  return static_cast<std::uintmax_t>(f.tellg());
}
}  // namespace

TEST_CASE("keyed log: the last value of each key survives a reopen, synced or not", "[storage]") {
  test::temp_dir dir;
  const std::string path = dir.path() + "/k.log";
  {
    auto l = open_at(path);
    REQUIRE(l->put("a", "1", true));
    REQUIRE(l->put("b", "2", false));
    REQUIRE(l->put("a", "3", false));
    REQUIRE(l->sync());
    CHECK(l->entries() == std::map<std::string, std::string>{{"a", "3"}, {"b", "2"}});
  }
  auto again = open_at(path);
  CHECK(again->entries() == std::map<std::string, std::string>{{"a", "3"}, {"b", "2"}});
}

TEST_CASE("keyed log: a torn last record is truncated and damage before the end refuses to open", "[storage]") {
  test::temp_dir dir;
  const std::string path = dir.path() + "/k.log";
  {
    auto l = open_at(path);
    REQUIRE(l->put("a", "1", true));
    REQUIRE(l->put("b", "2", true));
  }
  CHECK(size_of(path) > 2 * frame_of("a", "1").size());  // zeros written ahead
  const std::uint64_t records_end = frame_of("a", "1").size() + frame_of("b", "2").size();
  {
    // A header cut short where the next record goes (in the zeros written ahead): the last write, torn.
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(static_cast<std::streamoff>(records_end));
    f.write("\x20\x00\x00\x00\x01", 5);
  }
  {
    auto l = open_at(path);
    CHECK(l->entries().size() == 2);
    CHECK(size_of(path) == records_end);  // cut off with the zeros after it
    REQUIRE(l->put("c", "3", true));
  }
  CHECK(open_at(path)->entries().size() == 3);
  {
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(10);
    f.put('X');  // inside the first record, with records after it
  }
  auto damaged = open_file_keyed_log(path, default_logger());
  REQUIRE_FALSE(damaged);
  CHECK(damaged.code() == errc::corrupt);
  CHECK_THAT(damaged.message(), Catch::Contains(path));
}

TEST_CASE("keyed log: compaction keeps the latest values and shrinks the file", "[storage]") {
  test::temp_dir dir;
  const std::string path = dir.path() + "/k.log";
  {
    auto l = open_at(path, 4096);
    for (int i = 0; i < 500; ++i) REQUIRE(l->put("key" + std::to_string(i % 5), std::to_string(i), false));
    CHECK(size_of(path) < 4096 + 200);
  }
  auto l = open_at(path);
  auto e = l->entries();
  REQUIRE(e.size() == 5);
  for (int k = 0; k < 5; ++k) CHECK(e.at("key" + std::to_string(k)) == std::to_string(495 + k));
}

TEST_CASE("keyed log: a synced put writes zeros ahead, and later synced puts write over them", "[storage]") {
  test::temp_dir dir;
  const std::string path = dir.path() + "/k.log";
  const std::uint64_t one = frame_of("k", "0").size();
  std::uintmax_t ahead = 0;
  {
    auto l = open_at(path);
    REQUIRE(l->put("k", "0", true));
    ahead = size_of(path);
    CHECK(ahead > 100 * one);  // room for many more records without growing the file
    for (int i = 1; i < 100; ++i) REQUIRE(l->put("k", std::to_string(i % 10), true));
    CHECK(size_of(path) == ahead);
  }
  {
    auto l = open_at(path);  // the zero tail is kept, not taken for damage
    CHECK(l->entries() == std::map<std::string, std::string>{{"k", "9"}});
    CHECK(size_of(path) == ahead);
    REQUIRE(l->put("k", "last", true));
    CHECK(size_of(path) == ahead);
  }
  CHECK(open_at(path)->entries() == std::map<std::string, std::string>{{"k", "last"}});
}
