// moonmqd: one MoonMQ broker. `moonmqd --config PATH` (default ./appsettings.json); `--check-config` validates the
// configuration and exits; `--version` prints the version. A test build also reads MOONMQ_FAULTS (fault points).
// Exit status: 0 after SIGTERM/SIGINT and a clean stop (or a valid configuration with --check-config); 2 when it
// cannot start, with the cause on stderr: a bad configuration or command line (naming the key or the environment
// variable), an address in use, a data directory another moonmqd holds, unreadable or corrupt state.
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstring>
#include <iostream>
#include <string>

#include "broker.hpp"
#include "daemon_logger.hpp"
#include "memory_policy.hpp"
#include "moonmq/cluster/settings_loader.hpp"
#include "moonmq/core/fault_points.hpp"

int main(int argc, char** argv) {
  std::string config_path = "./appsettings.json";
  bool check_only = false;
  CLI::App app{"moonmqd: one MoonMQ broker"};
  app.add_option("--config", config_path, "the broker's appsettings.json")->capture_default_str();
  app.add_flag("--check-config", check_only, "validate the configuration and exit (0: valid, 2: not)");
  app.set_version_flag("--version", std::string("moonmqd ") + MOONMQ_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help and --version are not errors
  }
  auto config = moonmq::cluster::load_settings(config_path, moonmq::cluster::process_environment());
  if (!config) {
    std::cerr << "moonmqd: " << config.message() << "\n";
    return 2;
  }
  for (const auto& name : moonmq::cluster::unused_environment())
    std::cerr << "moonmqd: warning: environment variable " << name
              << " configures nothing (settings are MOONMQ_Server__Key__Subkey, with two underscores between keys)\n";
  if (check_only) {
    std::cout << "moonmqd: " << config_path << " is valid\n";
    return 0;
  }
  // Test builds only (docs/fault-points.md): a spec this build cannot honour is a start-up mistake.
  if (auto f = moonmq::faults::configure_from_env(); !f) {
    std::cerr << "moonmqd: " << f.message() << "\n";
    return 2;
  }

  const std::string memory = moonmq::daemon::keep_freed_memory();  // before any thread starts

  // Signals are taken by one thread with sigwait, so every other thread starts with them blocked.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto log = std::make_shared<moonmq::daemon::daemon_logger>(moonmq::daemon::parse_log_level(config->logging.level),
                                                              config->logging.format == "json");
  log->info("moonmqd", "allocator: " + memory + " (docs/operations.md, \"Memory\")");
  auto b = moonmq::daemon::broker::start(*config, log);
  if (!b) {
    log->error("moonmqd", "cannot start: " + b.message());
    return 2;
  }
  int sig = 0;
  sigwait(&stop_signals, &sig);
  log->info("moonmqd", std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") + ", stopping");
  (*b)->stop();
  log->info("moonmqd", "stopped cleanly");
  return 0;
}
