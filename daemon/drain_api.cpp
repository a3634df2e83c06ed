#include "drain_api.hpp"

#include <rapidjson/document.h>

#include <chrono>
#include <map>

#include "api_reply.hpp"
#include "cluster/wire_json.hpp"
#include "json/object_reader.hpp"
#include "moonmq/cluster/drain_plan.hpp"

namespace moonmq::daemon {

namespace {

using json::put;
using json_writer = json::writer;

/// A partition whose drain move failed is tried again after this long (not every tick).
constexpr double retry_after_seconds = 30;

std::string state_document(const std::set<std::string>& draining) {
  return json::object([&](json_writer& w) {
    w.Key("draining");
    w.StartArray();
    for (const auto& b : draining) w.String(b.c_str(), static_cast<rapidjson::SizeType>(b.size()));
    w.EndArray();
  });
}

std::string idle_progress(const std::string& self, bool draining) {
  return json::object([&](json_writer& w) {
    put(w, "broker", self);
    put(w, "draining", draining);
  });
}

}  // namespace

drain_api::drain_api(drain_options options, cluster_view& view, cluster::reassigner& reassigner,
                     asio::any_io_executor ex, cluster::balance_loop* loop, std::unique_ptr<storage::state_file> state,
                     logger& log)
    : opt_(std::move(options)),
      view_(view),
      reassigner_(reassigner),
      ex_(std::move(ex)),
      loop_(loop),
      state_(std::move(state)),
      log_(log) {}

result<std::unique_ptr<drain_api>> drain_api::open(drain_options options, cluster_view& view,
                                                   cluster::reassigner& reassigner, asio::any_io_executor ex,
                                                   cluster::balance_loop* loop,
                                                   std::unique_ptr<storage::state_file> state, logger& log) {
  std::unique_ptr<drain_api> d(
      new drain_api(std::move(options), view, reassigner, std::move(ex), loop, std::move(state), log));
  auto kept = d->state_->read();
  if (!kept) return kept.err();
  if (*kept) {
    rapidjson::Document doc;
    if (!json::parse_object(**kept, doc) || !doc.HasMember("draining") || !doc["draining"].IsArray())
      return error{errc::corrupt, d->state_->name() + ": expected {\"draining\": [broker ids]}"};
    for (const auto& b : doc["draining"].GetArray()) {
      if (!b.IsString()) return error{errc::corrupt, d->state_->name() + ": a broker id is not a string"};
      d->draining_.insert(b.GetString());
    }
  }
  if (loop) loop->set_draining(d->draining_);
  d->progress_ = idle_progress(view.self().value(), d->draining_.count(view.self().value()) > 0);
  d->ticker_ = std::make_unique<ticker>(d->opt_.tick, [raw = d.get()] { raw->tick(); });
  return d;
}

drain_api::~drain_api() {
  if (ticker_) ticker_->stop();
}

std::set<std::string> drain_api::draining() const {
  std::lock_guard lock(mu_);
  return draining_;
}

std::string drain_api::progress_document() const {
  std::lock_guard lock(mu_);
  return progress_;
}

status drain_api::set(const std::string& broker, bool draining) {
  std::lock_guard lock(mu_);
  auto next = draining_;
  if (draining)
    next.insert(broker);
  else
    next.erase(broker);
  if (next != draining_) {
    if (auto s = state_->replace(state_document(next)); !s) return s;
    draining_ = std::move(next);
    log_.info("drain", broker + (draining ? " is draining: its partitions move away and nothing moves onto it"
                                          : " is no longer draining"));
  }
  if (loop_) loop_->set_draining(draining_);
  if (broker == view_.self().value() && !draining) progress_ = idle_progress(broker, false);
  if (ticker_) ticker_->wake();
  return {};
}

/// One round of this broker's own drain: what is left, and the next moves.
void drain_api::tick() {
  const std::string self = view_.self().value();
  auto draining = this->draining();
  if (!draining.count(self)) return;
  const auto moves = reassigner_.progress();
  std::set<topic_partition> moving;
  std::map<topic_partition, std::string> held;  // a move that failed lately is not retried at once
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  double rate = 0;
  for (const auto& m : moves) {
    if (!m.finished) {
      moving.insert(m.partition);
      rate += m.rate_bytes_per_sec;
    } else if (!m.succeeded && now - m.finished_at < retry_after_seconds) {
      held[m.partition] = "its move to " + m.dest + " failed " + std::to_string(static_cast<long>(now - m.finished_at)) +
                          " s ago (" + m.error + "); tried again " +
                          std::to_string(static_cast<long>(retry_after_seconds - (now - m.finished_at))) + " s from now";
    }
  }
  std::vector<cluster::drain_partition> mine;
  std::vector<cluster::drain_target> targets;
  for (const auto& b : view_.brokers()) {
    std::uint64_t bytes = 0;
    for (const auto& p : b.partitions) bytes += p.size_bytes;
    targets.push_back({b.id, b.reachable, draining.count(b.id) > 0, bytes});
    if (b.self)
      for (const auto& p : b.partitions) {
        auto h = held.find(p.partition);
        mine.push_back({p.partition, p.size_bytes, moving.count(p.partition) > 0,
                        h == held.end() ? std::string() : h->second});
      }
  }
  auto plan = cluster::plan_drain(self, std::move(mine), targets, opt_.max_moves, opt_.excluded);
  std::vector<std::string> started;
  for (const auto& m : plan.start) {
    auto id = reassigner_.start(ex_, m.partition, broker_id(m.dest));
    const std::string name = m.partition.topic + "-" + std::to_string(m.partition.partition);
    if (id) {
      started.push_back(name + " -> " + m.dest);
      log_.info("drain", "moving " + name + " to " + m.dest + " (move " + std::to_string(*id) + ")");
    } else {
      plan.blocked.push_back({m.partition, "could not start a move to " + m.dest + ": " + id.message()});
    }
  }
  // Only partitions that cannot move keep a drain from ending; it is done when nothing is left.
  std::string doc = json::object([&](json_writer& w) {
    put(w, "broker", self);
    put(w, "draining", true);
    put(w, "done", plan.partitions_left == 0);
    put(w, "partitions_left", plan.partitions_left);
    put(w, "bytes_left", plan.bytes_left);
    put(w, "moving", plan.moving + started.size());
    put(w, "eta_seconds", rate > 0 ? static_cast<double>(plan.bytes_left) / rate : -1.0);
    w.Key("blocked");
    w.StartArray();
    for (const auto& b : plan.blocked) {
      w.StartObject();
      put(w, "topic", b.partition.topic);
      put(w, "partition", b.partition.partition);
      put(w, "reason", b.reason);
      w.EndObject();
    }
    w.EndArray();
  });
  std::lock_guard lock(mu_);
  if (draining_.count(self)) progress_ = std::move(doc);
}

void drain_api::routes(api_routes& api) {
  api.Post(R"(/v1/brokers/([^/]+)/drain)",
           [this](const httplib::Request& req, httplib::Response& res) { change(req.matches[1], true, res); });
  api.Delete(R"(/v1/brokers/([^/]+)/drain)",
             [this](const httplib::Request& req, httplib::Response& res) { change(req.matches[1], false, res); });
  api.Get(R"(/v1/brokers/([^/]+)/drain)", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    if (id == view_.self().value()) return reply(res, 200, progress_document());
    if (!view_.is_peer(id)) return reply_error(res, 404, "not_found", "unknown broker '" + id + "'");
    auto r = view_.ask(id, transport::get_request("/cluster/admin/drain"));
    if (r.status == 0) return reply_peer_error(res, 503, "unavailable", id + " did not answer", id, r);
    relay(res, r);
  });
}

void drain_api::change(const std::string& broker, bool draining, httplib::Response& res) {
  if (broker != view_.self().value() && !view_.is_peer(broker))
    return reply_error(res, 404, "not_found", "unknown broker '" + broker + "'");
  transport::request tell;
  tell.path = "/cluster/admin/drain";
  tell.body = json::object([&](json_writer& w) {
    put(w, "broker", broker);
    put(w, "draining", draining);
  });
  auto r = view_.apply_everywhere(set(broker, draining), tell);
  reply_fanout(res, r,
               "not every broker was told; a broker that missed it may still move partitions onto " + broker +
                   ": try again",
               [&](json_writer& w) {
                 put(w, "broker", broker);
                 put(w, "draining", draining);
               });
}

transport::response drain_api::handle_cluster(const transport::request& req) {
  if (req.method == "GET") return {200, progress_document(), "application/json"};
  rapidjson::Document d;
  if (auto s = json::parse_document(req.body, d, "body"); !s)
    return transport::error_response(400, "invalid_argument", s.message());
  json::object_reader r(d, "");
  std::string broker;
  bool draining = false;
  r.get("broker", broker, true);
  r.get("draining", draining, true);
  if (auto s = r.finish(); !s) return transport::error_response(400, "invalid_argument", s.message());
  if (broker != view_.self().value() && !view_.is_peer(broker))
    return transport::error_response(404, "not_found", "unknown broker '" + broker + "'");
  if (auto s = set(broker, draining); !s)
    return transport::error_response(transport::http_status_of(s.code()), errc_name(s.code()), s.message());
  return {200, "{\"ok\":true}", "application/json"};
}

}  // namespace moonmq::daemon
