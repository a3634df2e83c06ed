// moonmqctl: the operator's command line for a MoonMQ cluster. It talks to any broker's client API (every answer it
// prints is cluster-wide unless the command says otherwise). Human tables by default, the brokers' JSON with --json.
//
// Exit status: 0 done; 1 the broker refused or failed the request (its error is printed); 2 a usage mistake;
// 3 the broker could not be reached.
#include <CLI/CLI.hpp>

#include <string>

#include "broker_client.hpp"
#include "commands.hpp"
#include "output.hpp"

int main(int argc, char** argv) {
  using namespace moonmq::ctl;
  options o;
  CLI::App app{"moonmqctl: operate a MoonMQ cluster through any broker's client API"};
  app.set_version_flag("--version", std::string("moonmqctl ") + MOONMQ_VERSION);
  app.add_option("-b,--broker", o.broker, "a broker's client API, host:port")->envname("MOONMQ_BROKER")
      ->capture_default_str();
  app.add_option("-t,--token", o.token, "bearer token (Server.Auth.Tokens)")->envname("MOONMQ_TOKEN");
  app.add_flag("--json", o.json, "print the brokers' JSON instead of tables");
  app.add_option("--timeout", o.timeout, "seconds to wait for an answer")->capture_default_str()->check(
      CLI::Range(1, 3600));
  app.require_subcommand(1);
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
    return app.exit(e) == 0 ? 0 : exit_usage;
  }
  if (!run) return exit_usage;
  broker_client client(o.broker, o.token, o.timeout);
  return run(client);
}
