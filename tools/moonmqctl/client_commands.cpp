// moonmqctl's subcommands about what the brokers coordinate for clients: consumer groups and transactions. The lists
// are the whole cluster's (the broker asked asks every peer; `--local`: its own only); `describe` asks the group's or
// transaction's coordinator, wherever it is (the broker asked forwards).
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <CLI/CLI.hpp>

#include <functional>
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

/// Every page of a paged list as one answer: the `key` entries of all pages in the first page's array. A page that
/// stops short says where the next begins (`next` in a cluster-wide list; `more` in a broker's own, which goes on
/// after its last entry's name, `name_of`). A page that fails is the answer. A cluster-wide list's `brokers` are
/// merged: a broker counts as answered only if it answered every page (its first error kept), since a page it missed
/// lacks what it coordinates.
/// Folds a later page's `brokers` into `all`'s: answered only if answered on every page, the first error kept, a
/// broker first seen on this page added.
void merge_brokers(rapidjson::Document& all, const rapidjson::Document& page) {
  if (!all.HasMember("brokers") || !all["brokers"].IsArray() || !page.HasMember("brokers") || !page["brokers"].IsArray())
    return;
  auto& alloc = all.GetAllocator();
  for (const auto& b : page["brokers"].GetArray()) {
    if (!b.IsObject()) continue;
    rapidjson::Value* known = nullptr;
    for (auto& k : all["brokers"].GetArray())
      if (k.IsObject() && str(k, "id") == str(b, "id")) known = &k;
    if (!known) {
      all["brokers"].PushBack(rapidjson::Value(b, alloc), alloc);
      continue;
    }
    if (flag(b, "answered") || !flag(*known, "answered")) continue;
    (*known)["answered"] = false;
    if (b.HasMember("error") && !known->HasMember("error"))
      known->AddMember("error", rapidjson::Value(b["error"], alloc), alloc);
  }
}

/// `page`: names per request (0: the broker's default).
answer every_page(broker_client& c, std::string path, const char* key,
                  const std::function<std::string(const rapidjson::Value&)>& name_of, std::size_t page) {
  if (page > 0) path += std::string(path.find('?') == std::string::npos ? "?" : "&") + "limit=" + std::to_string(page);
  rapidjson::Document all;
  std::string after;
  for (bool first = true;; first = false) {
    const std::string sep = path.find('?') == std::string::npos ? "?" : "&";
    answer a = c.get(first ? path : path + sep + "after=" + encoded(after));
    if (!a.ok()) return a;
    rapidjson::Document d(&all.GetAllocator());
    d.Parse(a.body.c_str(), a.body.size());
    if (d.HasParseError() || !d.IsObject() || !d.HasMember(key) || !d[key].IsArray()) return a;
    std::string next;
    if (d.HasMember("next") && d["next"].IsString())
      next = d["next"].GetString();
    else if (flag(d, "more") && !d[key].Empty())
      next = name_of(d[key][d[key].Size() - 1]);
    if (first) {
      all.CopyFrom(d, all.GetAllocator());
    } else {
      for (auto& e : d[key].GetArray()) all[key].PushBack(rapidjson::Value(e, all.GetAllocator()), all.GetAllocator());
      merge_brokers(all, d);
    }
    if (next.empty() || next <= after) break;  // the end, or a page that does not go on (never asked again)
    after = next;
  }
  all.RemoveMember("next");
  all.RemoveMember("more");
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  all.Accept(w);
  return {200, buf.GetString()};
}

std::string string_name(const rapidjson::Value& v) { return v.IsString() ? v.GetString() : ""; }
std::string txn_name(const rapidjson::Value& v) { return str(v, "transactional_id"); }

}  // namespace

void add_groups(CLI::App& app, const options& o, runner& run) {
  auto* groups = app.add_subcommand("groups", "consumer groups, each with its coordinator, from every broker");
  auto local = std::make_shared<bool>(false);
  groups->add_flag("--local", *local, "only the groups the broker asked coordinates");
  auto page = std::make_shared<std::size_t>(0);
  groups->add_option("--page", *page, "names per request (the broker's default: 1000; at most 10000)")
      ->check(CLI::Range(1, 10000));
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
  groups->callback([&o, &run, describe, local, page] {
    if (describe->parsed()) return;
    if (*local) {
      run = [&o, page](broker_client& c) {
        return show(o, every_page(c, "/v1/groups", "groups", string_name, *page), [](const rapidjson::Document& d) {
          std::cout << "groups coordinated by " << str(d, "coordinator") << ":\n";
          for (const auto& g : array(d, "groups").GetArray()) std::cout << "  " << g.GetString() << "\n";
          if (array(d, "groups").Empty()) std::cout << "  (none)\n";
        });
      };
      return;
    }
    run = [&o, page](broker_client& c) {
      return show(o, every_page(c, "/v1/groups?scope=cluster", "groups", [](const rapidjson::Value& g) {
                    return str(g, "group");
                  }, *page), [](const rapidjson::Document& d) {
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
  auto page = std::make_shared<std::size_t>(0);
  transactions->add_option("--page", *page, "transactional ids per request (the broker's default: 1000; at most 10000)")
      ->check(CLI::Range(1, 10000));
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
  transactions->callback([&o, &run, describe, local, page] {
    if (describe->parsed()) return;
    const bool cluster = !*local;
    run = [&o, cluster, page](broker_client& c) {
      return show(o, every_page(c, cluster ? "/v1/transactions?scope=cluster" : "/v1/transactions", "transactions",
                                txn_name, *page),
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
