// The keyed log: the latest value per key survives a reopen, a torn last record is cut off, damage before it is
// refused, and compaction keeps exactly the latest values.
#include <catch2/catch.hpp>

#include <atomic>
#include <fstream>
#include <thread>
#include <vector>

#include "moonmq/storage/file_keyed_log.hpp"
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
  const auto whole = size_of(path);
  {
    std::ofstream f(path, std::ios::binary | std::ios::app);
    f << std::string("\x20\x00\x00\x00\x01", 5);  // a header cut short: the last write, torn
  }
  {
    auto l = open_at(path);
    CHECK(l->entries().size() == 2);
    CHECK(size_of(path) == whole);
    REQUIRE(l->put("c", "3", true));
  }
  CHECK(open_at(path)->entries().size() == 3);  // written where the torn record was
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

TEST_CASE("keyed log: synced puts from many threads at once all return durable and all survive a reopen",
          "[storage]") {
  // Group commit: one fdatasync at a time covers every put written before it began; a put that came later waits
  // for the next one. Each put returns only once a sync that covers it has ended.
  // Without compaction, and with compaction every few kilobytes (never while a sync runs on the file it replaces).
  const std::size_t compact_at = GENERATE(std::size_t{1} << 30, std::size_t{2048});
  test::temp_dir dir;
  const std::string path = dir.path() + "/k.log";
  constexpr int threads = 8, each = 50;
  {
    auto l = open_at(path, compact_at);
    std::vector<std::thread> writers;
    std::atomic<int> failed{0};
    for (int t = 0; t < threads; ++t)
      writers.emplace_back([&, t] {
        for (int i = 0; i < each; ++i)
          if (!l->put("t" + std::to_string(t) + "-" + std::to_string(i % 10), std::to_string(i), i % 3 != 0)) ++failed;
      });
    for (auto& w : writers) w.join();
    CHECK(failed == 0);
    REQUIRE(l->sync());
    REQUIRE(l->sync());  // nothing new: no sync needed
  }
  auto e = open_at(path)->entries();
  CHECK(e.size() == static_cast<std::size_t>(threads * 10));
  for (int t = 0; t < threads; ++t)
    for (int k = 0; k < 10; ++k) CHECK(e.at("t" + std::to_string(t) + "-" + std::to_string(k)) == std::to_string(40 + k));
}
