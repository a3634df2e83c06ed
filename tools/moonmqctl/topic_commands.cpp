// moonmqctl's topics subcommand: every topic at a glance, and its reconcile and adopt subcommands.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <CLI/CLI.hpp>

#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "commands.hpp"
#include "table.hpp"

namespace moonmq::ctl {

namespace {

/// topics reconcile: a topic's strays, or the decision for one of its partitions. Returns the subcommand, so
/// that topics can tell it was the one chosen.
CLI::App* add_reconcile(CLI::App& topics, const options& o, runner& run) {
  struct arguments {
    std::string topic, keep_broker, append_broker;
    int partition = -1;
  };
  auto args = std::make_shared<arguments>();
  auto* reconcile = topics.add_subcommand(
      "reconcile", "a topic's partitions with more than one log (strays); with --partition and --keep or --append, "
                   "the decision for one (docs/cluster.md, \"Strays\")");
  reconcile->add_option("topic", args->topic, "the topic")->required();
  reconcile->add_option("--partition", args->partition, "the partition to decide for")->check(CLI::NonNegativeNumber);
  auto* keep_opt = reconcile->add_option("--keep", args->keep_broker,
                                         "keep this broker's log: the served one (the strays are emptied) or a "
                                         "stray (the served log is emptied and the stray's records take its place)");
  reconcile->add_option("--append", args->append_broker,
                        "append this broker's stray to the served log as new records (then empty it)")
      ->excludes(keep_opt);
  reconcile->callback([&o, &run, args] {
    run = [&o, args](broker_client& c) {
      const std::string base = "/v1/topics/" + encoded(args->topic);
      if (args->partition < 0) {
        if (!args->keep_broker.empty() || !args->append_broker.empty()) {
          std::cerr << "moonmqctl: --keep and --append need --partition\n";
          return exit_usage;
        }
        auto a = c.get(base + "/reconcile");
        bool any = false;
        int rc = show(o, a, [&](const rapidjson::Document& d) {
          table t({"PARTITION", "SERVED BY", "STRAYS"});
          for (const auto& p : array(d, "partitions").GetArray()) {
            std::string served, strays;
            for (const auto& b : array(p, "served").GetArray())
              served += (served.empty() ? "" : ", ") + str(b, "broker") + " (" + human_bytes(num(b, "size_bytes")) + ")";
            for (const auto& b : array(p, "strays").GetArray())
              strays += (strays.empty() ? "" : ", ") + str(b, "broker") + " (" + human_bytes(num(b, "size_bytes")) + ")";
            t.add({str(p, "partition"), served.empty() ? "nobody" : served, strays});
            any = true;
          }
          if (!any) {
            std::cout << "every partition of " << args->topic << " has one log\n";
          } else {
            std::cout << t.render();
            std::cout << "decide for each: moonmqctl topics reconcile " << args->topic
                      << " --partition P (--keep BROKER | --append BROKER)\n";
          }
          print_unreachable(d);
        });
        rapidjson::Document d;
        d.Parse(a.body.c_str(), a.body.size());
        const bool parsed = !d.HasParseError() && d.IsObject();
        if (rc == 0 && o.json) any = parsed && !array(d, "partitions").Empty();
        // A broker that did not answer may hold a stray: not "one log" either.
        const bool unanswered = parsed && !array(d, "unreachable").Empty();
        return rc != 0 ? rc : (any || unanswered ? exit_refused : 0);
      }
      if (args->keep_broker.empty() && args->append_broker.empty()) {
        std::cerr << "moonmqctl: name the decision: --keep BROKER or --append BROKER\n";
        return exit_usage;
      }
      // A large stray is appended in steps; each answer says where the next starts.
      const std::string path = base + "/partitions/" + std::to_string(args->partition) + "/reconcile";
      std::uint64_t from = 0, copied = 0, already = 0, skipped = 0;
      auto u64 = [](const rapidjson::Value& v, const char* k) -> std::uint64_t {
        return v.IsObject() && v.HasMember(k) && v[k].IsUint64() ? v[k].GetUint64() : 0;
      };
      for (;;) {
        rapidjson::StringBuffer body;
        rapidjson::Writer<rapidjson::StringBuffer> w(body);
        w.StartObject();
        w.Key(args->keep_broker.empty() ? "append" : "keep");
        w.String(args->keep_broker.empty() ? args->append_broker.c_str() : args->keep_broker.c_str());
        w.Key("from");
        w.Uint64(from);
        w.EndObject();
        auto a = c.post(path, body.GetString());
        rapidjson::Document d;
        d.Parse(a.body.c_str(), a.body.size());
        if (!a.ok()) {
          const int rc = failed(a);
          if (!d.HasParseError() && d.IsObject() && d.HasMember("done"))
            std::cerr << "moonmqctl: before it stopped: " << (flag(d, "cleared") ? "the served log was emptied, " : "")
                      << u64(d, "copied") << " record(s) on " << str(d, "owner") << "'s log; run the same command "
                      << "again (nothing is written twice)\n";
          return rc;
        }
        if (d.HasParseError() || !d.IsObject()) {
          std::cerr << "moonmqctl: the broker's answer is not JSON: " << a.body << "\n";
          return exit_refused;
        }
        if (o.json) std::cout << a.body << "\n";
        copied += u64(d, "copied");
        already += u64(d, "already");
        skipped += u64(d, "skipped");
        if (!o.json) {
          if (flag(d, "cleared"))
            std::cout << "emptied the served log of " << args->topic << "-" << args->partition << " on "
                      << str(d, "owner") << "\n";
          for (const auto& r : array(d, "runs").GetArray())
            std::cout << "stray offsets " << str(r, "stray_first") << ".." << str(r, "stray_last") << " -> offsets "
                      << str(r, "first") << ".." << str(r, "last") << " on " << str(d, "owner") << "\n";
        }
        if (flag(d, "done")) {
          if (!o.json) {
            if (copied || already || skipped)
              std::cout << copied + already << " record(s) of the stray are on " << str(d, "owner") << "'s log"
                        << (already ? " (" + std::to_string(already) + " appended by an earlier run)" : "")
                        << (skipped ? ", " + std::to_string(skipped) + " not copied (control, aborted or never-ended transaction)" : "")
                        << "\n";
            std::string gone;
            for (const auto& b : array(d, "discarded").GetArray()) gone += (gone.empty() ? "" : ", ") + std::string(b.GetString());
            std::cout << "emptied the stray(s) on " << (gone.empty() ? "none" : gone) << "; " << args->topic << "-"
                      << args->partition << " has one log, on " << str(d, "owner") << "\n";
          }
          return 0;
        }
        const std::uint64_t next = u64(d, "next");
        if (next <= from && from != 0) {
          std::cerr << "moonmqctl: the append made no progress past offset " << from << "\n";
          return exit_refused;
        }
        from = next;
      }
    };
  });
  return reconcile;
}

/// topics adopt: a topic made before topics were cluster metadata enters the catalog. Returns the subcommand.
CLI::App* add_adopt(CLI::App& topics, const options& o, runner& run) {
  struct arguments {
    std::string topic;
  };
  auto args = std::make_shared<arguments>();
  auto* adopt = topics.add_subcommand(
      "adopt", "a topic made before topics were cluster metadata enters the catalog: each partition's log is one "
               "serving broker's, a duplicate elsewhere becomes a stray to reconcile (docs/cluster.md)");
  adopt->add_option("topic", args->topic, "the topic")->required();
  adopt->callback([&o, &run, args] {
    run = [&o, args](broker_client& c) {
      return show(o, c.post("/v1/topics/" + encoded(args->topic) + "/adopt"), [&](const rapidjson::Document& d) {
        std::string owners;
        for (const auto& b : array(d, "owners").GetArray())
          owners += (owners.empty() ? "" : " ") + std::string(b.IsString() ? b.GetString() : "?");
        std::cout << "adopted " << str(d, "name") << " (" << str(d, "partitions") << " partitions, version "
                  << str(d, "version") << "): owners " << owners << "\n"
                  << "then: moonmqctl topics reconcile " << args->topic << " (a duplicate log is a stray now)\n";
      });
    };
  });
  return adopt;
}

}  // namespace

void add_topics(CLI::App& app, const options& o, runner& run) {
  auto* topics_cmd = app.add_subcommand("topics", "every topic served in the cluster");
  auto* reconcile = add_reconcile(*topics_cmd, o, run);
  auto* adopt = add_adopt(*topics_cmd, o, run);
  topics_cmd->callback([&o, &run, reconcile, adopt] {
    if (reconcile->parsed() || adopt->parsed()) return;
    run = [&o](broker_client& c) {
      return show(o, c.get("/v1/partitions"), [](const rapidjson::Document& d) {
        struct agg {
          std::set<std::string> partitions;  // a partition served twice is one partition
          std::set<std::string> twice;
          int strays = 0;
          double bytes = 0;
          std::map<std::string, int> owners;
        };
        std::map<std::string, agg> topics;
        for (const auto& p : array(d, "partitions").GetArray()) {
          auto& a = topics[str(p, "topic")];
          a.partitions.insert(str(p, "partition"));
          if (str(p, "conflict").rfind("served by", 0) == 0) a.twice.insert(str(p, "partition"));
          a.bytes += num(p, "size_bytes");
          ++a.owners[str(p, "owner")];
        }
        for (const auto& p : array(d, "strays").GetArray()) ++topics[str(p, "topic")].strays;
        table t({"TOPIC", "PARTITIONS", "BYTES", "OWNERS", "WARNING"});
        for (const auto& [name, a] : topics) {
          std::string owners;
          for (const auto& [b, n] : a.owners) owners += (owners.empty() ? "" : " ") + b + ":" + std::to_string(n);
          std::string warning = a.twice.empty() ? "" : std::to_string(a.twice.size()) + " served by more than one broker";
          if (a.strays) warning += (warning.empty() ? "" : ", ") + std::to_string(a.strays) + " stray log(s)";
          t.add({name, std::to_string(a.partitions.size()), human_bytes(a.bytes), owners, warning});
        }
        std::cout << t.render();
        print_unreachable(d);
      });
    };
  });
}

}  // namespace moonmq::ctl
