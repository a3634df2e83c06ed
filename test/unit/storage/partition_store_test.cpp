// The partition_store contract, checked on both implementations: the in-memory twin and the file-backed log.
#include <catch2/catch.hpp>

#include <fstream>
#include <thread>

#include "moonmq/storage/file_partition_store.hpp"
#include "moonmq/storage/memory_partition_store.hpp"
#include "storage/posix_file.hpp"
#include "support/forwarding_store.hpp"
#include "support/nowait_reads.hpp"
#include "support/process.hpp"

using namespace moonmq;
using namespace moonmq::storage;

namespace {

struct store_under_test {
  std::string kind;
  test::temp_dir dir;
  std::unique_ptr<partition_store> store;

  explicit store_under_test(std::string k) : kind(std::move(k)) {
    if (kind == "memory") {
      store = std::make_unique<memory_partition_store>();
    } else if (kind == "append only") {  // a store that does not override append_encoded: the base class's
      store = std::make_unique<test::forwarding_store>();
    } else {
      auto s = open_file_partition_store({dir.path(), fsync_policy::never, 1000, default_logger()});
      REQUIRE(s);
      store = std::move(*s);
    }
  }
  partition_store& operator*() { return *store; }
  partition_store* operator->() { return store.get(); }
};

record rec(std::string value, std::optional<std::string> key = std::nullopt) {
  return record{std::move(key), std::move(value), 42, 0};
}

}  // namespace

TEST_CASE("partition store: topics are created, grown and never shrunk", "[partition_store]") {
  store_under_test s(GENERATE("memory", "file"));
  INFO(s.kind);
  CHECK(*s->ensure_topic("orders", 2) == 2);
  CHECK(*s->ensure_topic("orders", 4) == 4);
  CHECK(*s->ensure_topic("orders", 1) == 4);
  CHECK(*s->partition_count("orders") == 4);
  CHECK(s->partition_count("missing").code() == errc::not_found);
  CHECK(s->topics() == std::vector<std::string>{"orders"});
  CHECK(s->list_partitions().size() == 4);
  CHECK(s->ensure_topic("bad", 0).code() == errc::invalid_argument);
}

TEST_CASE("partition store: offsets are byte positions and reads return whole records", "[partition_store]") {
  store_under_test s(GENERATE("memory", "file"));
  INFO(s.kind);
  REQUIRE(s->ensure_topic("t", 1));
  topic_partition tp{"t", 0};
  CHECK(*s->end_offset(tp) == 0);
  auto offs = s->append(tp, {rec("a"), rec("bb", "k")});
  REQUIRE(offs);
  CHECK((*offs)[0] == 0);
  CHECK((*offs)[1] == frame_size(rec("a")));
  auto more = s->append(tp, {rec("ccc")});
  CHECK((*more)[0] == frame_size(rec("a")) + frame_size(rec("bb", "k")));
  CHECK(*s->end_offset(tp) == *s->size_bytes(tp));

  auto all = s->read(tp, 0, 1 << 20);
  REQUIRE(all);
  auto views = decode_frames(all->bytes.view(), 0);
  REQUIRE(views.size() == 3);
  CHECK(views[1].value == "bb");
  CHECK(*views[1].key == "k");
  CHECK(all->next_offset == *s->end_offset(tp));

  auto one = s->read(tp, 0, 1);  // smaller than one frame: still one whole frame
  REQUIRE(one);
  CHECK(decode_frames(one->bytes.view(), 0).size() == 1);
  CHECK(one->next_offset == (*offs)[1]);

  auto from_second = s->read(tp, (*offs)[1], 1 << 20);
  REQUIRE(from_second);
  CHECK(decode_frames(from_second->bytes.view(), (*offs)[1])[0].value == "bb");

  auto at_end = s->read(tp, *s->end_offset(tp), 100);
  REQUIRE(at_end);
  CHECK(at_end->bytes.empty());
  CHECK(s->read(tp, *s->end_offset(tp) + 1, 100).code() == errc::invalid_argument);
  auto mid = s->read(tp, 3, 100);
  CHECK(mid.code() == errc::invalid_argument);
  CHECK_THAT(mid.message(), Catch::Contains("not a record boundary"));
  CHECK(s->read({"t", 9}, 0, 1).code() == errc::not_found);
}

TEST_CASE("partition store: next_record finds the first record at or after any offset", "[partition_store]") {
  store_under_test s(GENERATE("memory", "file"));
  INFO(s.kind);
  REQUIRE(s->ensure_topic("t", 1));
  topic_partition tp{"t", 0};
  // Many small records (more than one index step of the file log) and one larger than the file log's read chunk.
  std::vector<record> small;
  for (int i = 0; i < 3000; ++i) small.push_back(rec("value-" + std::to_string(i)));
  auto offs = s->append(tp, small);
  REQUIRE(offs);
  auto big = s->append(tp, {rec(std::string(200 * 1024, 'x'))});
  REQUIRE(big);
  auto last = s->append(tp, {rec("last")});
  REQUIRE(last);
  const std::uint64_t end = *s->end_offset(tp);

  CHECK(*s->next_record(tp, 0) == 0);
  for (std::size_t i : {std::size_t{1}, std::size_t{1500}, std::size_t{2999}}) {
    CHECK(*s->next_record(tp, (*offs)[i]) == (*offs)[i]);             // a boundary: itself
    CHECK(*s->next_record(tp, (*offs)[i] - 1) == (*offs)[i]);         // the last byte of the record before
    CHECK(*s->next_record(tp, (*offs)[i - 1] + 1) == (*offs)[i]);     // just inside the record before
  }
  CHECK(*s->next_record(tp, (*offs)[2999] + 1) == (*big)[0]);
  CHECK(*s->next_record(tp, (*big)[0] + 1) == (*last)[0]);           // inside the large record
  CHECK(*s->next_record(tp, (*big)[0] + 150 * 1024) == (*last)[0]);
  CHECK(*s->next_record(tp, (*last)[0] + 1) == end);                 // inside the last record: the end
  CHECK(*s->next_record(tp, end) == end);
  auto past = s->next_record(tp, end + 1);
  CHECK(past.code() == errc::invalid_argument);
  CHECK_THAT(past.message(), Catch::Contains("past the end offset"));
  CHECK(s->next_record({"t", 9}, 0).code() == errc::not_found);
  // What it finds reads: a read from there starts with that record.
  auto r = s->read(tp, *s->next_record(tp, (*offs)[10] + 2), 1);
  REQUIRE(r);
  CHECK(decode_frames(r->bytes.view(), (*offs)[11])[0].value == "value-11");
}

TEST_CASE("partition store: a removed topic is gone, and one made again under its name starts empty",
          "[partition_store]") {
  store_under_test s(GENERATE("memory", "file"));
  INFO(s.kind);
  REQUIRE(s->ensure_topic("t", 2));
  REQUIRE(s->append({"t", 0}, {rec("old")}));
  REQUIRE(s->ensure_topic("keep", 1));
  REQUIRE(s->remove_topic("t"));
  CHECK(s->partition_count("t").code() == errc::not_found);
  CHECK(s->read({"t", 0}, 0, 100).code() == errc::not_found);
  CHECK(s->append({"t", 0}, {rec("late")}).code() == errc::not_found);
  CHECK(s->remove_topic("t").code() == errc::not_found);
  CHECK(s->topics() == std::vector<std::string>{"keep"});
  REQUIRE(s->ensure_topic("t", 1));
  CHECK(*s->end_offset({"t", 0}) == 0);
  REQUIRE(s->append({"t", 0}, {rec("new")}));
  auto r = s->read({"t", 0}, 0, 100);
  REQUIRE(r);
  CHECK(decode_frames(r->bytes.view(), 0)[0].value == "new");
}

TEST_CASE("file partition store: a removal is durable, and one a stop cut short is finished at the next open",
          "[partition_store]") {
  test::temp_dir dir;
  {
    auto s = open_file_partition_store({dir.path(), fsync_policy::never, 1000, default_logger()});
    REQUIRE(s);
    REQUIRE((*s)->ensure_topic("gone", 2));
    REQUIRE((*s)->ensure_topic("kept", 1));
    REQUIRE((*s)->remove_topic("gone"));
  }
  // As a stop between the rename and the removal of the files would leave it.
  REQUIRE(posix::make_directories(dir.path() + "/topics/+removed+cut+1"));
  std::ofstream(dir.path() + "/topics/+removed+cut+1/0.log") << "old bytes";
  auto s = open_file_partition_store({dir.path(), fsync_policy::never, 1000, default_logger()});
  REQUIRE(s);
  CHECK((*s)->topics() == std::vector<std::string>{"kept"});
  CHECK(*posix::list_directory(dir.path() + "/topics") == std::vector<std::string>{"kept"});
}

TEST_CASE("partition store: append_at writes only at the expected offset", "[partition_store]") {
  store_under_test s(GENERATE("memory", "file"));
  INFO(s.kind);
  REQUIRE(s->ensure_topic("t", 1));
  topic_partition tp{"t", 0};
  std::string batch = encode_frame(rec("one")) + encode_frame(rec("two"));
  std::uint64_t end = 0;
  REQUIRE(s->append_at(tp, 0, batch, &end));
  CHECK(end == batch.size());

  SECTION("a retried batch is refused with the real end offset and not written twice") {
    std::uint64_t actual = 0;
    auto again = s->append_at(tp, 0, batch, &actual);
    CHECK(again.code() == errc::conflict);
    CHECK(actual == batch.size());
    CHECK_THAT(again.message(), Catch::Contains("actual end offset " + std::to_string(batch.size())));
    CHECK(*s->end_offset(tp) == batch.size());
  }
  SECTION("a batch that is not whole valid frames is refused and nothing is written") {
    std::string torn = batch.substr(0, batch.size() - 1);
    CHECK(s->append_at(tp, end, torn).code() == errc::invalid_argument);
    std::string flipped = batch;
    flipped[12] ^= 1;
    CHECK(s->append_at(tp, end, flipped).code() == errc::invalid_argument);
    CHECK(*s->end_offset(tp) == end);
  }
  SECTION("appended frames keep their offsets and are readable") {
    auto r = s->read(tp, encode_frame(rec("one")).size(), 1000);
    REQUIRE(r);
    CHECK(decode_frames(r->bytes.view(), 0)[0].value == "two");
  }
}

TEST_CASE("partition store: encoded records are appended as they are, at the offsets their starts give",
          "[partition_store]") {
  store_under_test s(GENERATE("memory", "file", "append only"));
  INFO(s.kind);
  REQUIRE(s->ensure_topic("t", 1));
  topic_partition tp{"t", 0};
  REQUIRE(s->append(tp, {rec("before")}));
  const std::uint64_t base = *s->end_offset(tp);
  // A Kafka batch's frames: stamped, numbered in the batch, one with headers, one with a null value.
  encoded_records batch;
  std::uint32_t distance = 0;
  for (std::uint32_t i = 0; i < 3; ++i) {
    record r = rec(std::string(10 + i, 'v'), i == 1 ? std::nullopt : std::optional<std::string>("k"));
    r.producer = producer_stamp{7, 2, 40 + i};
    r.batch = batch_position{i, 3, distance};
    if (i == 0) r.headers = std::string("\x02\x02h\x02x", 5);
    if (i == 2) r.attributes |= attr_null_value | attr_transactional;
    distance += static_cast<std::uint32_t>(frame_size(r));
    batch.add(r);
  }
  auto offsets = s->append_encoded(tp, batch);
  REQUIRE(offsets);
  REQUIRE(offsets->size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK((*offsets)[i] == base + batch.starts[i]);
  CHECK(*s->end_offset(tp) == base + batch.bytes.size());
  auto read = s->read(tp, base, 1 << 20);
  REQUIRE(read);
  CHECK(read->bytes.view() == batch.bytes);  // byte for byte, whichever way the store wrote them
  const auto views = decode_frames(read->bytes.view(), base);
  REQUIRE(views.size() == 3);
  for (std::uint32_t i = 0; i < 3; ++i) CHECK(kafka_offset(views[i]) == base + i);
  CHECK(views[2].producer == producer_stamp{7, 2, 42});
  CHECK(s->append_encoded({"t", 9}, batch).code() == errc::not_found);
}

TEST_CASE("partition store: reads that must not wait return what read() does for bytes in memory",
          "[partition_store]") {
  store_under_test s(GENERATE("memory", "file", "append only"));
  INFO(s.kind);
  if (s.kind == "file" && !test::nowait_reads(s.dir.path())) {
    WARN("this file system does not read with RWF_NOWAIT: the file store refuses every read that must not wait");
    return;
  }
  REQUIRE(s->ensure_topic("t", 1));
  topic_partition tp{"t", 0};
  auto offsets = s->append(tp, {rec("one"), rec("two", "k"), rec("three")});
  REQUIRE(offsets);
  auto cached = s->read_cached(tp, (*offsets)[1], 1 << 20);
  REQUIRE(cached);
  auto plain = s->read(tp, (*offsets)[1], 1 << 20);
  REQUIRE(plain);
  CHECK(cached->bytes.view() == plain->bytes.view());
  CHECK(cached->next_offset == plain->next_offset);
  CHECK(*s->next_record_cached(tp, (*offsets)[1] + 1) == (*offsets)[2]);
  CHECK(s->read_cached({"t", 9}, 0, 1).code() == errc::not_found);
}

TEST_CASE("partition store: concurrent appends are atomic and offsets unique", "[partition_store]") {
  store_under_test s(GENERATE("memory", "file"));
  INFO(s.kind);
  REQUIRE(s->ensure_topic("t", 1));
  topic_partition tp{"t", 0};
  constexpr int threads = 4, per_thread = 300;
  std::vector<std::vector<std::uint64_t>> got(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        auto o = s->append(tp, {rec("t" + std::to_string(t) + "-" + std::to_string(i)), rec("pair")});
        if (o) got[t].push_back((*o)[0]);
      }
    });
  for (auto& w : workers) w.join();
  auto all = s->read(tp, 0, 1 << 30);
  REQUIRE(all);
  auto views = decode_frames(all->bytes.view(), 0);
  REQUIRE(views.size() == threads * per_thread * 2);
  // Each append's two records are adjacent, and each thread's values are in its own order.
  std::map<std::uint64_t, std::size_t> index;
  for (std::size_t i = 0; i < views.size(); ++i) index[views[i].offset] = i;
  for (int t = 0; t < threads; ++t) {
    REQUIRE(got[t].size() == per_thread);
    for (int i = 0; i < per_thread; ++i) {
      std::size_t at = index.at(got[t][i]);
      CHECK(views[at].value == "t" + std::to_string(t) + "-" + std::to_string(i));
      CHECK(views[at + 1].value == "pair");
    }
  }
}
