// moonmqctl: the operator's command line for a MoonMQ cluster. It talks to any broker's client API (every answer it
// prints is cluster-wide unless the command says otherwise). Human tables by default, the brokers' JSON with --json.
//
// Exit status: 0 done; 1 the broker refused or failed the request (its error is printed); 2 a usage mistake;
// 3 the broker could not be reached.
#include <CLI/CLI.hpp>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "broker_client.hpp"
#include "moonmq/autobalancer/planner.hpp"
#include "moonmq/autobalancer/snapshot_json.hpp"
#include "table.hpp"

namespace {

using moonmq::ctl::answer;
using moonmq::ctl::broker_client;
using moonmq::ctl::human_bytes;
using moonmq::ctl::human_seconds;
using moonmq::ctl::table;

constexpr int exit_refused = 1, exit_usage = 2, exit_unreachable = 3;

struct options {
  std::string broker = "127.0.0.1:9092";
  std::string token;
  bool json = false;
  int timeout = 10;
};

std::string str(const rapidjson::Value& v, const char* k) {
  if (!v.IsObject() || !v.HasMember(k)) return "";
  const auto& m = v[k];
  if (m.IsString()) return m.GetString();
  if (m.IsBool()) return m.GetBool() ? "yes" : "no";
  if (m.IsUint64()) return std::to_string(m.GetUint64());
  if (m.IsInt64()) return std::to_string(m.GetInt64());
  if (m.IsNumber()) return std::to_string(m.GetDouble());
  return "";
}
double num(const rapidjson::Value& v, const char* k) {
  return v.IsObject() && v.HasMember(k) && v[k].IsNumber() ? v[k].GetDouble() : 0;
}
bool flag(const rapidjson::Value& v, const char* k) {
  return v.IsObject() && v.HasMember(k) && v[k].IsBool() && v[k].GetBool();
}
const rapidjson::Value& array(const rapidjson::Value& v, const char* k) {
  static const rapidjson::Value empty(rapidjson::kArrayType);
  return v.IsObject() && v.HasMember(k) && v[k].IsArray() ? v[k] : empty;
}

/// A name as one path segment or query value: every byte but letters, digits and -._~ percent-encoded.
std::string encoded(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

/// Prints a failed answer and returns the exit status for it.
int failed(const answer& a) {
  if (a.status == 0) {
    std::cerr << "moonmqctl: " << a.body << "\n";
    return exit_unreachable;
  }
  rapidjson::Document d;
  d.Parse(a.body.c_str(), a.body.size());
  if (!d.HasParseError() && d.IsObject() && d.HasMember("message"))
    std::cerr << "moonmqctl: " << a.status << " " << str(d, "error") << ": " << str(d, "message") << "\n";
  else
    std::cerr << "moonmqctl: HTTP " << a.status << ": " << a.body << "\n";
  return exit_refused;
}

/// Runs one request: the JSON as is with --json, otherwise `human` on the parsed answer. A partly applied answer
/// (503 with a body listing what failed) is shown like a success, and the exit status still says it failed.
int show(const options& o, const answer& a, const std::function<void(const rapidjson::Document&)>& human) {
  if (!a.ok() && !(a.status == 503 && a.body.find("\"applied\"") != std::string::npos)) return failed(a);
  if (o.json) {
    std::cout << a.body << "\n";
  } else {
    rapidjson::Document d;
    d.Parse(a.body.c_str(), a.body.size());
    if (d.HasParseError() || !d.IsObject()) {
      std::cerr << "moonmqctl: the broker's answer is not JSON: " << a.body << "\n";
      return exit_refused;
    }
    human(d);
  }
  return a.ok() ? 0 : failed(a);
}

void print_unreachable(const rapidjson::Value& d) {
  for (const auto& u : array(d, "unreachable").GetArray())
    std::cout << "warning: " << str(u, "broker") << " did not answer (" << str(u, "error")
              << "); what it holds is not shown\n";
}

void print_applied(const rapidjson::Value& d) {
  std::string applied;
  for (const auto& b : array(d, "applied").GetArray()) applied += (applied.empty() ? "" : ", ") + std::string(b.GetString());
  std::cout << "applied on: " << (applied.empty() ? "none" : applied) << "\n";
  for (const auto& f : array(d, "failed").GetArray())
    std::cout << "NOT applied on " << str(f, "broker") << ": " << str(f, "error") << "\n";
}

/// "50M", "1.5GiB", "1048576" -> bytes; nullopt for anything else.
std::optional<std::uint64_t> parse_rate(std::string s) {
  double mult = 1;
  auto strip = [&](const std::string& suffix, double m) {
    if (s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0) {
      s.resize(s.size() - suffix.size());
      mult = m;
      return true;
    }
    return false;
  };
  strip("/s", 1);
  strip("B", 1);
  (void)(strip("Ki", 1024.0) || strip("Mi", 1024.0 * 1024) || strip("Gi", 1024.0 * 1024 * 1024) ||
         strip("K", 1024.0) || strip("M", 1024.0 * 1024) || strip("G", 1024.0 * 1024 * 1024));
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (*end != '\0' || v < 0) return std::nullopt;
  return static_cast<std::uint64_t>(v * mult);
}

std::string rate_text(std::uint64_t r) { return r == 0 ? "unlimited" : human_bytes(static_cast<double>(r)) + "/s"; }

void print_moves(const rapidjson::Value& d) {
  table t({"ID", "SOURCE", "PARTITION", "DEST", "STEP", "PROGRESS", "COPIED", "RATE", "ETA", "NOTE"});
  for (const auto& m : array(d, "reassignments").GetArray()) {
    const bool finished = flag(m, "finished");
    std::string note = str(m, "error");
    if (flag(m, "stalled")) note = "STALLED: " + str(m, "stalled_reason");
    else if (!finished && flag(m, "cancel_requested")) note = "cancelling";
    t.add({str(m, "id"), str(m, "source"), str(m, "topic") + "-" + str(m, "partition"), str(m, "dest"), str(m, "step"),
           finished && flag(m, "succeeded") ? moonmq::ctl::progress_bar(1, 1)
                                            : moonmq::ctl::progress_bar(num(m, "bytes_copied"), num(m, "bytes_total")),
           human_bytes(num(m, "bytes_copied")) + " / " + human_bytes(num(m, "bytes_total")),
           finished ? "" : human_bytes(num(m, "rate_bytes_per_sec")) + "/s",
           finished ? "" : human_seconds(num(m, "eta_seconds") > 0 || num(m, "rate_bytes_per_sec") > 0
                                             ? num(m, "eta_seconds")
                                             : -1),
           note});
  }
  if (t.empty())
    std::cout << "no moves\n";
  else
    std::cout << t.render();
  if (d.HasMember("throttle") && d["throttle"].IsObject()) {
    std::string line;
    for (const auto& b : d["throttle"].GetObject())
      line += (line.empty() ? "" : ", ") + std::string(b.name.GetString()) + " " +
              rate_text(b.value.IsUint64() ? b.value.GetUint64() : 0);
    std::cout << "copy throttle: " << line << "\n";
  }
  print_unreachable(d);
}

/// A broker's drain in a few words: "", "drained", "draining: 3 left, 1.2 GiB, ETA 2m10s".
std::string drain_text(const rapidjson::Value& b) {
  if (!flag(b, "draining")) return "";
  if (!b.HasMember("drain") || !b["drain"].IsObject()) return "draining";
  const auto& d = b["drain"];
  if (flag(d, "done")) return "drained";
  if (!d.HasMember("partitions_left")) return "draining (starting)";
  std::string s = "draining: " + str(d, "partitions_left") + " left, " + human_bytes(num(d, "bytes_left")) +
                  ", ETA " + human_seconds(num(d, "eta_seconds"));
  const auto& blocked = array(d, "blocked");
  if (!blocked.Empty()) s += ", " + std::to_string(blocked.Size()) + " blocked";
  return s;
}

bool any_running(const std::string& body) {
  rapidjson::Document d;
  d.Parse(body.c_str(), body.size());
  if (d.HasParseError() || !d.IsObject()) return false;
  for (const auto& m : array(d, "reassignments").GetArray())
    if (!flag(m, "finished")) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
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

  std::function<int(broker_client&)> run;

  app.add_subcommand("status", "the cluster at a glance: brokers, controller, moves, balancer")->callback([&] {
    run = [&](broker_client& c) {
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

  app.add_subcommand("brokers", "every broker: reachability, partitions and bytes served")->callback([&] {
    run = [&](broker_client& c) {
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

  auto* topics_cmd = app.add_subcommand("topics", "every topic served in the cluster");
  std::string reconcile_topic, keep_broker, append_broker;
  int reconcile_partition = -1;
  auto* reconcile = topics_cmd->add_subcommand(
      "reconcile", "a topic's partitions with more than one log (strays); with --partition and --keep or --append, "
                   "the decision for one (docs/cluster.md, \"Strays\")");
  reconcile->add_option("topic", reconcile_topic, "the topic")->required();
  reconcile->add_option("--partition", reconcile_partition, "the partition to decide for")->check(CLI::NonNegativeNumber);
  auto* keep_opt = reconcile->add_option("--keep", keep_broker,
                                         "keep this broker's log: the served one (the strays are emptied) or a "
                                         "stray (the served log is emptied and the stray's records take its place)");
  reconcile->add_option("--append", append_broker,
                        "append this broker's stray to the served log as new records (then empty it)")
      ->excludes(keep_opt);
  reconcile->callback([&] {
    run = [&](broker_client& c) {
      const std::string base = "/v1/topics/" + encoded(reconcile_topic);
      if (reconcile_partition < 0) {
        if (!keep_broker.empty() || !append_broker.empty()) {
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
            std::cout << "every partition of " << reconcile_topic << " has one log\n";
          } else {
            std::cout << t.render();
            std::cout << "decide for each: moonmqctl topics reconcile " << reconcile_topic
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
      if (keep_broker.empty() && append_broker.empty()) {
        std::cerr << "moonmqctl: name the decision: --keep BROKER or --append BROKER\n";
        return exit_usage;
      }
      // A large stray is appended in steps; each answer says where the next starts.
      const std::string path = base + "/partitions/" + std::to_string(reconcile_partition) + "/reconcile";
      std::uint64_t from = 0, copied = 0, already = 0, skipped = 0;
      auto u64 = [](const rapidjson::Value& v, const char* k) -> std::uint64_t {
        return v.IsObject() && v.HasMember(k) && v[k].IsUint64() ? v[k].GetUint64() : 0;
      };
      for (;;) {
        rapidjson::StringBuffer body;
        rapidjson::Writer<rapidjson::StringBuffer> w(body);
        w.StartObject();
        w.Key(keep_broker.empty() ? "append" : "keep");
        w.String(keep_broker.empty() ? append_broker.c_str() : keep_broker.c_str());
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
            std::cout << "emptied the served log of " << reconcile_topic << "-" << reconcile_partition << " on "
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
            std::cout << "emptied the stray(s) on " << (gone.empty() ? "none" : gone) << "; " << reconcile_topic << "-"
                      << reconcile_partition << " has one log, on " << str(d, "owner") << "\n";
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
  std::string adopt_topic;
  auto* adopt = topics_cmd->add_subcommand(
      "adopt", "a topic made before topics were cluster metadata enters the catalog: each partition's log is one "
               "serving broker's, a duplicate elsewhere becomes a stray to reconcile (docs/cluster.md)");
  adopt->add_option("topic", adopt_topic, "the topic")->required();
  adopt->callback([&] {
    run = [&](broker_client& c) {
      return show(o, c.post("/v1/topics/" + encoded(adopt_topic) + "/adopt"), [&](const rapidjson::Document& d) {
        std::string owners;
        for (const auto& b : array(d, "owners").GetArray())
          owners += (owners.empty() ? "" : " ") + std::string(b.IsString() ? b.GetString() : "?");
        std::cout << "adopted " << str(d, "name") << " (" << str(d, "partitions") << " partitions, version "
                  << str(d, "version") << "): owners " << owners << "\n"
                  << "then: moonmqctl topics reconcile " << adopt_topic << " (a duplicate log is a stray now)\n";
      });
    };
  });
  topics_cmd->callback([&] {
    if (reconcile->parsed() || adopt->parsed()) return;
    run = [&](broker_client& c) {
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

  std::string topic_filter;
  auto* partitions = app.add_subcommand("partitions", "every partition with its owner and size");
  partitions->add_option("--topic", topic_filter, "only this topic");
  partitions->callback([&] {
    run = [&](broker_client& c) {
      return show(o, c.get("/v1/partitions" + (topic_filter.empty() ? "" : "?topic=" + encoded(topic_filter))),
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

  app.add_subcommand("loads", "each broker's load per resource, as the balancer's last pass measured it")->callback([&] {
    run = [&](broker_client& c) {
      return show(o, c.get("/v1/autobalancer"), [](const rapidjson::Document& d) {
        if (!flag(d, "enabled")) {
          std::cout << "the balancer is off on this broker (Server.Autobalance.Enabled): no loads are measured\n";
          return;
        }
        table t({"BROKER", "NW_IN", "NW_OUT", "DISK", "PARTITIONS"});
        for (const auto& b : array(d, "brokers").GetArray())
          t.add({str(b, "id"), human_bytes(num(b, "nw_in")) + "/s", human_bytes(num(b, "nw_out")) + "/s",
                 human_bytes(num(b, "disk")), str(b, "partitions")});
        if (t.empty()) std::cout << "no pass has measured the loads yet (or this broker is not the controller)\n";
        else std::cout << t.render();
      });
    };
  });

  bool plan_last = false, plan_converge = false, plan_explain = false;
  auto* plan = app.add_subcommand(
      "plan", "the live cluster through the planner, here (a dry run: nothing moves), with each broker before/after");
  plan->add_flag("--converge", plan_converge, "apply each plan and plan again until nothing is left to do");
  plan->add_flag("--last", plan_last, "instead, the balance loop's own last plan");
  plan->add_flag("--explain", plan_explain,
                 "say for each action the goal that chose it and its brokers before and after, and why a broker stays "
                 "out of band");
  plan->callback([&] {
    run = [&](broker_client& c) {
      if (plan_last)
        return show(o, c.get("/v1/autobalancer"), [&](const rapidjson::Document& d) {
          table t({"TYPE", "PARTITION", "FROM", "TO", "SWAPPED WITH", "CHOSEN BY"});
          for (const auto& a : array(d, "plan").GetArray())
            t.add({str(a, "type"), str(a, "topic") + "-" + str(a, "partition"), str(a, "src"), str(a, "dest"),
                   a.HasMember("swap_topic") ? str(a, "swap_topic") + "-" + str(a, "swap_partition") : "",
                   str(a, "chosen_by")});
          if (t.empty())
            std::cout << "the last plan is empty" << (flag(d, "satisfied") ? ": every goal is met" : "") << "\n";
          else
            std::cout << t.render();
          if (plan_explain && d.HasMember("out_of_band") && d["out_of_band"].IsArray())
            for (const auto& f : d["out_of_band"].GetArray())
              std::cout << "out of band: " << str(f, "broker") << " " << str(f, "goal") << ": " << str(f, "why")
                        << "\n";
        });
      auto snap = c.get("/v1/autobalancer/snapshot");
      if (!snap.ok()) return failed(snap);
      auto input = moonmq::autobalancer::parse_planner_input(snap.body);
      if (!input) {
        std::cerr << "moonmqctl: the broker's snapshot does not read as a planner input: " << input.message() << "\n";
        return exit_refused;
      }
      auto detector = moonmq::autobalancer::anomaly_detector::create(input->config);
      if (!detector) {
        std::cerr << "moonmqctl: " << detector.message() << "\n";
        return exit_refused;
      }
      auto report = moonmq::autobalancer::run_planner(std::move(input->snap), *detector, plan_converge, 1000,
                                                         plan_explain);
      std::cout << (o.json ? moonmq::autobalancer::render_plan_json(report)
                           : moonmq::autobalancer::render_plan_text(report));
      if (o.json) std::cout << "\n";
      return 0;
    };
  });

  std::string move_topic, move_dest;
  int move_partition = 0;
  auto* move = app.add_subcommand("move", "move a partition to another broker");
  move->add_option("topic", move_topic, "topic")->required();
  move->add_option("partition", move_partition, "partition")->required()->check(CLI::NonNegativeNumber);
  move->add_option("dest", move_dest, "destination broker id")->required();
  move->callback([&] {
    run = [&](broker_client& c) {
      rapidjson::StringBuffer buf;  // written, never pasted: a name cannot add a field of its own
      rapidjson::Writer<rapidjson::StringBuffer> w(buf);
      w.StartObject();
      w.Key("topic");
      w.String(move_topic.c_str(), static_cast<rapidjson::SizeType>(move_topic.size()));
      w.Key("partition");
      w.Int(move_partition);
      w.Key("dest");
      w.String(move_dest.c_str(), static_cast<rapidjson::SizeType>(move_dest.size()));
      w.EndObject();
      const std::string body(buf.GetString(), buf.GetSize());
      return show(o, c.post("/v1/reassignments", body), [](const rapidjson::Document& d) {
        std::cout << "move " << str(d, "id") << " started on " << str(d, "source") << ": " << str(d, "topic") << "-"
                  << str(d, "partition") << " -> " << str(d, "dest") << "\n";
      });
    };
  });

  bool watch = false, all_moves = false;
  auto* moves = app.add_subcommand("moves", "moves in progress with step, bytes, rate and ETA");
  moves->add_flag("-w,--watch", watch, "refresh every second until no move runs");
  moves->add_flag("-a,--all", all_moves, "also the recently finished ones");
  moves->callback([&] {
    run = [&](broker_client& c) {
      const std::string path = all_moves ? "/v1/reassignments" : "/v1/reassignments?active=true";
      while (true) {
        auto a = c.get(path);
        if (watch && !o.json && a.ok()) std::cout << "\x1b[H\x1b[2J" << std::flush;  // clear the screen
        int rc = show(o, a, [](const rapidjson::Document& d) { print_moves(d); });
        if (!watch || rc != 0 || !any_running(a.body)) return rc;
        std::this_thread::sleep_for(std::chrono::seconds(1));
      }
    };
  });

  std::uint64_t cancel_id = 0;
  std::string cancel_source;
  auto* cancel = app.add_subcommand("cancel", "cancel a move before its cutover (it is rolled back)");
  cancel->add_option("id", cancel_id, "the move's id (moonmqctl moves)")->required();
  cancel->add_option("--source", cancel_source, "the broker running it, when ids could clash");
  cancel->callback([&] {
    run = [&](broker_client& c) {
      return show(o,
                  c.del("/v1/reassignments/" + std::to_string(cancel_id) +
                        (cancel_source.empty() ? "" : "?source=" + encoded(cancel_source))),
                  [](const rapidjson::Document& d) {
                    std::cout << "move " << str(d, "id") << " on " << str(d, "source")
                              << " is cancelling: it stops before its cutover and is rolled back\n";
                  });
    };
  });

  std::string throttle_rate;
  auto* throttle = app.add_subcommand("throttle", "show or set the cluster-wide copy throttle");
  throttle->add_option("rate", throttle_rate, "bytes per second (50M, 1.5GiB, 0 = unlimited); none: show");
  throttle->callback([&] {
    run = [&](broker_client& c) {
      if (throttle_rate.empty())
        return show(o, c.get("/v1/reassignments/throttle"), [](const rapidjson::Document& d) {
          table t({"BROKER", "THROTTLE"});
          for (const auto& b : array(d, "brokers").GetArray())
            t.add({str(b, "broker"), b.HasMember("bytes_per_sec")
                                         ? rate_text(static_cast<std::uint64_t>(num(b, "bytes_per_sec")))
                                         : "UNREACHABLE: " + str(b, "error")});
          std::cout << t.render();
        });
      auto rate = parse_rate(throttle_rate);
      if (!rate) {
        std::cerr << "moonmqctl: '" << throttle_rate << "' is not a rate (examples: 1048576, 50M, 1.5GiB, 0)\n";
        return exit_usage;
      }
      return show(o, c.put("/v1/reassignments/throttle", "{\"bytes_per_sec\":" + std::to_string(*rate) + "}"),
                  [&](const rapidjson::Document& d) {
                    std::cout << "copy throttle " << rate_text(*rate) << "\n";
                    print_applied(d);
                  });
    };
  });

  auto* balancer = app.add_subcommand("balancer", "the balance loop: status, pause, resume");
  balancer->require_subcommand(1);
  balancer->add_subcommand("status", "the loop's state")->callback([&] {
    run = [&](broker_client& c) {
      return show(o, c.get("/v1/autobalancer"), [](const rapidjson::Document& d) {
        std::cout << "enabled:     " << (flag(d, "enabled") ? "yes" : "no")
                  << (flag(d, "enabled") && flag(d, "dry_run") ? " (dry run)" : "")
                  << "\npaused:      " << (flag(d, "paused") ? "yes" : "no") << "\n";
        if (!flag(d, "enabled")) return;
        const auto& ctl = d.HasMember("controller") ? d["controller"] : d;
        std::cout << "controller:  " << str(ctl, "id") << " (epoch " << str(ctl, "epoch") << ")\n";
        std::cout << "passes:      " << str(d, "passes") << "\n";
        if (d.HasMember("last_pass"))
          std::cout << "last pass:   " << str(d["last_pass"], "result") << " " << str(d["last_pass"], "error") << "\n";
        std::cout << "goals met:   " << (flag(d, "satisfied") ? "yes" : "no") << "\n";
        std::cout << "planned:     " << array(d, "plan").Size() << " actions; " << array(d, "moves").Size()
                  << " moves followed\n";
      });
    };
  });
  for (const char* verb : {"pause", "resume"}) {
    balancer->add_subcommand(verb, std::string(verb) + " the loop on every broker")->callback([&, verb] {
      run = [&, verb](broker_client& c) {
        return show(o, c.post(std::string("/v1/autobalancer/") + verb), [&](const rapidjson::Document& d) {
          std::cout << "balancer " << (std::string(verb) == "pause" ? "paused" : "resumed") << "\n";
          print_applied(d);
        });
      };
    });
  }

  std::string drain_broker;
  bool drain_watch = false;
  auto* drain = app.add_subcommand("drain", "move every partition off a broker; nothing moves onto it until undrained");
  drain->add_option("broker", drain_broker, "broker id")->required();
  drain->add_flag("-w,--watch", drain_watch, "follow the drain until it is done");
  drain->callback([&] {
    run = [&](broker_client& c) {
      int rc = show(o, c.post("/v1/brokers/" + encoded(drain_broker) + "/drain"), [&](const rapidjson::Document& d) {
        std::cout << drain_broker << " is draining\n";
        print_applied(d);
      });
      if (rc != 0 || !drain_watch) return rc;
      while (true) {
        auto a = c.get("/v1/brokers/" + encoded(drain_broker) + "/drain");
        if (!a.ok()) return failed(a);
        rapidjson::Document d;
        d.Parse(a.body.c_str(), a.body.size());
        if (o.json) {
          std::cout << a.body << "\n";
        } else if (d.HasMember("partitions_left")) {
          std::cout << str(d, "partitions_left") << " partitions left, " << human_bytes(num(d, "bytes_left"))
                    << ", " << str(d, "moving") << " moving, ETA " << human_seconds(num(d, "eta_seconds")) << "\n";
          for (const auto& b : array(d, "blocked").GetArray())
            std::cout << "  " << str(b, "topic") << "-" << str(b, "partition") << ": " << str(b, "reason") << "\n";
        }
        if (flag(d, "done")) {
          if (!o.json) std::cout << drain_broker << " is drained\n";
          return 0;
        }
        std::this_thread::sleep_for(std::chrono::seconds(1));
      }
    };
  });
  std::string undrain_broker;
  auto* undrain = app.add_subcommand("undrain", "let a drained broker receive partitions again");
  undrain->add_option("broker", undrain_broker, "broker id")->required();
  undrain->callback([&] {
    run = [&](broker_client& c) {
      return show(o, c.del("/v1/brokers/" + encoded(undrain_broker) + "/drain"), [&](const rapidjson::Document& d) {
        std::cout << undrain_broker << " may receive partitions again\n";
        print_applied(d);
      });
    };
  });

  std::string reclaim_broker;
  bool reclaim_list = false;
  auto* reclaim = app.add_subcommand("reclaim", "delete the copies a broker keeps of partitions it no longer serves");
  reclaim->add_option("broker", reclaim_broker, "broker id")->required();
  reclaim->add_flag("-l,--list", reclaim_list, "only list the copies and what holds each back");
  reclaim->callback([&] {
    run = [&](broker_client& c) {
      const std::string path = "/v1/brokers/" + encoded(reclaim_broker) + "/reclaim";
      if (reclaim_list)
        return show(o, c.get(path), [](const rapidjson::Document& d) {
          table t({"PARTITION", "SIZE", "IDLE", "STATE"});
          for (const auto& x : array(d, "copies").GetArray())
            t.add({str(x, "topic") + "-" + str(x, "partition"), human_bytes(num(x, "size_bytes")),
                   human_seconds(num(x, "idle_seconds")),
                   flag(x, "eligible")
                       ? (x.HasMember("reclaimed_in_seconds")
                              ? "reclaimed in " + human_seconds(num(x, "reclaimed_in_seconds"))
                              : "kept until reclaimed by hand (ReclaimAfterSeconds 0)")
                       : "held: " + str(x, "held_by")});
          if (t.empty()) std::cout << str(d, "broker") << " keeps no copy it does not serve\n";
          else std::cout << t.render() << human_bytes(num(d, "bytes")) << " in copies not served\n";
        });
      bool kept = false;
      int rc = show(o, c.post(path), [&](const rapidjson::Document& d) {
        std::cout << "reclaimed " << human_bytes(num(d, "bytes")) << " on " << str(d, "broker") << " ("
                  << array(d, "reclaimed").Size() << " copies)\n";
        for (const auto& f : array(d, "failed").GetArray()) {
          kept = true;
          std::cout << "NOT reclaimed " << str(f, "topic") << "-" << str(f, "partition") << ": " << str(f, "error")
                    << "\n";
        }
      });
      return rc == 0 && kept ? exit_refused : rc;  // a copy that had to stay is worth a non-zero status
    };
  });

  app.add_subcommand("groups", "consumer groups coordinated by the broker asked")->callback([&] {
    run = [&](broker_client& c) {
      return show(o, c.get("/v1/groups"), [](const rapidjson::Document& d) {
        std::cout << "groups coordinated by " << str(d, "coordinator") << ":\n";
        for (const auto& g : array(d, "groups").GetArray()) std::cout << "  " << g.GetString() << "\n";
        if (array(d, "groups").Empty()) std::cout << "  (none)\n";
      });
    };
  });

  app.add_subcommand("transactions", "transactions coordinated by the broker asked")->callback([&] {
    run = [&](broker_client& c) {
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

  app.add_subcommand("raft", "the Raft state of the broker asked")->callback([&] {
    run = [&](broker_client& c) {
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

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : exit_usage;
  }
  if (!run) return exit_usage;
  broker_client client(o.broker, o.token, o.timeout);
  return run(client);
}
