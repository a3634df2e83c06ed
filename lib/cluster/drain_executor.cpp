#include "moonmq/cluster/drain_executor.hpp"

#include <rapidjson/document.h>

#include <cmath>
#include <map>

#include "json/parse.hpp"
#include "json/writer.hpp"
#include "moonmq/cluster/balance_loop.hpp"
#include "moonmq/cluster/drain_plan.hpp"
#include "moonmq/cluster/reassigner.hpp"

namespace moonmq::cluster {

namespace {

using json::put;

std::string state_document(const std::set<std::string>& draining) {
  return json::object([&](json::writer& w) {
    w.Key("draining");
    w.StartArray();
    for (const auto& b : draining) w.String(b.c_str(), static_cast<rapidjson::SizeType>(b.size()));
    w.EndArray();
  });
}

std::string idle_progress(const std::string& self, bool draining) {
  return json::object([&](json::writer& w) {
    put(w, "broker", self);
    put(w, "draining", draining);
  });
}

}  // namespace

drain_executor::drain_executor(drain_options options, reassigner& moves, asio::any_io_executor ex, balance_loop* loop,
                               std::unique_ptr<storage::state_file> state, drain_reports reports, logger& log)
    : opt_(std::move(options)),
      moves_(moves),
      ex_(std::move(ex)),
      loop_(loop),
      state_(std::move(state)),
      reports_(std::move(reports)),
      log_(log) {}

result<std::unique_ptr<drain_executor>> drain_executor::open(drain_options options, reassigner& moves,
                                                             asio::any_io_executor ex, balance_loop* loop,
                                                             std::unique_ptr<storage::state_file> state,
                                                             drain_reports reports, logger& log) {
  std::unique_ptr<drain_executor> d(
      new drain_executor(std::move(options), moves, std::move(ex), loop, std::move(state), std::move(reports), log));
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
  const std::string self = d->opt_.self.value();
  d->progress_ = idle_progress(self, d->draining_.count(self) > 0);
  return d;
}

std::set<std::string> drain_executor::draining() const {
  std::lock_guard lock(mu_);
  return draining_;
}

std::string drain_executor::progress_document() const {
  std::lock_guard lock(mu_);
  return progress_;
}

status drain_executor::set(const std::string& broker, bool draining) {
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
  if (broker == opt_.self.value() && !draining) progress_ = idle_progress(broker, false);
  return {};
}

void drain_executor::round() {
  std::lock_guard one_round(round_mu_);
  const std::string self = opt_.self.value();
  auto draining = this->draining();
  if (!draining.count(self)) return;
  std::set<topic_partition> moving;
  std::map<topic_partition, std::string> held;  // a move that failed lately is not retried at once
  const double now = static_cast<double>(opt_.wall_ms()) / 1000.0;
  const auto retry = static_cast<double>(opt_.retry_after.count());
  double rate = 0;
  for (const auto& m : moves_.progress()) {
    if (!m.finished) {
      moving.insert(m.partition);
      rate += m.rate_bytes_per_sec;
    } else if (!m.succeeded && now - m.finished_at < retry) {
      held[m.partition] = "its move to " + m.dest + " failed " + std::to_string(std::lround(now - m.finished_at)) +
                          " s ago (" + m.error + "); tried again " +
                          std::to_string(std::lround(retry - (now - m.finished_at))) + " s from now";
    }
  }
  std::vector<drain_partition> mine;
  std::vector<drain_target> targets;
  for (const auto& b : reports_()) {
    std::uint64_t bytes = 0;
    for (const auto& p : b.partitions) bytes += p.size_bytes;
    targets.push_back({b.broker, b.answered, draining.count(b.broker) > 0, bytes});
    if (b.broker == self)
      for (const auto& p : b.partitions) {
        auto h = held.find(p.partition);
        mine.push_back({p.partition, p.size_bytes, moving.count(p.partition) > 0,
                        h == held.end() ? std::string() : h->second});
      }
  }
  auto plan = plan_drain(self, std::move(mine), targets, opt_.max_moves, opt_.excluded);
  std::size_t started = 0;
  for (const auto& m : plan.start) {
    auto id = moves_.start(ex_, m.partition, broker_id(m.dest));
    const std::string name = m.partition.topic + "-" + std::to_string(m.partition.partition);
    if (id) {
      ++started;
      log_.info("drain", "moving " + name + " to " + m.dest + " (move " + std::to_string(*id) + ")");
    } else {
      plan.blocked.push_back({m.partition, "could not start a move to " + m.dest + ": " + id.message()});
    }
  }
  // Only partitions that cannot move keep a drain from ending; it is done when nothing is left.
  std::string doc = json::object([&](json::writer& w) {
    put(w, "broker", self);
    put(w, "draining", true);
    put(w, "done", plan.partitions_left == 0);
    put(w, "partitions_left", plan.partitions_left);
    put(w, "bytes_left", plan.bytes_left);
    put(w, "moving", plan.moving + started);
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

}  // namespace moonmq::cluster
