// moonmqctl's subcommands about where partitions may live: the balance loop, drain, undrain and reclaim.
#include <rapidjson/document.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "commands.hpp"
#include "table.hpp"

namespace moonmq::ctl {

void add_balancer(CLI::App& app, const options& o, runner& run) {
  auto* balancer = app.add_subcommand("balancer", "the balance loop: status, pause, resume");
  balancer->require_subcommand(1);
  balancer->add_subcommand("status", "the loop's state")->callback([&o, &run] {
    run = [&o](broker_client& c) {
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
        if (d.HasMember("controller_silent"))
          std::cout << "warning:     the controller, " << str(d["controller_silent"], "id")
                    << ", did not answer; this is the broker asked's own state\n";
        std::cout << "planned:     " << array(d, "plan").Size() << " actions; " << array(d, "moves").Size()
                  << " moves followed\n";
      });
    };
  });
  for (const char* verb : {"pause", "resume"}) {
    balancer->add_subcommand(verb, std::string(verb) + " the loop on every broker")->callback([&o, &run, verb] {
      run = [&o, verb](broker_client& c) {
        return show(o, c.post(std::string("/v1/autobalancer/") + verb), [&](const rapidjson::Document& d) {
          std::cout << "balancer " << (std::string(verb) == "pause" ? "paused" : "resumed") << "\n";
          print_applied(d);
        });
      };
    });
  }
}

void add_drain(CLI::App& app, const options& o, runner& run) {
  struct arguments {
    std::string broker;
    bool watch = false;
  };
  auto args = std::make_shared<arguments>();
  auto* drain = app.add_subcommand("drain", "move every partition off a broker; nothing moves onto it until undrained");
  drain->add_option("broker", args->broker, "broker id")->required();
  drain->add_flag("-w,--watch", args->watch, "follow the drain until it is done");
  drain->callback([&o, &run, args] {
    run = [&o, args](broker_client& c) {
      int rc = show(o, c.post("/v1/brokers/" + encoded(args->broker) + "/drain"), [&](const rapidjson::Document& d) {
        std::cout << args->broker << " is draining\n";
        print_applied(d);
      });
      if (rc != 0 || !args->watch) return rc;
      while (true) {
        auto a = c.get("/v1/brokers/" + encoded(args->broker) + "/drain");
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
          if (!o.json) std::cout << args->broker << " is drained\n";
          return 0;
        }
        std::this_thread::sleep_for(std::chrono::seconds(1));
      }
    };
  });
}

void add_undrain(CLI::App& app, const options& o, runner& run) {
  struct arguments {
    std::string broker;
  };
  auto args = std::make_shared<arguments>();
  auto* undrain = app.add_subcommand("undrain", "let a drained broker receive partitions again");
  undrain->add_option("broker", args->broker, "broker id")->required();
  undrain->callback([&o, &run, args] {
    run = [&o, args](broker_client& c) {
      return show(o, c.del("/v1/brokers/" + encoded(args->broker) + "/drain"), [&](const rapidjson::Document& d) {
        std::cout << args->broker << " may receive partitions again\n";
        print_applied(d);
      });
    };
  });
}

void add_reclaim(CLI::App& app, const options& o, runner& run) {
  struct arguments {
    std::string broker;
    bool list = false;
  };
  auto args = std::make_shared<arguments>();
  auto* reclaim = app.add_subcommand("reclaim", "delete the copies a broker keeps of partitions it no longer serves");
  reclaim->add_option("broker", args->broker, "broker id")->required();
  reclaim->add_flag("-l,--list", args->list, "only list the copies and what holds each back");
  reclaim->callback([&o, &run, args] {
    run = [&o, args](broker_client& c) {
      const std::string path = "/v1/brokers/" + encoded(args->broker) + "/reclaim";
      if (args->list)
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
}

}  // namespace moonmq::ctl
