// What only the file-backed log does: survive reopening, and recover from crashes and damage.
#include <catch2/catch.hpp>

#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "moonmq/storage/file_partition_store.hpp"
#include "support/nowait_reads.hpp"
#include "support/process.hpp"

using namespace moonmq;
using namespace moonmq::storage;

namespace {

/// Collects log lines, to check what recovery reported.
struct recording_logger : logger {
  std::vector<std::string> lines;
  std::mutex mu;
  void log(log_level level, std::string_view c, std::string_view m) override {
    std::lock_guard lock(mu);
    lines.push_back(std::string(log_level_name(level)) + " " + std::string(c) + ": " + std::string(m));
  }
};

std::unique_ptr<partition_store> open_store(const std::string& dir, std::shared_ptr<logger> log = default_logger(),
                                            fsync_policy policy = fsync_policy::interval) {
  auto s = open_file_partition_store({dir, policy, 20, std::move(log)});
  REQUIRE(s);
  return std::move(*s);
}

record rec(std::string v) { return record{std::nullopt, std::move(v), 1, 0}; }

void append_raw(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::app) << bytes;
}

}  // namespace

TEST_CASE("file store: records and partition counts survive a reopen", "[file_store]") {
  test::temp_dir dir;
  std::uint64_t end = 0;
  {
    auto s = open_store(dir.path());
    REQUIRE(s->ensure_topic("orders", 3));
    REQUIRE(s->append({"orders", 2}, {rec("a"), rec("b")}));
    end = *s->end_offset({"orders", 2});
  }
  auto s = open_store(dir.path());
  CHECK(*s->partition_count("orders") == 3);
  CHECK(*s->end_offset({"orders", 2}) == end);
  auto r = s->read({"orders", 2}, 0, 1 << 20);
  REQUIRE(r);
  CHECK(decode_frames(r->bytes.view(), 0).size() == 2);
  CHECK(*s->append({"orders", 2}, {rec("c")}) == std::vector<std::uint64_t>{end});
}

TEST_CASE("file store: a torn tail is truncated to the last whole record and reported", "[file_store][crash]") {
  test::temp_dir dir;
  const std::string log_path = dir.path() + "/topics/t/0.log";
  std::uint64_t whole = 0;
  {
    auto s = open_store(dir.path());
    REQUIRE(s->ensure_topic("t", 1));
    REQUIRE(s->append({"t", 0}, {rec("first"), rec("second")}));
    whole = *s->end_offset({"t", 0});
  }
  SECTION("a frame cut off mid-write") {
    std::string next = encode_frame(rec("third, never finished"));
    append_raw(log_path, next.substr(0, next.size() / 2));
  }
  SECTION("a header cut off") { append_raw(log_path, std::string("\x20\x00\x00", 3)); }
  SECTION("a zero-filled tail") { append_raw(log_path, std::string(4096, '\0')); }
  SECTION("a last frame whose bytes did not all reach the disk") {
    std::string next = encode_frame(rec("third"));
    next[next.size() - 2] ^= 0x5a;
    append_raw(log_path, next);
  }
  SECTION("a torn last frame followed by zero fill (power loss on a file system that extended the file)") {
    std::string next = encode_frame(rec("third, torn"));
    next[next.size() - 3] ^= 0x5a;
    append_raw(log_path, next + std::string(100000, '\0'));
  }
  SECTION("a last frame whose length is garbage, then zero fill") {
    append_raw(log_path, std::string("\xff\xff\xff\x7f", 4) + std::string(5000, '\0'));
  }
  auto log = std::make_shared<recording_logger>();
  auto s = open_store(dir.path(), log);
  CHECK(*s->end_offset({"t", 0}) == whole);
  REQUIRE(log->lines.size() == 1);
  CHECK_THAT(log->lines[0], Catch::Contains("truncated a torn tail"));
  CHECK_THAT(log->lines[0], Catch::Contains(log_path));
  auto r = s->read({"t", 0}, 0, 1 << 20);
  REQUIRE(r);
  CHECK(decode_frames(r->bytes.view(), 0).size() == 2);
  // The next append lands right after the last whole record.
  CHECK(*s->append({"t", 0}, {rec("after")}) == std::vector<std::uint64_t>{whole});
}

TEST_CASE("file store: corruption in the middle is an error naming the file and offset", "[file_store][crash]") {
  test::temp_dir dir;
  const std::string log_path = dir.path() + "/topics/t/0.log";
  std::uint64_t second = 0;
  {
    auto s = open_store(dir.path());
    REQUIRE(s->ensure_topic("t", 1));
    auto o = s->append({"t", 0}, {rec("first"), rec("second"), rec("third")});
    second = (*o)[1];
  }
  {
    int f = ::open(log_path.c_str(), O_WRONLY);
    REQUIRE(f >= 0);
    char x = 'Z';
    REQUIRE(::pwrite(f, &x, 1, static_cast<off_t>(second + frame_header_size + 5)) == 1);
    ::close(f);
  }
  auto s = open_file_partition_store({dir.path(), fsync_policy::interval, 20, default_logger()});
  REQUIRE_FALSE(s);
  CHECK(s.code() == errc::corrupt);
  CHECK_THAT(s.message(), Catch::Contains(log_path));
  CHECK_THAT(s.message(), Catch::Contains("offset " + std::to_string(second)));
}

TEST_CASE("file store: a damaged record found by a read is reported, never skipped", "[file_store][crash]") {
  test::temp_dir dir;
  const std::string log_path = dir.path() + "/topics/t/0.log";
  auto s = open_store(dir.path());
  REQUIRE(s->ensure_topic("t", 1));
  auto o = s->append({"t", 0}, {rec("first"), rec("second")});
  int f = ::open(log_path.c_str(), O_WRONLY);
  char x = 'Z';
  REQUIRE(::pwrite(f, &x, 1, static_cast<off_t>((*o)[1] + frame_header_size + 4)) == 1);
  ::close(f);
  auto r = s->read({"t", 0}, 0, 1 << 20);
  REQUIRE_FALSE(r);
  CHECK(r.code() == errc::corrupt);
  CHECK_THAT(r.message(), Catch::Contains("offset " + std::to_string((*o)[1])));
}

TEST_CASE("file store: a half-created topic never appears", "[file_store][crash]") {
  test::temp_dir dir;
  { auto s = open_store(dir.path()); }
  // A crash after the directory and logs were made but before topic.json was written.
  REQUIRE(::mkdir((dir.path() + "/topics/ghost").c_str(), 0755) == 0);
  append_raw(dir.path() + "/topics/ghost/0.log", "");
  auto s = open_store(dir.path());
  CHECK(s->partition_count("ghost").code() == errc::not_found);
  CHECK(*s->ensure_topic("ghost", 1) == 1);
}

TEST_CASE("file store: a corrupt topic.json stops the store from opening", "[file_store][crash]") {
  test::temp_dir dir;
  {
    auto s = open_store(dir.path());
    REQUIRE(s->ensure_topic("t", 2));
  }
  std::ofstream(dir.path() + "/topics/t/topic.json") << "{\"partitions\": ";
  auto s = open_file_partition_store({dir.path(), fsync_policy::interval, 20, default_logger()});
  REQUIRE_FALSE(s);
  CHECK(s.code() == errc::corrupt);
  CHECK_THAT(s.message(), Catch::Contains("topic.json"));
}

TEST_CASE("file store: topic names that are not safe file names are refused", "[file_store]") {
  test::temp_dir dir;
  auto s = open_store(dir.path());
  for (const std::string& bad :
       std::vector<std::string>{"", "..", "a/b", "a b", std::string(250, 'x'), "caf\xc3\xa9"}) {
    INFO(bad);
    CHECK(s->ensure_topic(bad, 1).code() == errc::invalid_argument);
  }
  CHECK(s->ensure_topic("Orders_v2.eu-west", 1));
}

TEST_CASE("file store: every fsync policy keeps acknowledged records across a reopen", "[file_store]") {
  for (auto policy : {fsync_policy::always, fsync_policy::interval, fsync_policy::never}) {
    INFO(fsync_policy_name(policy));
    test::temp_dir dir;
    {
      auto s = open_store(dir.path(), default_logger(), policy);
      REQUIRE(s->ensure_topic("t", 1));
      for (int i = 0; i < 50; ++i) REQUIRE(s->append({"t", 0}, {rec(std::to_string(i))}));
      REQUIRE(s->sync({"t", 0}));
    }
    auto s = open_store(dir.path());
    auto r = s->read({"t", 0}, 0, 1 << 20);
    CHECK(decode_frames(r->bytes.view(), 0).size() == 50);
  }
}

TEST_CASE("file store: reads find record boundaries far into a large log", "[file_store]") {
  test::temp_dir dir;
  auto s = open_store(dir.path());
  REQUIRE(s->ensure_topic("t", 1));
  std::vector<std::uint64_t> offsets;
  for (int i = 0; i < 2000; ++i) offsets.push_back((*s->append({"t", 0}, {rec(std::string(300, 'a' + i % 26))}))[0]);
  for (int i : {0, 1, 217, 999, 1998, 1999}) {
    auto r = s->read({"t", 0}, offsets[i], 1);
    REQUIRE(r);
    CHECK(decode_frames(r->bytes.view(), offsets[i])[0].value == std::string(300, 'a' + i % 26));
  }
  CHECK(s->read({"t", 0}, offsets[500] + 1, 10).code() == errc::invalid_argument);
  auto big = s->append({"t", 0}, {rec(std::string(300000, 'z'))});
  auto r = s->read({"t", 0}, (*big)[0], 100);
  REQUIRE(r);
  CHECK(decode_frames(r->bytes.view(), 0)[0].value.size() == 300000);
}

TEST_CASE("file store: where the last read ended is a boundary until the log is discarded", "[file_store]") {
  // A read from where the last one ended needs no walk from the index; after a discard, that offset means nothing.
  test::temp_dir dir;
  auto s = open_store(dir.path());
  const topic_partition tp{"t", 0};
  REQUIRE(s->ensure_topic("t", 1));
  for (int i = 0; i < 200; ++i) REQUIRE(s->append(tp, {rec(std::string(1000, 'a' + i % 26))}));
  auto first = s->read(tp, 0, 50'000);
  REQUIRE(first);
  const std::uint64_t ended = first->next_offset;
  REQUIRE(ended % (1000 + frame_size(rec(""))) == 0);
  auto next = s->read(tp, ended, 1);
  REQUIRE(next);
  CHECK(decode_frames(next->bytes.view(), ended)[0].offset == ended);
  CHECK(*s->next_record(tp, ended) == ended);
  REQUIRE(s->discard(tp));
  // Records of another size: the old end now falls inside a record.
  for (int i = 0; i < 200; ++i) REQUIRE(s->append(tp, {rec(std::string(700, 'z'))}));
  const std::size_t frame = 700 + frame_size(rec(""));
  REQUIRE(ended % frame != 0);
  CHECK(s->read(tp, ended, 1).code() == errc::invalid_argument);
  CHECK(*s->next_record(tp, ended) == (ended / frame + 1) * frame);
}

TEST_CASE("file store: a read that must not wait reads the page cache, and refuses what only the disk holds",
          "[file_store]") {
  test::temp_dir dir;
  if (!test::nowait_reads(dir.path())) {
    WARN("this file system does not read with RWF_NOWAIT (tmpfs, NFS): every such read is refused, nothing to check");
    return;
  }
  auto s = open_store(dir.path());
  REQUIRE(s->ensure_topic("t", 1));
  const topic_partition tp{"t", 0};
  std::vector<std::uint64_t> offsets;
  for (int i = 0; i < 600; ++i) offsets.push_back((*s->append(tp, {rec(std::string(300, 'a' + i % 26))}))[0]);
  auto cached = s->read_cached(tp, offsets[500], 1000);  // just written: in the page cache
  REQUIRE(cached);
  CHECK(decode_frames(cached->bytes.view(), offsets[500])[0].value == std::string(300, 'a' + 500 % 26));
  // Written back, then dropped from the page cache: only the disk holds the log now.
  REQUIRE(s->sync(tp));
  std::string log_file;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path()))
    if (e.path().extension() == ".log") log_file = e.path().string();
  REQUIRE(!log_file.empty());
  const int fd = ::open(log_file.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  REQUIRE(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
  ::close(fd);
  CHECK(s->read_cached(tp, offsets[500], 1000).code() == errc::would_block);
  CHECK(s->next_record_cached(tp, offsets[500] + 1).code() == errc::would_block);  // its frame headers too
  // A thread that may wait reads it from the disk.
  auto read = s->read(tp, offsets[500], 1000);
  REQUIRE(read);
  CHECK(decode_frames(read->bytes.view(), offsets[500])[0].value == std::string(300, 'a' + 500 % 26));
}

TEST_CASE("fsync policies are parsed by name", "[file_store]") {
  CHECK(*parse_fsync_policy("always") == fsync_policy::always);
  CHECK(*parse_fsync_policy("interval") == fsync_policy::interval);
  CHECK(*parse_fsync_policy("never") == fsync_policy::never);
  CHECK_FALSE(parse_fsync_policy("sometimes"));
}

namespace {
/// How many file descriptors this process has open.
std::size_t open_descriptors() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}
}  // namespace

TEST_CASE("file store: any number of partitions are held within a bounded number of open files", "[file_store][limits]") {
  test::temp_dir dir;
  const std::size_t before = open_descriptors();
  file_store_options o{dir.path(), fsync_policy::interval, 20, default_logger()};
  o.max_open_files = 32;
  {
    auto s = open_file_partition_store(o);
    REQUIRE(s);
    for (int t = 0; t < 4; ++t) REQUIRE((*s)->ensure_topic("t" + std::to_string(t), 500));
    for (int t = 0; t < 4; ++t)
      for (int p = 0; p < 500; ++p)
        REQUIRE((*s)->append({"t" + std::to_string(t), p}, {rec("v" + std::to_string(p))}));
    CHECK(open_descriptors() < before + 40);  // 2,000 partitions, every one written
    for (int t = 0; t < 4; ++t)
      for (int p = 0; p < 500; p += 7) {
        auto r = (*s)->read({"t" + std::to_string(t), p}, 0, 1 << 16);
        REQUIRE(r);
        CHECK(decode_frames(r->bytes.view(), 0).size() == 1);
      }
    CHECK(open_descriptors() < before + 40);
  }
  auto again = open_file_partition_store(o);  // recovery opens every log, one at a time
  REQUIRE(again);
  CHECK(open_descriptors() < before + 40);
  CHECK(*(*again)->end_offset({"t3", 499}) == frame_size(rec("v499")));
}

TEST_CASE("file store: partitions past the configured limits are refused naming the limit", "[file_store][limits]") {
  test::temp_dir dir;
  file_store_options o{dir.path(), fsync_policy::interval, 20, default_logger()};
  o.max_partitions_per_topic = 100;
  o.max_partitions_per_broker = 150;
  auto s = open_file_partition_store(o);
  REQUIRE(s);
  auto too_wide = (*s)->ensure_topic("wide", 101);
  REQUIRE_FALSE(too_wide);
  CHECK(too_wide.code() == errc::invalid_argument);
  CHECK_THAT(too_wide.message(), Catch::Contains("MaxPartitionsPerTopic"));
  REQUIRE((*s)->ensure_topic("a", 100));
  auto over = (*s)->ensure_topic("b", 60);
  REQUIRE_FALSE(over);
  CHECK(over.code() == errc::resource_exhausted);
  CHECK_THAT(over.message(), Catch::Contains("MaxPartitionsPerBroker"));
  CHECK_FALSE((*s)->partition_count("b"));  // nothing half-created
  REQUIRE((*s)->ensure_topic("b", 50));
}
