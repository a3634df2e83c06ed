// Consumer group coordination, in process (the coordinator's own cost, no network):
// - rebalance: 100 members over three brokers hold 1,000 partitions and heartbeat every interval; one member leaves.
//   Reported: heartbeat intervals until every partition is held again (target: under two intervals plus the time to
//   notice, which for a leave is none) and the coordinator's CPU time for it.
// - heartbeat: 10,000 members of one group heartbeating in steady state, on one thread; heartbeats per second
//   (target: 10,000 a second on one core).
// One JSON object per measurement.
#include <chrono>
#include <cstdio>
#include <map>
#include <set>

#include "moonmq/groups/group_service.hpp"

using namespace moonmq;
using namespace moonmq::groups;

namespace {

const std::vector<broker_id> brokers{broker_id("b1"), broker_id("b2"), broker_id("b3")};

placement_source spread(int partitions) {
  return [partitions](const std::set<std::string>&) -> std::optional<std::vector<placement>> {
    std::vector<placement> out;
    for (int p = 0; p < partitions; ++p) out.push_back({{"t", p}, brokers[static_cast<std::size_t>(p) % 3]});
    return out;
  };
}

struct member_view {
  std::string id;
  std::uint64_t epoch = 0;
  std::vector<topic_partition> held;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Every member heartbeats once, after the owners cleared what waited for them (the daemon's ticker asks them every
/// 250 ms, a quarter of an interval); returns how many partitions are held in all.
std::size_t round_of_heartbeats(group_service& g, std::vector<member_view>& members, time_ms now) {
  for (const auto& [group_id, p] : g.pending_clearances()) g.clearance_done(group_id, p.partition);
  std::size_t held = 0;
  for (auto& m : members) {
    auto a = g.heartbeat("g", m.id, m.epoch, m.held, now);
    if (!a) continue;
    m.epoch = a->member_epoch;
    m.held = a->assignment;
    held += m.held.size();
  }
  return held;
}

}  // namespace

int main() {
  const time_ms interval = 1000;
  {
    const int partitions = 1000;
    auto svc = group_service::open({brokers[0], {10 * interval, interval}},
                                   std::make_unique<storage::memory_state_file>("group-state.json"), spread(partitions),
                                   0);
    if (!svc) return 1;
    std::vector<member_view> members;
    for (int i = 0; i < 100; ++i) {
      auto a = (*svc)->join("g", "", brokers[static_cast<std::size_t>(i) % 3], {"t"}, 0);
      if (!a) return 1;
      members.push_back({a->member_id, a->member_epoch, a->assignment});
    }
    time_ms now = 0;
    for (int r = 0; r < 5; ++r) round_of_heartbeats(**svc, members, now += interval);
    const auto t0 = std::chrono::steady_clock::now();
    if (!(*svc)->leave("g", members.back().id)) return 1;
    members.pop_back();
    int rounds = 0;
    std::size_t held = 0;
    while (held < static_cast<std::size_t>(partitions) && rounds < 20) {
      held = round_of_heartbeats(**svc, members, now += interval);
      ++rounds;
    }
    std::printf("{\"bench\":\"groups\",\"op\":\"rebalance_after_leave\",\"members\":100,\"partitions\":%d,"
                "\"heartbeat_intervals\":%d,\"all_held\":%s,\"coordinator_cpu_s\":%.4f}\n",
                partitions, rounds, held == static_cast<std::size_t>(partitions) ? "true" : "false",
                seconds_since(t0));
  }
  {
    const int member_count = 10000, partitions = 1000;
    auto svc = group_service::open({brokers[0], {10 * interval, interval}},
                                   std::make_unique<storage::memory_state_file>("group-state.json"), spread(partitions),
                                   0);
    if (!svc) return 1;
    std::vector<member_view> members;
    for (int i = 0; i < member_count; ++i) {
      auto a = (*svc)->join("g", "", brokers[static_cast<std::size_t>(i) % 3], {"t"}, 0);
      if (!a) return 1;
      members.push_back({a->member_id, a->member_epoch, a->assignment});
    }
    time_ms now = 0;
    for (int r = 0; r < 3; ++r) round_of_heartbeats(**svc, members, now += interval);  // settle
    const int rounds = 5;
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < rounds; ++r) round_of_heartbeats(**svc, members, now += interval);
    const double s = seconds_since(t0);
    std::printf("{\"bench\":\"groups\",\"op\":\"heartbeat\",\"members\":%d,\"partitions\":%d,"
                "\"heartbeats_per_s\":%.0f}\n",
                member_count, partitions, member_count * rounds / s);
  }
  return 0;
}
