// partition_log: append and read throughput of the file-backed partition log against plain write()/read() of the
// same bytes to a file, side by side in one run.
//
// Appends: 1 KiB records, one record per append (one pwrite each, as a producer's acknowledged record needs), with
// fsync=interval (the default; printed first) and fsync=never; the baseline write()s the same frame bytes, one
// write() per record. Both sides' timings end with one fdatasync, so each measures bytes made durable. Reads:
// sequential, 1 MiB per call, page cache warm for both. Each side runs three times, alternating; the best run of
// each is printed.
//
//   partition_log [DIR] [TOTAL_MIB]      default: a temporary directory under /var/tmp, 256 MiB
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_dir.hpp"
#include "moonmq/storage/file_partition_store.hpp"

using namespace moonmq;
using namespace moonmq::storage;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void die(const std::string& what) {
  std::fprintf(stderr, "partition_log: %s\n", what.c_str());
  std::exit(1);
}

struct figures {
  double append_mbps = 0;
  double read_mbps = 0;
};

figures run_plain(const std::string& path, const std::string& frame, std::size_t count) {
  figures f;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("open " + path);
  auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < count; ++i)
    if (::write(fd, frame.data(), frame.size()) != static_cast<ssize_t>(frame.size())) die("write");
  ::fdatasync(fd);  // both sides end with the bytes on disk
  double s = seconds_since(t0);
  ::close(fd);
  const double mb = static_cast<double>(frame.size() * count) / 1e6;
  f.append_mbps = mb / s;
  fd = ::open(path.c_str(), O_RDONLY);
  std::vector<char> buf(1 << 20);
  std::size_t total = 0;
  t0 = std::chrono::steady_clock::now();
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n <= 0) break;
    total += static_cast<std::size_t>(n);
  }
  s = seconds_since(t0);
  ::close(fd);
  if (total != frame.size() * count) die("plain read came up short");
  f.read_mbps = mb / s;
  return f;
}

figures run_log(const std::string& dir, const record& rec, std::size_t count, fsync_policy policy) {
  figures f;
  std::system(("rm -rf '" + dir + "'").c_str());
  auto store = open_file_partition_store({dir, policy, 1000, default_logger()});
  if (!store) die(store.message());
  auto& s = **store;
  if (!s.ensure_topic("bench", 1)) die("ensure_topic");
  topic_partition tp{"bench", 0};
  const std::vector<record> one{rec};
  auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < count; ++i)
    if (!s.append(tp, one)) die("append");
  if (!s.sync(tp)) die("sync");  // both sides end with the bytes on disk
  double sec = seconds_since(t0);
  const double mb = static_cast<double>(frame_size(rec) * count) / 1e6;
  f.append_mbps = mb / sec;
  std::uint64_t at = 0, end = *s.end_offset(tp);
  t0 = std::chrono::steady_clock::now();
  while (at < end) {
    auto r = s.read(tp, at, 1 << 20);
    if (!r) die(r.message());
    at = r->next_offset;
  }
  sec = seconds_since(t0);
  f.read_mbps = mb / sec;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = bench_dir(argc, argv, "partition_log");
  const std::size_t total_mib = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 256;
  const record rec{std::nullopt, std::string(1024, 'm'), 1700000000000, 0};
  const std::string frame = encode_frame(rec);
  const std::size_t count = total_mib * 1024 * 1024 / frame.size();

  figures plain, interval, never;
  auto keep_best = [](figures& best, const figures& f) {
    best.append_mbps = std::max(best.append_mbps, f.append_mbps);
    best.read_mbps = std::max(best.read_mbps, f.read_mbps);
  };
  for (int rep = 0; rep < 3; ++rep) {
    keep_best(plain, run_plain(dir + "/plain.bin", frame, count));
    keep_best(interval, run_log(dir + "/log", rec, count, fsync_policy::interval));
    keep_best(never, run_log(dir + "/log", rec, count, fsync_policy::never));
  }
  std::system(("rm -rf '" + dir + "'").c_str());
  for (auto [name, f] : {std::pair{"interval", interval}, std::pair{"never", never}})
    std::printf(
        "{\"bench\":\"partition_log\",\"op\":\"append\",\"record_bytes\":1024,\"records\":%zu,\"fsync\":\"%s\","
        "\"log_mb_s\":%.1f,\"plain_write_mb_s\":%.1f,\"ratio\":%.3f}\n",
        count, name, f.append_mbps, plain.append_mbps, f.append_mbps / plain.append_mbps);
  std::printf(
      "{\"bench\":\"partition_log\",\"op\":\"read\",\"record_bytes\":1024,\"records\":%zu,\"chunk_bytes\":1048576,"
      "\"log_mb_s\":%.1f,\"plain_read_mb_s\":%.1f,\"ratio\":%.3f}\n",
      count, interval.read_mbps, plain.read_mbps, interval.read_mbps / plain.read_mbps);
  return 0;
}
