#include "cluster_api.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <map>

#include "api_reply.hpp"

namespace moonmq::daemon {

namespace {
using json::put;
using json_writer = json::writer;

void write_unreachable(json_writer& w, const std::vector<broker_report>& all) {
  w.Key("unreachable");
  w.StartArray();
  for (const auto& b : all)
    if (!b.reachable) {
      w.StartObject();
      put(w, "broker", b.id);
      put(w, "error", b.error);
      w.EndObject();
    }
  w.EndArray();
}
}  // namespace

void cluster_api::routes(api_routes& api) {
  api.Get("/v1/brokers", [this](const httplib::Request&, httplib::Response& res) { brokers(res); });
  api.Get("/v1/partitions", [this](const httplib::Request& req, httplib::Response& res) { partitions(req, res); });
}

void cluster_api::brokers(httplib::Response& res) {
  auto all = view_.brokers();
  const std::string controller = controller_();
  const auto draining = draining_();
  std::map<std::string, std::string> reports;
  for (const auto& b : all)
    if (draining.count(b.id) && b.reachable) {
      // Embedded as it came only once it reads as a JSON object: one bad answer must not break the whole document.
      std::string r = drain_report_(b.id);
      rapidjson::Document d;
      if (json::parse_object(r, d)) reports[b.id] = std::move(r);
    }
  reply(res, 200, json_object([&](json_writer& w) {
          put(w, "answered_by", view_.self().value());
          put(w, "controller", controller);
          w.Key("brokers");
          w.StartArray();
          for (const auto& b : all) {
            std::uint64_t bytes = 0;
            for (const auto& p : b.partitions) bytes += p.size_bytes;
            w.StartObject();
            put(w, "id", b.id);
            put(w, "address", b.address);
            put(w, "self", b.self);
            put(w, "reachable", b.reachable);
            if (!b.reachable) put(w, "error", b.error);
            put(w, "controller", b.id == controller);
            if (b.reachable) {
              put(w, "partitions", b.partitions.size());
              put(w, "bytes", bytes);
              put(w, "held_bytes", b.held_bytes);  // copies not served, until reclaimed
              put(w, "strays", b.strays.size());   // logs the topic catalog did not make there, never served
            }
            put(w, "draining", draining.count(b.id) > 0);
            if (auto r = reports.find(b.id); r != reports.end() && !r->second.empty()) {
              w.Key("drain");
              w.RawValue(r->second.c_str(), r->second.size(), rapidjson::kObjectType);
            }
            w.EndObject();
          }
          w.EndArray();
        }));
}

void cluster_api::partitions(const httplib::Request& req, httplib::Response& res) {
  const std::string topic = req.get_param_value("topic");
  auto all = view_.brokers();
  struct row {
    cluster::partition_load load;
    std::string owner;
  };
  std::vector<row> rows, strays;  // strays: `owner` is the broker that holds it
  for (const auto& b : all) {
    for (const auto& p : b.partitions)
      if (topic.empty() || p.partition.topic == topic) rows.push_back({p, b.id});
    for (const auto& p : b.strays)
      if (topic.empty() || p.partition.topic == topic) strays.push_back({p, b.id});
  }
  std::sort(rows.begin(), rows.end(), [](const row& a, const row& b) {
    return a.load.partition < b.load.partition || (a.load.partition == b.load.partition && a.owner < b.owner);
  });
  reply(res, 200, json_object([&](json_writer& w) {
          w.Key("partitions");
          w.StartArray();
          for (std::size_t i = 0; i < rows.size(); ++i) {
            const auto& r = rows[i];
            w.StartObject();
            put(w, "topic", r.load.partition.topic);
            put(w, "partition", r.load.partition.partition);
            put(w, "owner", r.owner);
            put(w, "size_bytes", r.load.size_bytes);
            put(w, "open_transactions", r.load.open_transactions);
            // Two brokers reporting one partition is a fault the operator must see (never expected); so is a stray
            // log of it somewhere.
            const bool twice = (i > 0 && rows[i - 1].load.partition == r.load.partition) ||
                               (i + 1 < rows.size() && rows[i + 1].load.partition == r.load.partition);
            std::string stray_on;
            for (const auto& s : strays)
              if (s.load.partition == r.load.partition) stray_on += (stray_on.empty() ? "" : ", ") + s.owner;
            if (twice)
              put(w, "conflict", "served by more than one broker");
            else if (!stray_on.empty())
              put(w, "conflict", "a stray log of it on " + stray_on + " (not served)");
            w.EndObject();
          }
          w.EndArray();
          // Logs a broker holds that the topic catalog did not make there: never served, kept until reconciled.
          w.Key("strays");
          w.StartArray();
          for (const auto& s : strays) {
            w.StartObject();
            put(w, "topic", s.load.partition.topic);
            put(w, "partition", s.load.partition.partition);
            put(w, "broker", s.owner);
            put(w, "size_bytes", s.load.size_bytes);
            w.EndObject();
          }
          w.EndArray();
          write_unreachable(w, all);
        }));
}

}  // namespace moonmq::daemon
