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
#include <vector>

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

/// "b1 b2 b3 b1" of a topic answer's `owners`.
std::string owner_list(const rapidjson::Value& d) {
  std::string owners;
  for (const auto& b : array(d, "owners").GetArray())
    owners += (owners.empty() ? "" : " ") + std::string(b.IsString() ? b.GetString() : "?");
  return owners;
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
        std::cout << "adopted " << str(d, "name") << " (" << str(d, "partitions") << " partitions, version "
                  << str(d, "version") << "): owners " << owner_list(d) << "\n"
                  << "then: moonmqctl topics reconcile " << args->topic << " (a duplicate log is a stray now)\n";
      });
    };
  });
  return adopt;
}

/// topics create | describe | grow | delete: the topic as cluster metadata, from any broker (admin for changes).
std::vector<CLI::App*> add_topic_admin(CLI::App& topics, const options& o, runner& run) {
  struct arguments {
    std::string topic, placement;
    int partitions = 1;
    std::vector<std::string> brokers;
  };
  auto args = std::make_shared<arguments>();
  auto* create = topics.add_subcommand("create", "a topic for the whole cluster (admin)");
  create->add_option("topic", args->topic, "the topic")->required();
  create->add_option("-p,--partitions", args->partitions, "how many partitions (default 1)")->check(CLI::Range(1, 100000));
  create->add_option("--placement", args->placement, "spread (default), local (the broker asked) or exact")
      ->check(CLI::IsMember({"spread", "local", "exact"}));
  create->add_option("--brokers", args->brokers, "the brokers it may go to (exact: one per partition)")->delimiter(',');
  create->callback([&o, &run, args] {
    run = [&o, args](broker_client& c) {
      rapidjson::StringBuffer body;
      rapidjson::Writer<rapidjson::StringBuffer> w(body);
      w.StartObject();
      w.Key("name");
      w.String(args->topic.c_str());
      w.Key("partitions");
      w.Int(args->partitions);
      if (!args->placement.empty()) {
        w.Key("placement");
        w.String(args->placement.c_str());
      }
      if (!args->brokers.empty()) {
        w.Key("brokers");
        w.StartArray();
        for (const auto& b : args->brokers) w.String(b.c_str());
        w.EndArray();
      }
      w.EndObject();
      return show(o, c.post("/v1/topics", body.GetString()), [](const rapidjson::Document& d) {
        std::cout << "created " << str(d, "name") << " (" << str(d, "partitions") << " partitions, version "
                  << str(d, "version") << "): owners " << owner_list(d) << "\n";
      });
    };
  });
  auto* describe = topics.add_subcommand("describe", "one topic: its catalog entry and each partition's owner");
  describe->add_option("topic", args->topic, "the topic")->required();
  describe->callback([&o, &run, args] {
    run = [&o, args](broker_client& c) {
      const answer listed = c.get("/v1/topics");
      if (!listed.ok()) return failed(listed);
      rapidjson::Document topics_doc;
      topics_doc.Parse(listed.body.c_str(), listed.body.size());
      const rapidjson::Value* entry = nullptr;
      for (const auto& t : array(topics_doc, "topics").GetArray())
        if (str(t, "name") == args->topic && !flag(t, "deleted")) entry = &t;
      if (!entry) return failed({404, "{\"error\":\"not_found\",\"message\":\"no topic " + args->topic +
                                          " in the cluster's catalog\"}"});
      const answer parts = c.get("/v1/partitions?topic=" + encoded(args->topic));
      if (!parts.ok()) return failed(parts);
      if (o.json) {
        std::cout << "{\"topic\":";
        rapidjson::StringBuffer b;
        rapidjson::Writer<rapidjson::StringBuffer> w(b);
        entry->Accept(w);
        std::cout << b.GetString() << ",\"partitions\":" << parts.body << "}\n";
        return 0;
      }
      rapidjson::Document pd;
      pd.Parse(parts.body.c_str(), parts.body.size());
      std::cout << "topic " << args->topic << ": " << str(*entry, "partitions") << " partitions, version "
                << str(*entry, "version") << "\n";
      std::map<int, const rapidjson::Value*> served;
      for (const auto& p : array(pd, "partitions").GetArray())
        served[p.HasMember("partition") && p["partition"].IsInt() ? p["partition"].GetInt() : -1] = &p;
      table t({"PARTITION", "OWNER", "BYTES", "NOTE"});
      const int count = entry->HasMember("partitions") && (*entry)["partitions"].IsInt() ? (*entry)["partitions"].GetInt() : 0;
      for (int i = 0; i < count; ++i) {
        auto it = served.find(i);
        if (it == served.end())
          t.add({std::to_string(i), "", "", "NOT SERVED by any broker that answered"});
        else
          t.add({std::to_string(i), str(*it->second, "owner"), human_bytes(num(*it->second, "size_bytes")),
                 str(*it->second, "conflict")});
      }
      std::cout << t.render();
      print_unreachable(pd);
      return 0;
    };
  });
  auto* grow = topics.add_subcommand("grow", "more partitions for the whole cluster (admin; never fewer)");
  grow->add_option("topic", args->topic, "the topic")->required();
  grow->add_option("count", args->partitions, "the new partition count")->required()->check(CLI::Range(1, 100000));
  grow->callback([&o, &run, args] {
    run = [&o, args](broker_client& c) {
      const answer a = c.post("/v1/topics/" + encoded(args->topic) + "/partitions",
                              "{\"count\":" + std::to_string(args->partitions) + "}");
      const int rc = show(o, a, [&](const rapidjson::Document& d) {
        std::cout << args->topic << " has " << str(d, "partitions") << " partitions: owners " << owner_list(d) << "\n";
      });
      if (rc != 0) return rc;
      // A topic never shrinks: asking for fewer than it has changes nothing, which is not what was asked.
      rapidjson::Document d;
      d.Parse(a.body.c_str(), a.body.size());
      if (str(d, "partitions") != std::to_string(args->partitions))
        return failed({409, "{\"error\":\"conflict\",\"message\":\"" + args->topic + " has " + str(d, "partitions") +
                                " partitions, not " + std::to_string(args->partitions) +
                                ": a topic never shrinks\"}"});
      return 0;
    };
  });
  auto* remove = topics.add_subcommand("delete", "a topic, for the whole cluster (admin)");
  remove->add_option("topic", args->topic, "the topic")->required();
  remove->callback([&o, &run, args] {
    run = [&o, args](broker_client& c) {
      return show(o, c.del("/v1/topics/" + encoded(args->topic)),
                  [&](const rapidjson::Document&) { std::cout << "deleted " << args->topic << "\n"; });
    };
  });
  return {create, describe, grow, remove};
}

}  // namespace

void add_topics(CLI::App& app, const options& o, runner& run) {
  auto* topics_cmd = app.add_subcommand("topics", "every topic served in the cluster");
  auto* reconcile = add_reconcile(*topics_cmd, o, run);
  auto* adopt = add_adopt(*topics_cmd, o, run);
  const auto admin = add_topic_admin(*topics_cmd, o, run);
  topics_cmd->callback([&o, &run, reconcile, adopt, admin] {
    if (reconcile->parsed() || adopt->parsed()) return;
    for (auto* sub : admin)
      if (sub->parsed()) return;
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
