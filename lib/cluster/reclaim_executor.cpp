#include "moonmq/cluster/reclaim_executor.hpp"

#include <algorithm>
#include <set>

#include "cluster/wire_json.hpp"
#include "cluster/wire_owner.hpp"
#include "json/writer.hpp"
#include "moonmq/cluster/peer_fanout.hpp"
#include "moonmq/cluster/reassigner.hpp"

namespace moonmq::cluster {

using json::put;

reclaim_executor::reclaim_executor(reclaim_options options, cluster_state state, move_journal& journal,
                                   reassigner& moves, transport::peer_client& client)
    : opt_(std::move(options)),
      st_(state),
      journal_(journal),
      moves_(moves),
      client_(client),
      tracker_(opt_.after_seconds) {}

double reclaim_executor::round_seconds() const {
  return opt_.after_seconds > 0 ? std::clamp(opt_.after_seconds / 4, 0.5, 10.0) : 10.0;
}

std::vector<reclaim_candidate> reclaim_executor::observe() {
  const broker_id& self = opt_.self;
  std::set<topic_partition> journaled;  // told apart from other moves only for the reason an operator reads
  for (const auto& m : journal_.pending()) journaled.insert(m.partition);
  std::vector<local_copy> copies;
  for (const auto& tp : st_.store.list_partitions()) {
    auto size = st_.store.size_bytes(tp);
    if (!size || *size == 0) continue;
    const bool stray = st_.ownership.withheld(tp);
    const bool served = !stray && entry_as_seen_by(st_.ownership, tp, self).owner == self;
    copies.push_back({tp, *size, served, journaled.count(tp) > 0, moves_.busy(tp) /* the discard's own test */, stray});
  }
  const bool any_unserved = std::any_of(copies.begin(), copies.end(), [](const auto& c) { return !c.served_here; });
  if (any_unserved) {
    // Moves towards this broker, from their sources; a peer that does not answer might be sending one, so its
    // partitions count as moving.
    for (const auto& a : ask_each_now(client_, opt_.peers, transport::get_request("/cluster/moves"))) {
      auto moves = a.response.ok() ? wire::read_moves(a.response.body) : std::nullopt;
      for (auto& c : copies) {
        if (!moves) {
          c.moving = true;
          continue;
        }
        for (const auto& m : *moves)
          if (!m.finished && m.dest == self.value() && m.partition == c.partition) c.moving = true;
      }
    }
  }
  return tracker_.observe(copies, static_cast<double>(opt_.steady_ms()) / 1000.0);
}

status reclaim_executor::owner_confirms(const topic_partition& tp) {
  // Asked under the partition's gate: no copy can land here until the answer is acted on. A move towards this broker
  // whose confirm is pending leaves the partition in handover there.
  const std::string owner = entry_as_seen_by(st_.ownership, tp, opt_.self).owner.value();
  const std::string name = tp.topic + "-" + std::to_string(tp.partition);
  if (std::find(opt_.peers.begin(), opt_.peers.end(), owner) == opt_.peers.end())
    return {errc::conflict, name + ": its owner '" + owner + "' is not a configured peer"};
  transport::request ask = transport::get_request("/cluster/owner");
  ask.params = {{"topic", tp.topic}, {"partition", std::to_string(tp.partition)}};
  auto report = wire::read_owner_report(ask_now(client_, owner, ask), tp);
  if (!report) return {errc::unavailable, name + ": " + owner + " did not confirm it serves it (" + report.message() + ")"};
  const bool handover = report->entry && report->entry->handover;
  if (!report->serves || handover || report->moving)
    return {errc::conflict, name + ": " + owner + (report->serves ? " has a move of it under way" : " does not serve it now")};
  return {};
}

std::string reclaim_executor::reclaim(bool due_only) {
  std::lock_guard lock(mu_);
  auto candidates = observe();
  std::vector<std::pair<reclaim_candidate, std::string>> done;  // copy, error ("" = reclaimed)
  for (const auto& c : candidates) {
    if (!(due_only ? c.due : c.eligible_now)) continue;
    auto s = discard_unserved_copy(
        st_, opt_.self, c.partition, [this](const topic_partition& tp) { return moves_.busy(tp); },
        [&] { return owner_confirms(c.partition); });
    if (s) tracker_.forget(c.partition);
    done.emplace_back(c, s ? "" : s.message());
    const std::string name = c.partition.topic + "-" + std::to_string(c.partition.partition);
    if (s)
      st_.log.info("reclaim", "reclaimed " + std::to_string(c.size_bytes) + " bytes of " + name + ", not served here" +
                                  (due_only ? ", idle for " + std::to_string(static_cast<long>(c.idle_seconds)) + " s"
                                            : " (asked by an operator)"));
    else
      st_.log.warn("reclaim", "could not reclaim " + name + ": " + s.message());
  }
  return json::object([&](json::writer& w) {
    put(w, "broker", opt_.self.value());
    std::uint64_t bytes = 0;
    w.Key("reclaimed");
    w.StartArray();
    for (const auto& [c, err] : done) {
      if (!err.empty()) continue;
      bytes += c.size_bytes;
      w.StartObject();
      put(w, "topic", c.partition.topic);
      put(w, "partition", c.partition.partition);
      put(w, "size_bytes", c.size_bytes);
      w.EndObject();
    }
    w.EndArray();
    put(w, "bytes", bytes);
    w.Key("failed");
    w.StartArray();
    for (const auto& [c, err] : done) {
      if (err.empty()) continue;
      w.StartObject();
      put(w, "topic", c.partition.topic);
      put(w, "partition", c.partition.partition);
      put(w, "error", err);
      w.EndObject();
    }
    w.EndArray();
  });
}

std::string reclaim_executor::list_document() {
  std::vector<reclaim_candidate> candidates;
  {
    std::lock_guard lock(mu_);
    candidates = observe();
  }
  return json::object([&](json::writer& w) {
    put(w, "broker", opt_.self.value());
    put(w, "reclaim_after_seconds", opt_.after_seconds);
    std::uint64_t bytes = 0;
    w.Key("copies");
    w.StartArray();
    for (const auto& c : candidates) {
      bytes += c.size_bytes;
      w.StartObject();
      put(w, "topic", c.partition.topic);
      put(w, "partition", c.partition.partition);
      put(w, "size_bytes", c.size_bytes);
      put(w, "idle_seconds", c.idle_seconds);
      put(w, "eligible", c.eligible_now);
      if (!c.held_by.empty()) put(w, "held_by", c.held_by);
      if (c.eligible_now && opt_.after_seconds > 0)
        put(w, "reclaimed_in_seconds", std::max(0.0, opt_.after_seconds - c.idle_seconds));
      w.EndObject();
    }
    w.EndArray();
    put(w, "bytes", bytes);
  });
}

}  // namespace moonmq::cluster
