// migration: moves a partition (1 GiB by default) between two moonmqd on loopback and reports MB/s, next to a plain
// copy of the same bytes in the same run: file -> loopback TCP -> file, with the same batch size (BatchBytes).
//
//   migration [MIB] [--tls]     default 1024; --tls: mutual TLS between the brokers (the plain copy stays plain)
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rapidjson/document.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include "moonmq/storage/record.hpp"
#include "support/certificates.hpp"
#include "support/daemon_process.hpp"

using namespace moonmq;
using namespace moonmq::test;

namespace {

constexpr std::size_t batch = 256 * 1024;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Writes a partition log of about `bytes` of 1 KiB records straight into b1's data directory.
std::uint64_t write_partition(const std::string& data_dir, std::uint64_t bytes) {
  std::string dir = data_dir + "/topics/bench";
  std::system(("mkdir -p '" + dir + "'").c_str());
  std::ofstream(dir + "/topic.json") << "{\"partitions\":1}";
  std::ofstream log(dir + "/0.log", std::ios::binary);
  std::string chunk;
  storage::record r{std::nullopt, std::string(1024, 'm'), 1, 0};
  while (chunk.size() < (4u << 20)) storage::encode_frame(r, chunk);
  std::uint64_t written = 0;
  while (written < bytes) {
    log.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    written += chunk.size();
  }
  return written;
}

/// The plain baseline: read `path` in `batch` chunks, send over loopback TCP, write to `out` on the other side.
double plain_copy(const std::string& path, const std::string& out) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
  ::listen(listener, 1);
  std::thread receiver([&] {
    int s = ::accept(listener, nullptr, nullptr);
    FILE* f = std::fopen(out.c_str(), "wb");
    std::vector<char> buf(batch);
    for (;;) {
      ssize_t n = ::recv(s, buf.data(), buf.size(), 0);
      if (n <= 0) break;
      std::fwrite(buf.data(), 1, static_cast<std::size_t>(n), f);
    }
    std::fflush(f);
    ::fdatasync(fileno(f));
    std::fclose(f);
    ::close(s);
  });
  auto t0 = std::chrono::steady_clock::now();
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  FILE* f = std::fopen(path.c_str(), "rb");
  std::vector<char> buf(batch);
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) {
    std::size_t sent = 0;
    while (sent < n) sent += static_cast<std::size_t>(::send(s, buf.data() + sent, n - sent, 0));
  }
  std::fclose(f);
  ::shutdown(s, SHUT_WR);
  receiver.join();
  double sec = seconds_since(t0);
  ::close(s);
  ::close(listener);
  return sec;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  std::uint64_t mib = 1024;
  bool tls = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--tls")
      tls = true;
    else
      mib = std::strtoull(argv[i], nullptr, 10);
  }
  temp_dir dir;
  std::optional<certificates> certs;
  if (tls) certs = make_certificates(dir.path());
  auto cluster = [&](const std::string& id) {
    return "\"BatchBytes\": " + std::to_string(batch) + (certs ? ", " + mutual_tls_section(*certs, id) : std::string());
  };
  moonmqd_process b1("b1", dir.path()), b2("b2", dir.path());
  b1.configure({&b1, &b2}, cluster("b1"));
  b2.configure({&b1, &b2}, cluster("b2"));
  const std::uint64_t bytes = write_partition(b1.data_dir, mib << 20);
  const double plain_s = plain_copy(b1.data_dir + "/topics/bench/0.log", dir.path() + "/plain.out");
  std::remove((dir.path() + "/plain.out").c_str());
  b1.start();
  b2.start();
  auto api = b1.api();
  auto t0 = std::chrono::steady_clock::now();
  auto r = api.Post("/v1/reassignments", R"({"topic":"bench","partition":0,"dest":"b2"})", "application/json");
  if (!r || r->status != 202) {
    std::fprintf(stderr, "migration: could not start the move\n");
    return 1;
  }
  bool ok = false;
  std::string error;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto p = api.Get("/v1/reassignments");
    rapidjson::Document d;
    d.Parse(p->body.c_str());
    const auto& list = d["reassignments"];
    if (list.Size() && list[0]["finished"].GetBool()) {
      ok = list[0]["succeeded"].GetBool();
      error = list[0]["error"].GetString();
      break;
    }
  }
  const double move_s = seconds_since(t0);
  if (!ok) {
    std::fprintf(stderr, "migration: the move failed: %s\n", error.c_str());
    return 1;
  }
  const double mb = static_cast<double>(bytes) / 1e6;
  std::printf(
      "{\"bench\":\"migration\",\"tls\":%s,\"bytes\":%llu,\"batch_bytes\":%zu,\"move_s\":%.3f,\"move_mb_s\":%.1f,"
      "\"plain_tcp_copy_s\":%.3f,\"plain_tcp_copy_mb_s\":%.1f,\"ratio\":%.3f}\n",
      tls ? "true" : "false", static_cast<unsigned long long>(bytes), batch, move_s, mb / move_s, plain_s, mb / plain_s,
      plain_s / move_s);
  return 0;
}
