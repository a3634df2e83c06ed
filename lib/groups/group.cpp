#include "moonmq/groups/group.hpp"

#include <algorithm>

namespace moonmq::groups {

group::group(group_state restored, group_timing timing, time_ms now) : timing_(timing), s_(std::move(restored)) {
  for (auto& [id, m] : s_.members) m.last_seen = now;
}

std::set<std::string> group::subscribed_topics() const {
  std::set<std::string> out;
  for (const auto& [id, m] : s_.members) out.insert(m.topics.begin(), m.topics.end());
  return out;
}

member_answer group::join(const std::string& member_id, const broker_id& broker, std::set<std::string> topics,
                          time_ms now) {
  auto [it, added] = s_.members.try_emplace(member_id);
  member& m = it->second;
  m.last_seen = now;
  const bool changed = added || m.broker != broker || m.topics != topics;
  if (added) {
    m.id = member_id;
  } else {
    // A rejoin: whatever incarnation held this id before is fenced (its epochs end here) and what it was handed is
    // revoked; the member is handed its partitions again through clearance, like anyone.
    m.handed.clear();
    m.owned.clear();
    m.previous_epoch = m.epoch;
    ++m.epoch;
  }
  m.broker = broker;
  m.topics = std::move(topics);
  if (changed) rebalance();
  return answer_for(m);
}

result<member_answer> group::heartbeat(const std::string& member_id, std::uint64_t member_epoch,
                                       const std::vector<topic_partition>& owned, time_ms now) {
  auto it = s_.members.find(member_id);
  if (it == s_.members.end())
    return error{errc::not_found, "member " + member_id + " is not in group " + s_.id + " (rejoin)"};
  member& m = it->second;
  if (member_epoch != m.epoch && member_epoch != m.previous_epoch)
    return error{errc::conflict, "member " + member_id + " of group " + s_.id + " is at epoch " +
                                     std::to_string(m.epoch) + ", not " + std::to_string(member_epoch) + " (rejoin)"};
  m.last_seen = now;
  m.owned = {owned.begin(), owned.end()};  // whatever it says it holds keeps others from being handed it
  return answer_for(m);
}

status group::leave(const std::string& member_id) {
  if (!s_.members.erase(member_id)) return {errc::not_found, "member " + member_id + " is not in group " + s_.id};
  rebalance();
  return {};
}

std::vector<std::string> group::expire(time_ms now) {
  std::vector<std::string> gone;
  for (auto it = s_.members.begin(); it != s_.members.end();) {
    const time_ms timeout = it->second.session_timeout_ms > 0 ? it->second.session_timeout_ms : timing_.session_timeout_ms;
    if (now - it->second.last_seen > timeout) {
      gone.push_back(it->first);
      it = s_.members.erase(it);
    } else {
      ++it;
    }
  }
  if (!gone.empty()) rebalance();
  return gone;
}

void group::set_placement(std::vector<placement> partitions, time_ms now) {
  const bool anywhere = std::any_of(s_.members.begin(), s_.members.end(), [](const auto& m) { return m.second.anywhere; });
  std::set<topic_partition> reported;
  for (const auto& p : partitions) reported.insert(p.partition);
  if (anywhere && placed_)
    for (const auto& p : placement_)
      if (!reported.count(p.partition) && s_.target.count(p.partition))
        vanished_.try_emplace(p.partition, p.owner, now);
  std::erase_if(vanished_, [&](const auto& v) {
    return !anywhere || reported.count(v.first) || now - v.second.second > timing_.session_timeout_ms;
  });
  for (const auto& [tp, last] : vanished_) partitions.push_back({tp, last.first});
  std::sort(partitions.begin(), partitions.end(),
            [](const placement& a, const placement& b) { return a.partition < b.partition; });
  if (placed_ && partitions == placement_) return;
  placement_ = std::move(partitions);
  placed_ = true;
  rebalance();
}

void group::rebalance() {
  if (!placed_) return;  // not knowing the partitions is not knowing there are none
  const auto topics = subscribed_topics();
  std::map<broker_id, std::vector<topic_partition>> by_owner;
  for (const auto& p : placement_)
    if (topics.count(p.partition.topic)) by_owner[p.owner].push_back(p.partition);
  std::map<topic_partition, std::string> next;
  unassigned_.clear();
  const bool anywhere = std::any_of(s_.members.begin(), s_.members.end(), [](const auto& m) { return m.second.anywhere; });
  if (anywhere) next = target_anywhere();
  for (const auto& [owner, parts] : by_owner) {
    if (anywhere) break;
    std::vector<const member*> local;
    for (const auto& [id, m] : s_.members)
      if (m.broker == owner) local.push_back(&m);
    // Quotas: every local member gets floor(P/n), and P mod n of them one more, those holding the most now first
    // (so that as little as possible moves).
    std::map<std::string, std::size_t> quota, count, holding;
    for (const auto& [tp, holder] : s_.target) ++holding[holder];
    std::vector<const member*> by_holding = local;
    std::stable_sort(by_holding.begin(), by_holding.end(),
                     [&](const member* a, const member* b) { return holding[a->id] > holding[b->id]; });
    for (std::size_t i = 0; i < by_holding.size(); ++i)
      quota[by_holding[i]->id] = parts.size() / local.size() + (i < parts.size() % local.size() ? 1 : 0);
    auto eligible = [&](const member& m, const topic_partition& tp) {
      return m.broker == owner && m.topics.count(tp.topic) > 0;
    };
    // Sticky: a partition stays with its member while that member may still take it and has no more than its share.
    for (const auto& tp : parts) {
      auto prev = s_.target.find(tp);
      if (prev == s_.target.end()) continue;
      auto m = s_.members.find(prev->second);
      if (m == s_.members.end() || !eligible(m->second, tp) || count[m->first] >= quota[m->first]) continue;
      next[tp] = m->first;
      ++count[m->first];
    }
    // The rest to the eligible member with the fewest, by id on a tie.
    for (const auto& tp : parts) {
      if (next.count(tp)) continue;
      // The eligible member furthest below its quota (then the fewest, then by id).
      const member* best = nullptr;
      auto room = [&](const member* m) {
        return static_cast<long>(quota[m->id]) - static_cast<long>(count[m->id]);
      };
      for (const auto* m : local)
        if (eligible(*m, tp) && (!best || room(m) > room(best) || (room(m) == room(best) && count[m->id] < count[best->id])))
          best = m;
      if (!best) {
        unassigned_.push_back({tp, owner,
                               "no member connected to " + owner.value() + " subscribes to " + tp.topic +
                                   " (fetches are served by the partition's owner only)"});
        continue;
      }
      next[tp] = best->id;
      ++count[best->id];
    }
  }
  if (next != s_.target) {
    s_.target = std::move(next);
    ++s_.epoch;
    ++rebalances_;
  }
}

std::vector<placement> group::needing_clearance() const {
  std::map<topic_partition, broker_id> owners;
  for (const auto& p : placement_) owners[p.partition] = p.owner;
  std::vector<placement> out;
  for (const auto& [tp, holder] : s_.target) {
    if (s_.cleared.count(tp) || held_by_other(tp, std::string())) continue;
    // A partition no broker reports (a move's handover) is cleared by its next owner once that one reports it: the
    // last one's commit gate no longer covers the commits written for it.
    if (vanished_.count(tp)) continue;
    auto o = owners.find(tp);
    if (o != owners.end()) out.push_back({tp, o->second});
  }
  return out;
}

void group::cleared_by_owner(const topic_partition& tp, std::optional<std::uint64_t> asked_at) {
  if (asked_at && *asked_at != handovers(tp)) return;
  if (!held_by_other(tp, std::string())) s_.cleared.insert(tp);
}

bool group::held_by_other(const topic_partition& tp, const std::string& member_id) const {
  for (const auto& [id, m] : s_.members)
    if (id != member_id && (m.owned.count(tp) || m.handed.count(tp))) return true;
  return false;
}

member_answer group::answer_for(member& m) {
  std::map<topic_partition, std::uint64_t> next;
  std::vector<topic_partition> added;
  for (const auto& [tp, holder] : s_.target) {
    if (holder != m.id) continue;
    if (auto had = m.handed.find(tp); had != m.handed.end()) {
      next.insert(*had);
    } else if (!held_by_other(tp, m.id) && s_.cleared.count(tp)) {
      added.push_back(tp);  // revoke before assign: only once nobody else holds it, and its owner cleared it
    }
  }
  if (!added.empty() || next.size() != m.handed.size()) {
    m.previous_epoch = m.epoch;
    ++m.epoch;
    for (const auto& tp : added) {
      next[tp] = m.epoch;
      s_.cleared.erase(tp);  // held again: the next handover needs a fresh clearance
      ++handovers_[tp];
    }
    m.handed = std::move(next);
  }
  member_answer a{m.id, m.epoch, {}, timing_.heartbeat_interval_ms};
  for (const auto& [tp, since] : m.handed) a.assignment.push_back(tp);
  return a;
}

status group::check_commit(const std::string& member_id, std::uint64_t member_epoch, const topic_partition& tp) const {
  auto it = s_.members.find(member_id);
  if (it == s_.members.end())
    return {errc::conflict, "member " + member_id + " is not in group " + s_.id + "; its commit is fenced"};
  const member& m = it->second;
  auto handed = m.handed.find(tp);
  if (handed == m.handed.end())
    return {errc::conflict, name_of(tp) + " is not held by member " + member_id + " of group " + s_.id};
  if (member_epoch < handed->second || member_epoch > m.epoch)
    return {errc::conflict, "member " + member_id + " holds " + name_of(tp) + " from epoch " +
                                std::to_string(handed->second) + " to " + std::to_string(m.epoch) +
                                "; a commit at epoch " + std::to_string(member_epoch) + " is stale"};
  return {};
}

std::optional<std::pair<std::string, std::uint64_t>> group::holder_of(const topic_partition& tp) const {
  for (const auto& [id, m] : s_.members)
    if (auto h = m.handed.find(tp); h != m.handed.end()) return std::pair{id, h->second};
  return std::nullopt;
}

}  // namespace moonmq::groups
