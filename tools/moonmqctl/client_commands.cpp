// moonmqctl's subcommands about what the brokers coordinate for clients: consumer groups and transactions. The lists
// are the whole cluster's (the broker asked asks every peer; `--local`: its own only); `describe` asks the group's or
// transaction's coordinator, wherever it is (the broker asked forwards).
#include <rapidjson/document.h>
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <string>

#include "commands.hpp"
#include "table.hpp"

namespace moonmq::ctl {

namespace {

/// "topic-partition, …" of an array of {"topic","partition"}.
std::string partition_list(const rapidjson::Value& list) {
  std::string out;
  for (const auto& p : list.GetArray()) out += (out.empty() ? "" : ", ") + str(p, "topic") + "-" + str(p, "partition");
  return out.empty() ? "-" : out;
}

/// The brokers of a cluster-wide list that did not answer, on stderr: the list is missing what they coordinate.
void warn_unanswered(const rapidjson::Document& d) {
  for (const auto& b : array(d, "brokers").GetArray())
    if (!flag(b, "answered"))
      std::cerr << "warning: " << str(b, "id") << " did not answer ("
                << (b.HasMember("error") ? str(b["error"], "message") : std::string("no reason given"))
                << "); what it coordinates is not listed\n";
}

}  // namespace

void add_groups(CLI::App& app, const options& o, runner& run) {
  auto* groups = app.add_subcommand("groups", "consumer groups, each with its coordinator, from every broker");
  auto local = std::make_shared<bool>(false);
  groups->add_flag("--local", *local, "only the groups the broker asked coordinates");
  auto group_id = std::make_shared<std::string>();
  auto* describe = groups->add_subcommand("describe", "one group, from its coordinator: members and assignment");
  describe->add_option("group", *group_id, "the group id")->required();
  describe->callback([&o, &run, group_id] {
    run = [&o, group_id](broker_client& c) {
      return show(o, c.get("/v1/groups/" + encoded(*group_id)), [](const rapidjson::Document& d) {
        std::cout << "group " << str(d, "group") << ", coordinator " << str(d, "coordinator") << ", epoch "
                  << str(d, "epoch") << "\n";
        table t({"MEMBER", "EPOCH", "BROKER", "PARTITIONS"});
        for (const auto& m : array(d, "members").GetArray())
          t.add({str(m, "member_id"), str(m, "member_epoch"), str(m, "broker"), partition_list(array(m, "assignment"))});
        std::cout << (t.empty() ? std::string("no members\n") : t.render());
        for (const auto& u : array(d, "unassigned").GetArray())
          std::cout << "unassigned " << str(u, "topic") << "-" << str(u, "partition") << " (on " << str(u, "owner")
                    << "): " << str(u, "reason") << "\n";
      });
    };
  });
  groups->callback([&o, &run, describe, local] {
    if (describe->parsed()) return;
    if (*local) {
      run = [&o](broker_client& c) {
        return show(o, c.get("/v1/groups"), [](const rapidjson::Document& d) {
          std::cout << "groups coordinated by " << str(d, "coordinator") << ":\n";
          for (const auto& g : array(d, "groups").GetArray()) std::cout << "  " << g.GetString() << "\n";
          if (array(d, "groups").Empty()) std::cout << "  (none)\n";
        });
      };
      return;
    }
    run = [&o](broker_client& c) {
      return show(o, c.get("/v1/groups?scope=cluster"), [](const rapidjson::Document& d) {
        table t({"GROUP", "COORDINATOR"});
        for (const auto& g : array(d, "groups").GetArray()) t.add({str(g, "group"), str(g, "coordinator")});
        std::cout << (t.empty() ? std::string("no groups\n") : t.render());
        warn_unanswered(d);
      });
    };
  });
}

void add_transactions(CLI::App& app, const options& o, runner& run) {
  auto* transactions =
      app.add_subcommand("transactions", "transactional ids, each with its coordinator and state, from every broker");
  auto local = std::make_shared<bool>(false);
  transactions->add_flag("--local", *local, "only the transactional ids the broker asked coordinates");
  auto tid = std::make_shared<std::string>();
  auto* describe =
      transactions->add_subcommand("describe", "one transactional id, from its coordinator: state and partitions");
  describe->add_option("transactional_id", *tid, "the transactional id")->required();
  describe->callback([&o, &run, tid] {
    run = [&o, tid](broker_client& c) {
      return show(o, c.get("/v1/transactions/" + encoded(*tid)), [](const rapidjson::Document& d) {
        std::cout << "transactional id " << str(d, "transactional_id") << ", coordinator " << str(d, "coordinator")
                  << " (epoch " << str(d, "coordinator_epoch") << ")\n"
                  << "state " << str(d, "state") << ", producer " << str(d, "producer_id") << " epoch "
                  << str(d, "producer_epoch") << ", age " << str(d, "age_ms") << " ms\n"
                  << "partitions: " << partition_list(array(d, "partitions")) << "\n";
        if (!str(d, "reason").empty()) std::cout << "aborted by its coordinator: " << str(d, "reason") << "\n";
      });
    };
  });
  transactions->callback([&o, &run, describe, local] {
    if (describe->parsed()) return;
    const bool cluster = !*local;
    run = [&o, cluster](broker_client& c) {
      return show(o, c.get(cluster ? "/v1/transactions?scope=cluster" : "/v1/transactions"),
                  [cluster](const rapidjson::Document& d) {
                    table t({"TRANSACTIONAL ID", "COORDINATOR", "STATE", "PRODUCER", "EPOCH", "PARTITIONS"});
                    for (const auto& x : array(d, "transactions").GetArray())
                      t.add({str(x, "transactional_id"), cluster ? str(x, "coordinator") : str(d, "coordinator"),
                             str(x, "state"), str(x, "producer_id"), str(x, "producer_epoch"),
                             std::to_string(array(x, "partitions").Size())});
                    if (!cluster)
                      std::cout << "coordinator " << str(d, "coordinator") << " (epoch " << str(d, "coordinator_epoch")
                                << ")\n";
                    std::cout << (t.empty() ? std::string("no transactions\n") : t.render());
                    if (cluster) warn_unanswered(d);
                  });
    };
  });
}

}  // namespace moonmq::ctl
