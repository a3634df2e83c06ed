// moonmqctl's subcommands, one add_ function each: it registers the subcommand on `app` with its options and help,
// and a callback that, once parsing has chosen the subcommand, sets `run` to the request to make.
//
// `o` and `run` are main's and outlive the parse; the callbacks hold them by reference, as `o` is only filled in by
// parsing. A subcommand's own option values live in a shared_ptr that its callbacks hold, as they outlive add_.
#pragma once

#include <functional>

#include "broker_client.hpp"
#include "output.hpp"

namespace CLI {
class App;
}

namespace moonmq::ctl {

/// The request a subcommand makes once the client exists; returns the exit status.
using runner = std::function<int(broker_client&)>;

// cluster_commands.cpp
void add_status(CLI::App& app, const options& o, runner& run);
void add_brokers(CLI::App& app, const options& o, runner& run);
void add_partitions(CLI::App& app, const options& o, runner& run);
void add_loads(CLI::App& app, const options& o, runner& run);
void add_raft(CLI::App& app, const options& o, runner& run);

// topic_commands.cpp
void add_topics(CLI::App& app, const options& o, runner& run);

// move_commands.cpp
void add_plan(CLI::App& app, const options& o, runner& run);
void add_move(CLI::App& app, const options& o, runner& run);
void add_moves(CLI::App& app, const options& o, runner& run);
void add_cancel(CLI::App& app, const options& o, runner& run);
void add_throttle(CLI::App& app, const options& o, runner& run);

// balance_commands.cpp
void add_balancer(CLI::App& app, const options& o, runner& run);
void add_drain(CLI::App& app, const options& o, runner& run);
void add_undrain(CLI::App& app, const options& o, runner& run);
void add_reclaim(CLI::App& app, const options& o, runner& run);

// client_commands.cpp
void add_groups(CLI::App& app, const options& o, runner& run);
void add_transactions(CLI::App& app, const options& o, runner& run);

}  // namespace moonmq::ctl
