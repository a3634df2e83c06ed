// kafka_fetch: what a Kafka fetch costs moonmqd per MB, against what it would cost if Kafka batches were stored as
// they arrive, side by side in one run (docs/kafka.md, "Records and offsets": they are converted to the log's frames).
//
// The log: 1 KiB records produced as a librdkafka producer batches them (960 a batch, about 1 MB, idempotent), each
// batch decoded by the Kafka listener's decoder and appended as it appends them, in a file-backed partition log.
// Fetches of 1 MiB each over its last 16 MiB (in the page cache, as a consumer that keeps up finds them), timed:
// - moonmqd: the log's read (one pread, every frame's CRC-32C checked), the frames decoded, and the records encoded as
//   Kafka batches with their CRC (kafka::encode_batches), as the listener encodes a fetch's records;
// - stored batches (the baseline): one pread of as many bytes, copied into a response, as a broker that stores the
//   batches it receives sends them (librdkafka's mock cluster copies; Kafka uses sendfile and copies nothing).
// Five rounds of each in turn over the same bytes; the median per MB of each, and their ratio. The kernel's send of
// the response is the same for both and not counted.
//
//   kafka_fetch [DIR] [MIB]      default: a temporary directory under /var/tmp, 64 MiB
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "bench_dir.hpp"
#include "moonmq/core/byte_buffer.hpp"
#include "moonmq/core/crc32c.hpp"
#include "moonmq/kafka/record_batch.hpp"
#include "moonmq/storage/file_partition_store.hpp"

using namespace moonmq;
using namespace moonmq::storage;

namespace {

using clock_type = std::chrono::steady_clock;

double micros_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "kafka_fetch: %s\n", what.c_str());
  std::exit(1);
}

constexpr std::size_t record_bytes = 1024;
constexpr std::uint32_t batch_records = 960;
constexpr std::size_t fetch_bytes = 1u << 20;

/// One produced batch's bytes, as a client sends them: `batch_records` records of `record_bytes`, the producer's
/// sequence from `sequence`.
std::string produced_batch_bytes(std::uint32_t sequence, std::int64_t timestamp) {
  std::vector<record> records;
  std::uint32_t distance = 0;
  for (std::uint32_t i = 0; i < batch_records; ++i) {
    record r{std::nullopt, std::string(record_bytes, static_cast<char>('a' + (sequence + i) % 26)), timestamp + i, 0};
    r.producer = producer_stamp{7, 0, sequence + i};
    r.batch = batch_position{i, batch_records, distance};
    distance += static_cast<std::uint32_t>(frame_size(r));
    records.push_back(std::move(r));
  }
  const auto frames = encode_records(records);
  std::vector<record_view> views;
  for_each_frame(frames.bytes, 0, [&](const record_view& v) { views.push_back(v); });
  std::string out;
  kafka::encode_batches(views, out);
  // A fetch's batch says where its last frame ends (lastOffsetDelta); a client's says its last record's index, under
  // the CRC (which covers the batch from its attributes, at byte 21, on).
  const auto put_be32 = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out[at + i] = static_cast<char>((v >> (24 - 8 * i)) & 0xff);
  };
  put_be32(23, batch_records - 1);
  put_be32(17, crc32c(out.data() + 21, out.size() - 21));
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  // As moonmqd runs: freed buffers stay with the allocator (daemon/memory_policy.cpp).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  const std::string dir = bench_dir(argc, argv, "kafka_fetch");
  const std::size_t total_mib = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 64;

  auto store = open_file_partition_store({dir, fsync_policy::never, 1000, default_logger()});
  if (!store) die(store.message());
  auto& s = **store;
  if (!s.ensure_topic("bench", 1)) die("ensure_topic");
  const topic_partition tp{"bench", 0};
  std::uint32_t sequence = 0;
  while (*s.end_offset(tp) < total_mib << 20) {
    auto decoded = kafka::decode_produced_batch(produced_batch_bytes(sequence, 1700000000000));
    if (!std::holds_alternative<kafka::produced_batch>(decoded)) die(std::get<kafka::batch_refusal>(decoded).message);
    if (!s.append_encoded(tp, std::get<kafka::produced_batch>(decoded).records)) die("append");
    sequence += batch_records;
  }
  const std::uint64_t end = *s.end_offset(tp);
  std::string path;  // the partition's log file, wherever the store keeps it
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.path().filename() == "0.log") path = e.path().string();
  if (path.empty()) die("no log file under " + dir);
  // The last 16 MiB, from a record's start.
  const auto from = s.next_record(tp, end - std::min<std::uint64_t>(end, 16u << 20));
  if (!from) die(from.message());

  std::vector<double> moon_us_per_mb, stored_us_per_mb;
  std::size_t records_encoded = 0;
  for (int round = 0; round < 5; ++round) {
    double moon_us = 0, stored_us = 0;
    std::size_t moon_bytes = 0, stored_bytes = 0;
    for (std::uint64_t at = *from; at < end;) {
      auto t0 = clock_type::now();
      auto read = s.read(tp, at, fetch_bytes);
      if (!read) die(read.message());
      std::vector<record_view> views;  // sized once, as the fetch front end sizes it
      views.reserve(read->bytes.size() / (frame_header_size + record_bytes) + 1);
      for_each_frame(read->bytes.view(), at, [&](const record_view& v) { views.push_back(v); });
      std::string response;  // encode_batches sizes it
      kafka::encode_batches(views, response);
      moon_us += micros_since(t0);
      moon_bytes += read->bytes.size();
      records_encoded += views.size();
      at = read->next_offset;
    }
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) die("open " + path);
    for (std::uint64_t at = *from; at < end;) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(fetch_bytes, end - at));
      auto t0 = clock_type::now();
      byte_buffer buf(n);  // not zero-filled, as the log's reads
      if (::pread(fd, buf.data(), n, static_cast<off_t>(at)) != static_cast<ssize_t>(n)) die("pread");
      std::string response;
      response.reserve(n + 4096);
      response.append(buf.data(), n);
      stored_us += micros_since(t0);
      stored_bytes += n;
      at += n;
    }
    ::close(fd);
    moon_us_per_mb.push_back(moon_us / (static_cast<double>(moon_bytes) / 1e6));
    stored_us_per_mb.push_back(stored_us / (static_cast<double>(stored_bytes) / 1e6));
  }
  std::system(("rm -rf '" + dir + "'").c_str());
  if (records_encoded == 0) die("no records read");
  const double moon = median(moon_us_per_mb), stored = median(stored_us_per_mb);
  std::printf("kafka_fetch: a 1 MiB fetch of 1 KiB records from the page cache, per MB: moonmqd (read, check each "
              "frame, encode Kafka batches) %.1f us; stored batches (read, copy) %.1f us\n", moon, stored);
  std::printf("{\"bench\":\"kafka_fetch\",\"record_bytes\":%zu,\"batch_records\":%u,\"fetch_bytes\":%zu,"
              "\"moonmqd_us_per_mb\":%.1f,\"stored_batches_us_per_mb\":%.1f,\"ratio\":%.2f}\n",
              record_bytes, batch_records, fetch_bytes, moon, stored, moon / stored);
  return 0;
}
