// The group's side of Kafka's classic protocol (JoinGroup, SyncGroup, Heartbeat), and the target assignment of a
// group whose members fetch from any broker. The rules are group.hpp's; what a Kafka client sees is docs/kafka.md's.
#include <algorithm>

#include "moonmq/groups/group.hpp"

namespace moonmq::groups {

std::map<topic_partition, std::string> group::target_anywhere() {
  const auto topics = subscribed_topics();
  std::vector<const placement*> parts;
  for (const auto& p : placement_)
    if (topics.count(p.partition.topic)) parts.push_back(&p);
  auto eligible = [](const member& m, const placement& p) {
    return m.topics.count(p.partition.topic) > 0 && (m.anywhere || m.broker == p.owner);
  };
  // Quotas over the whole group: floor(P/n) each, and P mod n of the members one more, those holding the most now
  // first (so that as little as possible moves). A member that can take fewer (an HTTP member, served by its own
  // broker only, or one subscribed to fewer topics) leaves the rest to those with room.
  std::map<std::string, std::size_t> quota, count, holding;
  for (const auto& [tp, holder] : s_.target) ++holding[holder];
  std::vector<const member*> all;
  for (const auto& [id, m] : s_.members) all.push_back(&m);
  std::stable_sort(all.begin(), all.end(),
                   [&](const member* a, const member* b) { return holding[a->id] > holding[b->id]; });
  for (std::size_t i = 0; i < all.size(); ++i)
    quota[all[i]->id] = parts.size() / all.size() + (i < parts.size() % all.size() ? 1 : 0);
  std::map<topic_partition, std::string> next;
  // Sticky: a partition stays with its member while that member may still take it and has no more than its share.
  // Where the partition's owner is does not matter to a member that fetches anywhere: a move changes nothing.
  for (const auto* p : parts) {
    auto prev = s_.target.find(p->partition);
    if (prev == s_.target.end()) continue;
    auto m = s_.members.find(prev->second);
    if (m == s_.members.end() || !eligible(m->second, *p) || count[m->first] >= quota[m->first]) continue;
    next[p->partition] = m->first;
    ++count[m->first];
  }
  // The rest to the eligible member furthest below its quota (then the fewest, then by id).
  for (const auto* p : parts) {
    if (next.count(p->partition)) continue;
    const member* best = nullptr;
    auto room = [&](const member* m) { return static_cast<long>(quota[m->id]) - static_cast<long>(count[m->id]); };
    for (const auto& [id, m] : s_.members)
      if (eligible(m, *p) &&
          (!best || room(&m) > room(best) || (room(&m) == room(best) && count[m.id] < count[best->id])))
        best = &m;
    if (!best) {
      unassigned_.push_back({p->partition, p->owner,
                             "no member that subscribes to " + p->partition.topic + " can fetch from " +
                                 p->owner.value() + " (members over HTTP fetch from their own broker only)"});
      continue;
    }
    next[p->partition] = best->id;
    ++count[best->id];
  }
  return next;
}

classic_answer group::join_classic(const classic_join& call, time_ms now) {
  auto [it, added] = s_.members.try_emplace(call.member_id);
  member& m = it->second;
  const bool changed = added || m.topics != call.topics || !m.anywhere;
  m.id = call.member_id;
  m.broker = call.broker;
  m.topics = call.topics;
  m.anywhere = m.classic = true;
  m.cooperative = call.cooperative;
  m.session_timeout_ms = call.session_timeout_ms;
  m.last_seen = now;
  m.reclaim.clear();
  if (call.cooperative) {
    // It keeps what it was handed and still holds; what it gave up is free for others (after a clearance).
    const std::set<topic_partition> reported(call.owned.begin(), call.owned.end());
    std::erase_if(m.handed, [&](const auto& h) { return !reported.count(h.first); });
  } else {
    // An eager member gave up everything before joining. What it held it may take back at once; anyone else waits
    // for the owner's clearance, as always.
    for (const auto& [tp, since] : m.handed) m.reclaim[tp] = handovers(tp);
    m.handed.clear();
  }
  m.owned.clear();  // a classic member holds what it is handed, nothing else
  m.previous_epoch = m.epoch;
  ++m.epoch;  // the new generation: commits of older ones are fenced where they no longer hold
  if (changed) rebalance();
  return {m.id, m.epoch, {}, false};
}

result<member*> group::classic_member(const std::string& member_id, std::uint64_t generation) {
  auto it = s_.members.find(member_id);
  if (it == s_.members.end())
    return error{errc::not_found, "member " + member_id + " is not in group " + s_.id + " (join again)"};
  if (generation != it->second.epoch)
    return error{errc::conflict, "member " + member_id + " of group " + s_.id + " is at generation " +
                                     std::to_string(it->second.epoch) + ", not " + std::to_string(generation)};
  return &it->second;
}

result<classic_answer> group::sync_classic(const std::string& member_id, std::uint64_t generation, time_ms now) {
  auto found = classic_member(member_id, generation);
  if (!found) return found.err();
  member& m = **found;
  m.last_seen = now;
  auto targeted = [&](const topic_partition& tp) {
    auto t = s_.target.find(tp);
    return t != s_.target.end() && t->second == m.id;
  };
  // An eager member's handed partitions are this generation's only: one whose target changed since is dropped
  // before the member hears of it. A cooperative member keeps holding what it lost until it joins again.
  if (!m.cooperative) std::erase_if(m.handed, [&](const auto& h) { return !targeted(h.first); });
  for (const auto& [tp, holder] : s_.target) {
    if (holder != m.id || m.handed.count(tp) || held_by_other(tp, m.id)) continue;
    auto own = m.reclaim.find(tp);
    const bool its_own = own != m.reclaim.end() && own->second == handovers(tp);  // nobody had it in between
    if (!s_.cleared.count(tp) && !its_own) continue;  // revoke before assign, cleared before handed
    m.handed[tp] = m.epoch;
    s_.cleared.erase(tp);
    ++handovers_[tp];
  }
  m.reclaim.clear();
  classic_answer a{m.id, m.epoch, {}, false};
  for (const auto& [tp, since] : m.handed)
    if (targeted(tp)) a.assignment.push_back(tp);
  return a;
}

result<classic_answer> group::heartbeat_classic(const std::string& member_id, std::uint64_t generation, time_ms now) {
  auto found = classic_member(member_id, generation);
  if (!found) return found.err();
  member& m = **found;
  m.last_seen = now;
  classic_answer a{m.id, m.epoch, {}, false};
  for (const auto& [tp, since] : m.handed) {
    auto t = s_.target.find(tp);
    if (t == s_.target.end() || t->second != m.id) a.rejoin = true;  // to revoke
  }
  for (const auto& [tp, holder] : s_.target)
    if (holder == m.id && !m.handed.count(tp) && !held_by_other(tp, m.id) && s_.cleared.count(tp))
      a.rejoin = true;  // ready to be handed
  return a;
}

}  // namespace moonmq::groups
