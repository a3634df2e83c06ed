// moonmqctl's subcommands about the cluster as a whole: status, brokers, partitions, loads and raft.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <CLI/CLI.hpp>

#include <cstdint>
#include <iostream>
#include <memory>
#include <set>
#include <string>

#include "commands.hpp"
#include "table.hpp"

namespace moonmq::ctl {

void add_status(CLI::App& app, const options& o, runner& run) {
  app.add_subcommand("status", "the cluster at a glance: brokers, controller, moves, balancer")->callback([&o, &run] {
    run = [&o](broker_client& c) {
      auto brokers = c.get("/v1/brokers");
      if (!brokers.ok()) return failed(brokers);
      auto moves = c.get("/v1/reassignments?active=true");
      auto balancer = c.get("/v1/autobalancer");
      auto partitions = c.get("/v1/partitions");
      rapidjson::Document b, m, a, p;
      b.Parse(brokers.body.c_str());
      // A partition served by more than one broker has two logs in the cluster: worth a non-zero status.
      // So does a stray: a log the topic catalog did not make where it is (never served, kept until reconciled).
      std::set<std::string> twice, strays;
      if (partitions.ok()) {
        p.Parse(partitions.body.c_str());
        for (const auto& x : array(p, "partitions").GetArray())
          if (!str(x, "conflict").empty() && str(x, "conflict").rfind("served by", 0) == 0)
            twice.insert(str(x, "topic") + "-" + str(x, "partition"));
        for (const auto& x : array(p, "strays").GetArray())
          strays.insert(str(x, "topic") + "-" + str(x, "partition") + " on " + str(x, "broker"));
      }
      if (o.json) {
        std::cout << "{\"brokers\":" << brokers.body << ",\"reassignments\":" << (moves.ok() ? moves.body : "null")
                  << ",\"autobalancer\":" << (balancer.ok() ? balancer.body : "null")
                  << ",\"served_twice\":" << twice.size() << ",\"strays\":" << strays.size() << "}\n";
        bool all_up = true;
        for (const auto& x : array(b, "brokers").GetArray()) all_up = all_up && flag(x, "reachable");
        return all_up && twice.empty() && strays.empty() ? 0 : exit_refused;  // as in the table form
      }
      int up = 0, total = 0;
      std::uint64_t bytes = 0, parts = 0;
      for (const auto& x : array(b, "brokers").GetArray()) {
        ++total;
        if (flag(x, "reachable")) ++up;
        bytes += static_cast<std::uint64_t>(num(x, "bytes"));
        parts += static_cast<std::uint64_t>(num(x, "partitions"));
      }
      std::cout << "brokers:     " << up << " of " << total << " reachable (asked " << str(b, "answered_by") << ")\n";
      std::cout << "controller:  " << (str(b, "controller").empty() ? "none" : str(b, "controller")) << "\n";
      std::cout << "partitions:  " << parts << " served, " << human_bytes(static_cast<double>(bytes)) << "\n";
      if (moves.ok()) {
        m.Parse(moves.body.c_str());
        std::cout << "moves:       " << array(m, "reassignments").Size() << " running\n";
      }
      if (balancer.ok()) {
        a.Parse(balancer.body.c_str());
        std::string state = !flag(a, "enabled") ? "off" : flag(a, "paused") ? "paused" : "on";
        if (flag(a, "enabled") && flag(a, "dry_run")) state += " (dry run)";
        if (a.HasMember("satisfied")) state += flag(a, "satisfied") ? ", goals met" : ", goals not met";
        std::cout << "balancer:    " << state << "\n";
      }
      if (!twice.empty()) {
        std::string names;
        for (const auto& n : twice) names += (names.empty() ? "" : ", ") + n;
        std::cout << "WARNING:     " << twice.size() << " partition(s) served by more than one broker (" << names
                  << "): two logs of one partition; see moonmqctl partitions and docs/cluster.md, \"Strays\"\n";
      }
      if (!strays.empty()) {
        std::string names;
        for (const auto& n : strays) names += (names.empty() ? "" : ", ") + n;
        std::cout << "WARNING:     " << strays.size() << " stray log(s) (" << names
                  << "): not served, kept untouched; decide with moonmqctl topics reconcile TOPIC (docs/cluster.md, \"Strays\")\n";
      }
      print_unreachable(b);
      return up == total && twice.empty() && strays.empty() ? 0 : exit_refused;
    };
  });
}

void add_brokers(CLI::App& app, const options& o, runner& run) {
  app.add_subcommand("brokers", "every broker: reachability, partitions and bytes served")->callback([&o, &run] {
    run = [&o](broker_client& c) {
      return show(o, c.get("/v1/brokers"), [](const rapidjson::Document& d) {
        table t({"ID", "ADDRESS", "STATE", "PARTITIONS", "BYTES", "CONTROLLER", "DRAIN"});
        for (const auto& b : array(d, "brokers").GetArray())
          t.add({str(b, "id") + (flag(b, "self") ? " (asked)" : ""), str(b, "address"),
                 flag(b, "reachable") ? "up" : "UNREACHABLE: " + str(b, "error"), str(b, "partitions"),
                 flag(b, "reachable") ? human_bytes(num(b, "bytes")) : "", flag(b, "controller") ? "*" : "",
                 drain_text(b)});
        std::cout << t.render();
      });
    };
  });
}

void add_partitions(CLI::App& app, const options& o, runner& run) {
  struct arguments {
    std::string topic;
  };
  auto args = std::make_shared<arguments>();
  auto* partitions = app.add_subcommand("partitions", "every partition with its owner and size");
  partitions->add_option("--topic", args->topic, "only this topic");
  partitions->callback([&o, &run, args] {
    run = [&o, args](broker_client& c) {
      const answer a = c.get("/v1/partitions" + (args->topic.empty() ? "" : "?topic=" + encoded(args->topic)));
      if (a.ok() && !args->topic.empty()) {
        // A topic no broker serves or holds is an error, not an empty table.
        rapidjson::Document d;
        d.Parse(a.body.c_str(), a.body.size());
        if (!d.HasParseError() && array(d, "partitions").Empty() && array(d, "strays").Empty()) {
          std::string message = "no broker serves or holds a partition of topic '" + args->topic + "'";
          if (!array(d, "unreachable").Empty()) message += " (some brokers did not answer)";
          rapidjson::StringBuffer buf;
          rapidjson::Writer<rapidjson::StringBuffer> w(buf);
          w.StartObject();
          w.Key("error");
          w.String("not_found");
          w.Key("message");
          w.String(message.c_str(), static_cast<rapidjson::SizeType>(message.size()));
          w.EndObject();
          return failed({404, buf.GetString()});
        }
      }
      return show(o, a,
                  [](const rapidjson::Document& d) {
                    table t({"TOPIC", "PARTITION", "OWNER", "SIZE", "OPEN TXN", "NOTE"});
                    for (const auto& p : array(d, "partitions").GetArray())
                      t.add({str(p, "topic"), str(p, "partition"), str(p, "owner"), human_bytes(num(p, "size_bytes")),
                             flag(p, "open_transactions") ? "yes" : "", str(p, "conflict")});
                    for (const auto& p : array(d, "strays").GetArray())
                      t.add({str(p, "topic"), str(p, "partition"), str(p, "broker"), human_bytes(num(p, "size_bytes")),
                             "", "STRAY: not served, kept until reconciled (docs/cluster.md, \"Strays\")"});
                    std::cout << t.render();
                    print_unreachable(d);
                  });
    };
  });
}

void add_loads(CLI::App& app, const options& o, runner& run) {
  auto* loads = app.add_subcommand("loads", "each broker's load per resource, as the balancer's last pass measured it");
  loads->callback([&o, &run] {
    run = [&o](broker_client& c) {
      return show(o, c.get("/v1/autobalancer"), [](const rapidjson::Document& d) {
        if (!flag(d, "enabled")) {
          std::cout << "the balancer is off on this broker (Server.Autobalance.Enabled): no loads are measured\n";
          return;
        }
        table t({"BROKER", "NW_IN", "NW_OUT", "DISK", "PARTITIONS"});
        for (const auto& b : array(d, "brokers").GetArray())
          t.add({str(b, "id"), human_bytes(num(b, "nw_in")) + "/s", human_bytes(num(b, "nw_out")) + "/s",
                 human_bytes(num(b, "disk")), str(b, "partitions")});
        if (t.empty()) std::cout << "no pass has measured the loads yet\n";
        else std::cout << t.render();
        if (d.HasMember("controller_silent"))
          std::cerr << "warning: the controller, " << str(d["controller_silent"], "id")
                    << ", did not answer; these are the broker asked's own figures\n";
      });
    };
  });
}

void add_raft(CLI::App& app, const options& o, runner& run) {
  app.add_subcommand("raft", "the Raft state of the broker asked")->callback([&o, &run] {
    run = [&o](broker_client& c) {
      return show(o, c.get("/v1/cluster"), [](const rapidjson::Document& d) {
        const auto& r = d.HasMember("raft") ? d["raft"] : d;
        if (!flag(r, "enabled")) {
          std::cout << "Raft is off (Server.Cluster.Raft.Enabled); the controller is fenced by epochs\n";
          return;
        }
        std::cout << "broker:    " << str(d, "broker") << "\nrole:      " << str(r, "role") << "\nterm:      "
                  << str(r, "term") << "\nleader:    " << str(r, "leader") << "\ncommit:    " << str(r, "commit_index")
                  << "\napplied:   " << str(r, "applied_index") << "\ncaught up: " << str(r, "caught_up") << "\n";
      });
    };
  });
}

}  // namespace moonmq::ctl
