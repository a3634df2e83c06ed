#include "moonmq/frontend/placement_directory.hpp"

#include "cluster/wire_json.hpp"

namespace moonmq::frontend {

placement_directory::placement_directory(placement_directory_options options, transport::peer_client& peers)
    : opt_(std::move(options)), peers_(peers) {}

std::uint64_t placement_directory::started() const {
  std::lock_guard lock(mu_);
  return started_;
}

void placement_directory::rebuild(std::uint64_t seen) const {
  std::lock_guard round(refresh_mu_);
  {
    // Refreshes run one at a time: one that began after the caller's miss has ended by now, and its picture is as
    // new as this one would be. One that was under way at the miss may have asked before it: not enough.
    std::lock_guard lock(mu_);
    if (last_ended_start_ > seen) return;
  }
  rebuild_locked();
}

void placement_directory::rebuild_locked() const {
  std::uint64_t number = 0;
  {
    std::lock_guard lock(mu_);
    number = ++started_;
  }
  std::set<broker_id> silent;
  for (const auto& b : opt_.brokers) {
    if (b == opt_.self) {
      reports_[b] = {opt_.local(), opt_.clock()};
      continue;
    }
    if (auto wait = retry_at_.find(b); wait != retry_at_.end() && opt_.clock() < wait->second) {
      silent.insert(b);
      continue;
    }
    const time_ms asked = opt_.clock();
    auto r = peers_.call_now(b.value(), transport::get_request("/cluster/loads"));
    auto loads = r && r->ok() ? cluster::wire::read_load_report(r->body) : std::nullopt;
    if (!loads) {
      if (const time_ms failed = opt_.clock(); failed - asked >= opt_.slow_failure)
        retry_at_[b] = failed + opt_.retry_after;
      else
        retry_at_.erase(b);
      silent.insert(b);
      continue;
    }
    retry_at_.erase(b);
    reports_[b] = {std::move(loads->partitions), opt_.clock()};
  }
  const time_ms now = opt_.clock();
  std::erase_if(reports_, [&](const auto& r) { return now - r.second.at > opt_.forget_after; });
  // The brokers that answered this round first: a partition that moved while its old owner went silent is placed
  // where it went. A partition two brokers report alike (a topic made on both before topics were cluster
  // metadata) goes to the first by id; the front ends and the coordinator never see two owners.
  std::map<topic_partition, broker_id> next;
  for (bool fresh : {true, false})
    for (const auto& [b, r] : reports_)
      if (fresh == !silent.count(b))
        for (const auto& l : r.loads) next.try_emplace(l.partition, b);
  std::lock_guard lock(mu_);
  owners_ = std::move(next);
  silent_ = std::move(silent);
  if (!first_refresh_) first_refresh_ = now;
  last_refresh_ = now;
  last_ended_start_ = number;
  all_reported_ = all_reported_ || reports_.size() == opt_.brokers.size();
}

void placement_directory::refresh_if_older(time_ms age) {
  std::unique_lock round(refresh_mu_, std::try_to_lock);
  if (!round) return;  // one is running: it is as fresh as this one would be
  {
    std::lock_guard lock(mu_);
    if (last_refresh_ && opt_.clock() - *last_refresh_ < age) return;
  }
  rebuild_locked();
}

bool placement_directory::known() const {
  std::lock_guard lock(mu_);
  return all_reported_ || (first_refresh_ && opt_.clock() - *first_refresh_ > opt_.settle);
}

std::optional<std::vector<std::pair<topic_partition, broker_id>>> placement_directory::placements(
    const std::set<std::string>& topics) const {
  if (!known()) return std::nullopt;
  std::vector<std::pair<topic_partition, broker_id>> out;
  {
    std::lock_guard lock(mu_);
    for (const auto& [tp, owner] : owners_)
      if (topics.count(tp.topic)) out.emplace_back(tp, owner);
  }
  std::erase_if(out, [this](const auto& p) { return ruled_out(p.first.topic, p.first.partition); });
  return out;
}

std::vector<broker_id> placement_directory::unanswered() const {
  std::lock_guard lock(mu_);
  return {silent_.begin(), silent_.end()};
}

void placement_directory::learn(const topic_partition& tp, const broker_id& owner) {
  std::lock_guard lock(mu_);
  owners_[tp] = owner;
}

bool placement_directory::has(const std::string& topic, std::optional<std::int32_t> partition) const {
  std::lock_guard lock(mu_);
  if (partition) return owners_.count({topic, *partition}) > 0;
  auto it = owners_.lower_bound({topic, INT32_MIN});
  return it != owners_.end() && it->first.topic == topic;
}

void placement_directory::refresh_on_miss(const std::string& topic, std::optional<std::int32_t> partition) const {
  if (has(topic, partition)) return;
  std::uint64_t seen = 0;
  {
    std::lock_guard lock(mu_);
    auto [it, fresh] = missed_.try_emplace(topic, 0);
    const time_ms now = opt_.clock();
    if (!fresh && now - it->second < opt_.miss_refresh) return;
    it->second = now;
    if (missed_.size() > 4096) missed_.clear();  // names asked for that exist nowhere: never kept without bound
    seen = started_;
  }
  // Misses of many names at once wait for one refresh and take its picture (rebuild skips when one ended while
  // they waited): however many names are asked for, at most one round of requests is under way.
  rebuild(seen);
}

std::map<std::int32_t, broker_id> placement_directory::topic_owners(const std::string& topic) const {
  if (ruled_out(topic, std::nullopt)) return {};
  refresh_on_miss(topic, std::nullopt);
  std::map<std::int32_t, broker_id> out;
  {
    std::lock_guard lock(mu_);
    for (auto it = owners_.lower_bound({topic, INT32_MIN}); it != owners_.end() && it->first.topic == topic; ++it)
      out.emplace(it->first.partition, it->second);
  }
  std::erase_if(out, [&](const auto& p) { return ruled_out(topic, p.first); });
  return out;
}

std::optional<broker_id> placement_directory::owner_of(const topic_partition& tp) const {
  if (ruled_out(tp.topic, tp.partition)) return std::nullopt;
  refresh_on_miss(tp.topic, tp.partition);
  std::lock_guard lock(mu_);
  auto it = owners_.find(tp);
  return it == owners_.end() ? std::nullopt : std::optional<broker_id>(it->second);
}

}  // namespace moonmq::frontend
