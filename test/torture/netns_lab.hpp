// A small network for the torture harness: one network namespace per broker (10.77.T.1, .2, ...), each joined by a
// veth pair to a bridge in the harness's own namespace (10.77.T.254, where the clients run). Faults are nftables
// drops in a broker's namespace (a cut link, one-way or both ways; a broker cut off from every peer; random loss)
// and a tbf rate limit on its link (a slow link; this kernel has no netem). Needs root, `ip` and `nft`
// (scripts/install-deps.sh); available() says why not otherwise. Everything it made is removed when it goes away.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace moonmq::test {

class netns_lab {
 public:
  /// Why this machine cannot have namespaces ("" when it can).
  static std::string unavailable_reason() {
    if (::geteuid() != 0) return "not root";
    if (::access("/usr/sbin/ip", X_OK) != 0) return "no /usr/sbin/ip (iproute2)";
    if (::access("/usr/sbin/nft", X_OK) != 0) return "no /usr/sbin/nft (nftables)";
    return "";
  }

  /// Makes `brokers` namespaces; `tag` (e.g. the pid) keeps parallel labs apart.
  netns_lab(int brokers, int tag) : n_(brokers), tag_(std::to_string(tag % 100000)), subnet_(free_subnet(tag % 250)) {
    try {
      must({"ip", "link", "add", bridge(), "type", "bridge"});
      made_bridge_ = true;
      must({"ip", "addr", "add", "10.77." + std::to_string(subnet_) + ".254/24", "dev", bridge()});
      must({"ip", "link", "set", bridge(), "up"});
      for (int i = 1; i <= n_; ++i) {
        must({"ip", "netns", "add", ns(i)});
        made_.push_back(i);
        must({"ip", "link", "add", "mq" + tag_ + "h" + std::to_string(i), "type", "veth", "peer", "name", inner(i)});
        must({"ip", "link", "set", inner(i), "netns", ns(i)});
        must({"ip", "link", "set", "mq" + tag_ + "h" + std::to_string(i), "master", bridge(), "up"});
        must({"ip", "-n", ns(i), "addr", "add", address(i) + "/24", "dev", inner(i)});
        must({"ip", "-n", ns(i), "link", "set", inner(i), "up"});
        must({"ip", "-n", ns(i), "link", "set", "lo", "up"});
        must({"ip", "netns", "exec", ns(i), "nft", "add", "table", "inet", "mq"});
        must({"ip", "netns", "exec", ns(i), "nft", "add chain inet mq out { type filter hook output priority 0 ; }"});
        must({"ip", "netns", "exec", ns(i), "nft", "add chain inet mq in { type filter hook input priority 0 ; }"});
      }
    } catch (...) {
      tear_down();
      throw;
    }
  }
  ~netns_lab() { tear_down(); }
  netns_lab(const netns_lab&) = delete;
  netns_lab& operator=(const netns_lab&) = delete;

  std::string ns(int i) const { return "mq" + tag_ + "b" + std::to_string(i); }
  std::string address(int i) const { return "10.77." + std::to_string(subnet_) + "." + std::to_string(i); }

  /// Drops what `from` sends to `to`; with `both`, also the way back.
  void cut(int from, int to, bool both) {
    must({"ip", "netns", "exec", ns(from), "nft", "add", "rule", "inet", "mq", "out", "ip", "daddr", address(to), "drop"});
    if (both)
      must({"ip", "netns", "exec", ns(to), "nft", "add", "rule", "inet", "mq", "out", "ip", "daddr", address(from), "drop"});
  }
  /// Cuts `i` off from every other broker, both ways (the clients still reach it).
  void isolate(int i) {
    for (int j = 1; j <= n_; ++j)
      if (j != i) cut(i, j, true);
  }
  /// Drops `percent` of what `i` sends and receives, at random.
  void lossy(int i, int percent) {
    for (const char* chain : {"out", "in"})
      must({"ip", "netns", "exec", ns(i), "nft", "add", "rule", "inet", "mq", chain, "numgen", "random", "mod", "100",
            "<", std::to_string(percent), "drop"});
  }
  /// Limits what `i` sends to `kbit` kbit/s.
  void slow(int i, int kbit) {
    must({"ip", "netns", "exec", ns(i), "tc", "qdisc", "replace", "dev", inner(i), "root", "tbf", "rate",
          std::to_string(kbit) + "kbit", "burst", "32kbit", "latency", "400ms"});
  }
  /// Every link whole again.
  void heal() {
    for (int i = 1; i <= n_; ++i) {
      must({"ip", "netns", "exec", ns(i), "nft", "flush", "table", "inet", "mq"});
      run_process({"/usr/sbin/ip", "netns", "exec", ns(i), "tc", "qdisc", "del", "dev", inner(i), "root"});
    }
  }

 private:
  /// The first 10.77.S.0/24 from `first` on that no interface here has an address in (another lab may be running).
  static int free_subnet(int first) {
    const std::string addresses = run_process({"/usr/sbin/ip", "-o", "-4", "addr", "show"}).out;
    for (int k = 0; k < 250; ++k) {
      const int s = (first + k) % 250;
      if (addresses.find("10.77." + std::to_string(s) + ".") == std::string::npos) return s;
    }
    throw std::runtime_error("netns: every 10.77.S.0/24 is in use");
  }
  std::string bridge() const { return "mq" + tag_ + "br"; }
  std::string inner(int i) const { return "mq" + tag_ + "n" + std::to_string(i); }

  static void must(std::vector<std::string> argv) {
    if (argv[0] == "ip") argv[0] = "/usr/sbin/ip";
    auto r = run_process(argv);
    if (r.exit_code != 0) {
      std::string cmd;
      for (const auto& a : argv) cmd += a + " ";
      throw std::runtime_error("netns: " + cmd + "failed: " + r.err);
    }
  }

  void tear_down() {
    for (int i : made_) run_process({"/usr/sbin/ip", "netns", "del", ns(i)});  // takes its veth pair along
    made_.clear();
    if (made_bridge_) run_process({"/usr/sbin/ip", "link", "del", bridge()});
    made_bridge_ = false;
  }

  int n_;
  std::string tag_;
  int subnet_;
  bool made_bridge_ = false;
  std::vector<int> made_;
};

}  // namespace moonmq::test
