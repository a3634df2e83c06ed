// moonmqctl: the operator's command line for a MoonMQ cluster. It talks to any broker's client API (every answer it
// prints is cluster-wide unless the command says otherwise). Human tables by default, the brokers' JSON with --json.
//
// Exit status: 0 done; 1 the broker refused or failed the request (its error is printed); 2 a usage mistake;
// 3 the broker could not be reached.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "broker_client.hpp"
#include "commands.hpp"
#include "output.hpp"

namespace {

/// Levenshtein distance, for suggesting the nearest command.
std::size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

/// The first word of the command line that is neither an option nor an option's value: the command asked for.
std::string command_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.empty() || a[0] != '-') return a;
    const bool takes_value = a == "-b" || a == "--broker" || a == "-t" || a == "--token" || a == "--timeout";
    if (takes_value) ++i;
  }
  return {};
}

/// host:port with a port of 1 to 65535 (http:// and a trailing slash allowed, as the client strips them).
std::string check_broker(const std::string& value) {
  std::string a = value;
  if (a.rfind("http://", 0) == 0) a.erase(0, 7);
  while (!a.empty() && a.back() == '/') a.pop_back();
  const auto colon = a.rfind(':');
  if (colon == std::string::npos || colon == 0) return "expected host:port, got '" + value + "'";
  const std::string port = a.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) < 1 || std::stoi(port) > 65535)
    return "expected host:port with a port of 1 to 65535, got '" + value + "'";
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  using namespace moonmq::ctl;
  options o;
  CLI::App app{"moonmqctl: operate a MoonMQ cluster through any broker's client API"};
  app.set_version_flag("--version", std::string("moonmqctl ") + MOONMQ_VERSION);
  app.add_option("-b,--broker", o.broker, "a broker's client API, host:port")->envname("MOONMQ_BROKER")
      ->capture_default_str()->check(CLI::Validator(check_broker, "HOST:PORT"));
  app.add_option("-t,--token", o.token, "bearer token (Server.Auth.Tokens)")->envname("MOONMQ_TOKEN");
  app.add_flag("--json", o.json, "print the brokers' JSON instead of tables");
  app.add_option("--timeout", o.timeout, "seconds to wait for an answer")->capture_default_str()->check(
      CLI::Range(1, 3600));
  app.require_subcommand(1);
  // The global options may come anywhere on the line, before or after the command (`moonmqctl status --json`).
  app.fallthrough();
  app.footer("Exit status: 0 done, 1 refused by the broker, 2 usage mistake, 3 broker unreachable.\n"
             "Environment: MOONMQ_BROKER, MOONMQ_TOKEN.");

  runner run;
  add_status(app, o, run);
  add_brokers(app, o, run);
  add_topics(app, o, run);
  add_partitions(app, o, run);
  add_loads(app, o, run);
  add_plan(app, o, run);
  add_move(app, o, run);
  add_moves(app, o, run);
  add_cancel(app, o, run);
  add_throttle(app, o, run);
  add_balancer(app, o, run);
  add_drain(app, o, run);
  add_undrain(app, o, run);
  add_reclaim(app, o, run);
  add_groups(app, o, run);
  add_transactions(app, o, run);
  add_raft(app, o, run);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    errors_as_json(o.json);
    const std::string word = command_word(argc, argv);
    if (app.get_subcommands().empty() && !word.empty()) {
      // A command that does not exist: named, with the nearest one.
      std::string nearest;
      std::size_t best = SIZE_MAX;
      for (const auto* sub : app.get_subcommands({}))
        if (const auto d = distance(word, sub->get_name()); d < best) {
          best = d;
          nearest = sub->get_name();
        }
      return usage_mistake("unknown command '" + word + "'" +
                           (best <= std::max<std::size_t>(2, word.size() / 3) ? "; did you mean '" + nearest + "'?"
                                                                              : "; moonmqctl --help lists the commands"));
    }
    if (o.json && e.get_exit_code() != 0) return usage_mistake(e.what());
    return app.exit(e) == 0 ? 0 : exit_usage;
  }
  errors_as_json(o.json);
  if (!run) return exit_usage;
  broker_client client(o.broker, o.token, o.timeout);
  return run(client);
}
