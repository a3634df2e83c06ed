// Real moonmqd processes on free loopback ports for multi-process tests. Every process is killed (SIGKILL) and
// reaped when its object goes away, also when a test fails half-way (REQUIRE unwinds through the destructor).
#pragma once

#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/process.hpp"
#include "support/eventually.hpp"

namespace moonmq::test {

/// A loopback port for a daemon to listen on. Ports come from below the kernel's ephemeral range (32768 and up on
/// Linux), so an outgoing connection of this or any other process can never be sitting on one when the daemon binds;
/// each test process walks its own stretch (chosen by pid, so parallel ctest jobs rarely meet) and skips a port that
/// something is listening on.
inline std::uint16_t free_port() {
  constexpr int first = 20000, span = 12000;
  static int next = static_cast<int>((static_cast<unsigned>(::getpid()) * 97u) % span);
  for (int tries = 0; tries < span; ++tries) {
    const auto port = static_cast<std::uint16_t>(first + (next++ % span));
    int s = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    const bool ok = ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(s);
    if (ok) return port;
  }
  throw std::runtime_error("no free loopback port below the ephemeral range");
}

class moonmqd_process {
 public:
  std::string id;
  std::uint16_t api_port = free_port();
  std::uint16_t cluster_port = free_port();
  std::string data_dir;
  std::string config_path;
  std::string log_path;
  /// The moonmqd to run (a benchmark compares another build's against this one).
  std::string binary = MOONMQ_DAEMON_BIN;
  /// RLIMIT_NOFILE for the process (like `ulimit -n`); 0 leaves the test runner's.
  rlim_t open_files_limit = 0;
  /// MOONMQ_FAULTS for the next start() (fault points; empty: none).
  std::string faults;
  /// The signal that ended the process when start() saw it exit before it was healthy (0: it exited).
  int start_up_signal = 0;
  /// The address both listeners bind and peers and clients use; with `netns`, the process runs in that network
  /// namespace (`ip netns exec`), where `host` is its address.
  std::string host = "127.0.0.1";
  std::string netns;
  /// With a port: configure() gives this broker a Kafka listener there, and names every peer's (Server.Kafka).
  std::uint16_t kafka_port = 0;
  /// Spliced into Server.Kafka (e.g. "\"Tls\": {...}").
  std::string kafka_extra;
  /// false: configure() leaves out the peers' Kafka addresses (Metadata then learns them from the peers).
  bool name_peers_kafka = true;

  moonmqd_process(std::string broker_id, const std::string& base_dir) : id(std::move(broker_id)) {
    data_dir = base_dir + "/" + id;
    config_path = base_dir + "/" + id + ".json";
    log_path = base_dir + "/" + id + ".log";
  }
  ~moonmqd_process() { kill9(); }
  moonmqd_process(const moonmqd_process&) = delete;
  moonmqd_process& operator=(const moonmqd_process&) = delete;

  /// Writes the configuration: `cluster_extra` is spliced into Server.Cluster (e.g. "\"Tls\": {...}").
  void configure(const std::vector<moonmqd_process*>& peers, const std::string& cluster_extra = "",
                 const std::string& server_extra = "", const std::string& token = "e2e-secret") {
    std::string peer_list;
    for (auto* p : peers) {
      if (p == this) continue;
      if (!peer_list.empty()) peer_list += ",";
      peer_list += "{\"Id\":\"" + p->id + "\",\"Address\":\"" + p->host + ":" + std::to_string(p->cluster_port) + "\"";
      if (p->kafka_port && name_peers_kafka) peer_list += ",\"Kafka\":\"" + p->host + ":" + std::to_string(p->kafka_port) + "\"";
      peer_list += "}";
    }
    const std::string kafka =
        kafka_port ? ",\"Kafka\":{\"Host\":\"" + host + "\",\"Port\":" + std::to_string(kafka_port) +
                         (kafka_extra.empty() ? "" : "," + kafka_extra) + "}"
                   : "";
    std::ofstream(config_path) << "{\"Server\":{\"Host\":\"" << host << "\",\"Port\":" << api_port << ",\"DataDir\":\""
                               << data_dir << "\"" << kafka << (server_extra.empty() ? "" : "," + server_extra)
                               << ",\"Cluster\":{\"BrokerId\":\"" << id << "\",\"Host\":\"" << host
                               << "\",\"Port\":" << cluster_port
                               << ",\"Token\":\"" << token << "\",\"PeerTimeout\":3,\"Peers\":[" << peer_list << "]"
                               << (cluster_extra.empty() ? "" : "," + cluster_extra) << "}}}";
  }

  void start() {
    std::fflush(nullptr);  // a child would write the runner's unflushed output again
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      // Output to the log, never to the runner's pipes (a leaked daemon would hold them open); and gone with its
      // parent, whatever way the parent ends.
      if (!freopen(log_path.c_str(), "a", stderr) || !freopen(log_path.c_str(), "a", stdout)) _exit(127);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      closefrom(3);  // never hold the test runner's pipes open after it ends
      if (open_files_limit) {
        rlimit l{open_files_limit, open_files_limit};
        if (setrlimit(RLIMIT_NOFILE, &l) != 0) _exit(126);
      }
      if (faults.empty())
        unsetenv("MOONMQ_FAULTS");
      else
        setenv("MOONMQ_FAULTS", faults.c_str(), 1);
      if (!netns.empty())
        execl("/usr/sbin/ip", "ip", "netns", "exec", netns.c_str(), binary.c_str(), "--config", config_path.c_str(),
              static_cast<char*>(nullptr));
      else
        execl(binary.c_str(), binary.c_str(), "--config", config_path.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    const bool healthy = eventually(
        [&] {
          httplib::Client c(host, api_port);
          c.set_connection_timeout(std::chrono::milliseconds(200));
          if (auto r = c.Get("/v1/health"); r && r->status == 200) return true;
          int status = 0;
          if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            start_up_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
            throw std::runtime_error("moonmqd " + id + " exited at start-up: " + slurp(log_path));
          }
          return false;
        },
        std::chrono::seconds(20));
    if (healthy) return;
    kill9();  // not left running unseen
    throw std::runtime_error("moonmqd " + id + " did not become healthy: " + slurp(log_path));
  }

  /// kill -9: no chance to clean up.
  void kill9() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  /// Waits up to `timeout` for the process to end by itself; true (and reaped) if it did, with the signal that
  /// ended it in `*signal_out` (0: it exited).
  bool wait_for_end(std::chrono::milliseconds timeout, int* signal_out = nullptr) {
    if (pid_ <= 0) return true;
    return eventually(
        [&] {
          int status = 0;
          if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
          pid_ = -1;
          if (signal_out) *signal_out = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
          return true;
        },
        timeout, std::chrono::milliseconds(20));
  }

  /// Sends `sig` (SIGSTOP, SIGCONT, ...) to the running process.
  void send_signal(int sig) const {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  /// The process's resident memory in bytes (VmRSS), 0 when it is not running.
  std::uint64_t resident_bytes() const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; pid_ > 0 && std::getline(status, line);)
      if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
    return 0;
  }

  /// SIGTERM; returns the exit status.
  int terminate() {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  httplib::Client api() const {
    httplib::Client c(host, api_port);
    c.set_read_timeout(std::chrono::seconds(30));
    return c;
  }

 private:
  pid_t pid_ = -1;
};

}  // namespace moonmq::test
