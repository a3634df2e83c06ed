// moonmqd: one MoonMQ broker. `moonmqd --config PATH` (default ./appsettings.json).
// Exit status: 0 after SIGTERM/SIGINT and a clean stop; 2 for a bad configuration (the message names the key);
// 1 when the broker cannot start (unreadable or corrupt state, an address in use).
#include <csignal>
#include <cstring>
#include <iostream>
#include <string>

#include "broker.hpp"
#include "daemon_logger.hpp"
#include "moonmq/cluster/settings_loader.hpp"

int main(int argc, char** argv) {
  std::string config_path = "./appsettings.json";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) {
      config_path = argv[++i];
    } else if (a.rfind("--config=", 0) == 0) {
      config_path = a.substr(9);
    } else if (a == "-h" || a == "--help") {
      std::cout << "usage: moonmqd [--config PATH]\n";
      return 0;
    } else {
      std::cerr << "moonmqd: unknown argument " << a << "; usage: moonmqd [--config PATH]\n";
      return 2;
    }
  }
  auto config = moonmq::cluster::load_settings(config_path, moonmq::cluster::process_environment());
  if (!config) {
    std::cerr << "moonmqd: " << config.message() << "\n";
    return 2;
  }

  // Signals are taken by one thread with sigwait, so every other thread starts with them blocked.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto log = std::make_shared<moonmq::daemon::daemon_logger>();
  auto b = moonmq::daemon::broker::start(*config, log);
  if (!b) {
    log->error("moonmqd", "cannot start: " + b.message());
    return 1;
  }
  int sig = 0;
  sigwait(&stop_signals, &sig);
  log->info("moonmqd", std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") + ", stopping");
  (*b)->stop();
  log->info("moonmqd", "stopped cleanly");
  return 0;
}
