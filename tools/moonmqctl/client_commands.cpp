// moonmqctl's subcommands about what the broker asked coordinates for clients: consumer groups and transactions.
#include <rapidjson/document.h>
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "commands.hpp"
#include "table.hpp"

namespace moonmq::ctl {

void add_groups(CLI::App& app, const options& o, runner& run) {
  app.add_subcommand("groups", "consumer groups coordinated by the broker asked")->callback([&o, &run] {
    run = [&o](broker_client& c) {
      return show(o, c.get("/v1/groups"), [](const rapidjson::Document& d) {
        std::cout << "groups coordinated by " << str(d, "coordinator") << ":\n";
        for (const auto& g : array(d, "groups").GetArray()) std::cout << "  " << g.GetString() << "\n";
        if (array(d, "groups").Empty()) std::cout << "  (none)\n";
      });
    };
  });
}

void add_transactions(CLI::App& app, const options& o, runner& run) {
  app.add_subcommand("transactions", "transactions coordinated by the broker asked")->callback([&o, &run] {
    run = [&o](broker_client& c) {
      return show(o, c.get("/v1/transactions"), [](const rapidjson::Document& d) {
        table t({"TRANSACTIONAL ID", "STATE", "PRODUCER", "EPOCH", "PARTITIONS"});
        for (const auto& x : array(d, "transactions").GetArray())
          t.add({str(x, "transactional_id"), str(x, "state"), str(x, "producer_id"), str(x, "producer_epoch"),
                 std::to_string(array(x, "partitions").Size())});
        std::cout << "coordinator " << str(d, "coordinator") << " (epoch " << str(d, "coordinator_epoch") << ")\n"
                  << (t.empty() ? std::string("no transactions\n") : t.render());
      });
    };
  });
}

}  // namespace moonmq::ctl
