// Consumer group coordination, in process (the coordinator's own cost, no network):
// - rebalance: 100 members over three brokers hold 1,000 partitions and heartbeat every interval; one member leaves.
//   Reported: heartbeat intervals until every partition is held again (target: under two intervals plus the time to
//   notice, which for a leave is none) and the coordinator's CPU time for it.
// - heartbeat: 10,000 members of one group heartbeating in steady state, on one thread; heartbeats per second
//   (target: 10,000 a second on one core).
// - joins: with 10,000 live groups in the coordinator's durable state (a file keyed log in a temporary directory,
//   each change appended and fdatasync'ed), one client's joins of new groups, one after another; joins per second
//   and p50/p99 (target: 1,000 a second). Beside it, in the same run, the cost the older single-document state paid
//   for each change: the whole state (the same 10,000 groups' bytes) written and synced, then renamed over the file.
// One JSON object per measurement.
#include <chrono>
#include <cstdio>
#include <map>
#include <set>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "moonmq/groups/group_service.hpp"
#include "moonmq/storage/file_keyed_log.hpp"
#include "moonmq/storage/file_state_file.hpp"

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
    storage::memory_keyed_log disk("group-state.log");
    auto svc = group_service::open({brokers[0], {10 * interval, interval}}, disk, spread(partitions), 0);
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
    storage::memory_keyed_log disk("group-state.log");
    auto svc = group_service::open({brokers[0], {10 * interval, interval}}, disk, spread(partitions), 0);
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
  {
    char dir_template[] = "/tmp/moonmq-bench-groups-XXXXXX";
    if (!::mkdtemp(dir_template)) return 1;
    const std::string dir = dir_template;
    {
      auto log = storage::open_file_keyed_log(dir + "/group-state.log", default_logger());
      if (!log) return 1;
      auto svc = group_service::open({brokers[0], {60'000, interval}}, **log, spread(6), 0);
      if (!svc) return 1;
      const int live = 10000, measured = 2000;
      for (int i = 0; i < live; ++i)
        if (!(*svc)->join("live-" + std::to_string(i), "", brokers[0], {"t"}, 0)) return 1;
      std::vector<double> us;
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < measured; ++i) {
        const auto a = std::chrono::steady_clock::now();
        if (!(*svc)->join("new-" + std::to_string(i), "", brokers[0], {"t"}, 1)) return 1;
        us.push_back(seconds_since(a) * 1e6);
      }
      const double s = seconds_since(t0);
      std::sort(us.begin(), us.end());
      std::printf("{\"bench\":\"groups\",\"op\":\"joins\",\"live_groups\":%d,\"joins_per_s\":%.0f,"
                  "\"p50_us\":%.0f,\"p99_us\":%.0f}\n",
                  live, measured / s, us[us.size() / 2], us[us.size() * 99 / 100]);
      // A tick of the coordinator (expiry, placements, and a look at what changed) over all of them.
      const auto t2 = std::chrono::steady_clock::now();
      (*svc)->tick(2);
      std::printf("{\"bench\":\"groups\",\"op\":\"tick\",\"live_groups\":%d,\"ms\":%.1f}\n", live + measured,
                  seconds_since(t2) * 1e3);
      // The older state's cost per change: every group's bytes rewritten and synced (a document of the same size).
      std::string document;
      for (const auto& [id, value] : (*log)->entries()) document += value + ",";
      auto file = storage::make_file_state_file(dir + "/group-state.json");
      const int rewrites = 100;
      const auto t1 = std::chrono::steady_clock::now();
      for (int i = 0; i < rewrites; ++i)
        if (!file->replace(document)) return 1;
      const double r = seconds_since(t1);
      std::printf("{\"bench\":\"groups\",\"op\":\"joins_whole_document_baseline\",\"live_groups\":%d,"
                  "\"document_bytes\":%zu,\"changes_per_s\":%.0f}\n",
                  live + measured, document.size(), rewrites / r);
    }
    std::filesystem::remove_all(dir);
  }
  return 0;
}
