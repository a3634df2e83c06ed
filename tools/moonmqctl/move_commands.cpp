// moonmqctl's subcommands about moving partitions: plan, move, moves, cancel and throttle.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "commands.hpp"
#include "moonmq/autobalancer/planner.hpp"
#include "moonmq/autobalancer/snapshot_json.hpp"
#include "table.hpp"

namespace moonmq::ctl {

void add_plan(CLI::App& app, const options& o, runner& run) {
  struct arguments {
    bool last = false, converge = false, explain = false;
  };
  auto args = std::make_shared<arguments>();
  auto* plan = app.add_subcommand(
      "plan", "the live cluster through the planner, here (a dry run: nothing moves), with each broker before/after");
  plan->add_flag("--converge", args->converge, "apply each plan and plan again until nothing is left to do");
  plan->add_flag("--last", args->last, "instead, the balance loop's own last plan");
  plan->add_flag("--explain", args->explain,
                 "say for each action the goal that chose it and its brokers before and after, and why a broker stays "
                 "out of band");
  plan->callback([&o, &run, args] {
    run = [&o, args](broker_client& c) {
      if (args->last)
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
          if (args->explain && d.HasMember("out_of_band") && d["out_of_band"].IsArray())
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
      auto report = moonmq::autobalancer::run_planner(std::move(input->snap), *detector, args->converge, 1000,
                                                         args->explain);
      std::cout << (o.json ? moonmq::autobalancer::render_plan_json(report)
                           : moonmq::autobalancer::render_plan_text(report));
      if (o.json) std::cout << "\n";
      return 0;
    };
  });
}

void add_move(CLI::App& app, const options& o, runner& run) {
  struct arguments {
    std::string topic, dest;
    int partition = 0;
  };
  auto args = std::make_shared<arguments>();
  auto* move = app.add_subcommand("move", "move a partition to another broker");
  move->add_option("topic", args->topic, "topic")->required();
  move->add_option("partition", args->partition, "partition")->required()->check(CLI::NonNegativeNumber);
  move->add_option("dest", args->dest, "destination broker id")->required();
  move->callback([&o, &run, args] {
    run = [&o, args](broker_client& c) {
      rapidjson::StringBuffer buf;  // written, never pasted: a name cannot add a field of its own
      rapidjson::Writer<rapidjson::StringBuffer> w(buf);
      w.StartObject();
      w.Key("topic");
      w.String(args->topic.c_str(), static_cast<rapidjson::SizeType>(args->topic.size()));
      w.Key("partition");
      w.Int(args->partition);
      w.Key("dest");
      w.String(args->dest.c_str(), static_cast<rapidjson::SizeType>(args->dest.size()));
      w.EndObject();
      const std::string body(buf.GetString(), buf.GetSize());
      return show(o, c.post("/v1/reassignments", body), [](const rapidjson::Document& d) {
        std::cout << "move " << str(d, "id") << " started on " << str(d, "source") << ": " << str(d, "topic") << "-"
                  << str(d, "partition") << " -> " << str(d, "dest") << "\n";
      });
    };
  });
}

void add_moves(CLI::App& app, const options& o, runner& run) {
  struct arguments {
    bool watch = false, all = false;
  };
  auto args = std::make_shared<arguments>();
  auto* moves = app.add_subcommand("moves", "moves in progress with step, bytes, rate and ETA");
  moves->add_flag("-w,--watch", args->watch,
                  "refresh every second until no move runs, then show how each move watched ended");
  moves->add_flag("-a,--all", args->all, "also the recently finished ones");
  moves->callback([&o, &run, args] {
    run = [&o, args](broker_client& c) {
      const std::string path = args->all ? "/v1/reassignments" : "/v1/reassignments?active=true";
      if (!args->watch) return show(o, c.get(path), [](const rapidjson::Document& d) { print_moves(d); });
      // Watching: the rate is measured here, between two samples of a move's copied bytes; the moves seen running
      // are shown once more, as they ended, when none runs any more.
      struct sample {
        double bytes = 0;
        std::chrono::steady_clock::time_point at;
      };
      // A move's id is its source's: (source, id) names it in the cluster.
      using key = std::pair<std::string, std::uint64_t>;
      std::map<key, sample> last;
      std::set<key> watched;
      while (true) {
        auto a = c.get(path);
        const auto now = std::chrono::steady_clock::now();
        rapidjson::Document d;
        d.Parse(a.body.c_str(), a.body.size());
        measured_rates rates;
        if (a.ok() && !d.HasParseError())
          for (const auto& m : array(d, "reassignments").GetArray()) {
            if (flag(m, "finished") || !m.HasMember("id") || !m["id"].IsUint64()) continue;
            const key k{str(m, "source"), m["id"].GetUint64()};
            watched.insert(k);
            if (auto it = last.find(k); it != last.end()) {
              const double seconds = std::chrono::duration<double>(now - it->second.at).count();
              if (seconds > 0) rates[k] = std::max(0.0, (num(m, "bytes_copied") - it->second.bytes) / seconds);
            }
            last[k] = {num(m, "bytes_copied"), now};
          }
        if (!o.json && a.ok()) std::cout << "\x1b[H\x1b[2J" << std::flush;  // clear the screen
        const int rc = show(o, a, [&](const rapidjson::Document& doc) { print_moves(doc, &rates); });
        if (rc != 0) return rc;
        // A broker that did not answer may be running one of the watched moves: not over until it is heard from.
        if (!any_running(a.body) && array(d, "unreachable").Empty()) break;
        std::this_thread::sleep_for(std::chrono::seconds(1));
      }
      if (watched.empty()) return 0;
      // How each watched move ended (finished moves are listed with `all`).
      auto all = c.get("/v1/reassignments");
      if (!all.ok()) return failed(all);
      rapidjson::Document d;
      d.Parse(all.body.c_str(), all.body.size());
      int rc = 0;
      for (const auto& m : array(d, "reassignments").GetArray()) {
        if (!m.HasMember("id") || !m["id"].IsUint64() || !watched.count({str(m, "source"), m["id"].GetUint64()}))
          continue;
        const bool ok = flag(m, "succeeded");
        if (!ok) rc = exit_refused;
        if (o.json) continue;
        std::cout << "move " << str(m, "id") << " of " << str(m, "topic") << "-" << str(m, "partition") << " to "
                  << str(m, "dest") << ": "
                  << (ok ? "done" : flag(m, "cancel_requested") ? "cancelled" : "failed: " + str(m, "error")) << "\n";
      }
      if (o.json) std::cout << all.body << "\n";
      return rc;
    };
  });
}

void add_cancel(CLI::App& app, const options& o, runner& run) {
  struct arguments {
    std::uint64_t id = 0;
    std::string source;
  };
  auto args = std::make_shared<arguments>();
  auto* cancel = app.add_subcommand("cancel", "cancel a move before its cutover (it is rolled back)");
  cancel->add_option("id", args->id, "the move's id (moonmqctl moves)")->required();
  cancel->add_option("--source", args->source, "the broker running it, when ids could clash");
  cancel->callback([&o, &run, args] {
    run = [&o, args](broker_client& c) {
      return show(o,
                  c.del("/v1/reassignments/" + std::to_string(args->id) +
                        (args->source.empty() ? "" : "?source=" + encoded(args->source))),
                  [](const rapidjson::Document& d) {
                    std::cout << "move " << str(d, "id") << " on " << str(d, "source")
                              << " is cancelling: it stops before its cutover and is rolled back\n";
                  });
    };
  });
}

void add_throttle(CLI::App& app, const options& o, runner& run) {
  struct arguments {
    std::string rate;
  };
  auto args = std::make_shared<arguments>();
  auto* throttle = app.add_subcommand("throttle", "show or set the cluster-wide copy throttle");
  throttle->add_option("rate", args->rate, "bytes per second (50M, 1.5GiB, 0 = unlimited); none: show");
  throttle->callback([&o, &run, args] {
    run = [&o, args](broker_client& c) {
      if (args->rate.empty())
        return show(o, c.get("/v1/reassignments/throttle"), [](const rapidjson::Document& d) {
          table t({"BROKER", "THROTTLE"});
          for (const auto& b : array(d, "brokers").GetArray())
            t.add({str(b, "broker"), b.HasMember("bytes_per_sec")
                                         ? rate_text(static_cast<std::uint64_t>(num(b, "bytes_per_sec")))
                                         : "UNREACHABLE: " + str(b, "error")});
          std::cout << t.render();
        });
      auto rate = parse_rate(args->rate);
      if (!rate) {
        std::cerr << "moonmqctl: '" << args->rate << "' is not a rate (examples: 1048576, 50M, 1.5GiB, 0)\n";
        return exit_usage;
      }
      return show(o, c.put("/v1/reassignments/throttle", "{\"bytes_per_sec\":" + std::to_string(*rate) + "}"),
                  [&](const rapidjson::Document& d) {
                    std::cout << "copy throttle " << rate_text(*rate) << "\n";
                    print_applied(d);
                  });
    };
  });
}

}  // namespace moonmq::ctl
