// A deterministic simulation of a Raft cluster: pure `raft::node`s, their `memory_storage`, and a network that loses,
// duplicates, delays and reorders messages and can be partitioned. Nodes crash (losing unsynced writes) and restart
// from what they synced. Every run is reproducible from its seed. The Raft paper's safety properties are checked
// after every tick by `check()`, which names the property and the nodes when one breaks.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "moonmq/raft/storage.hpp"

namespace moonmq::test {

struct sim_options {
  int nodes = 3;
  double drop = 0.05;
  double duplicate = 0.02;
  int max_delay_ticks = 3;
  double crash_per_tick = 0.002;  ///< chance that one node crashes at a tick (it restarts a while later)
  double crash_before_sync = 0.3;  ///< of crashes: between writing a batch and syncing it
  double partition_per_tick = 0.01;
  double propose_per_tick = 0.3;
  std::size_t max_log_entries = 12;  ///< compaction threshold
  int election_ticks_min = 10;
  int election_ticks_max = 20;
};

class raft_sim {
 public:
  raft_sim(std::uint64_t seed, sim_options o) : opt_(o), seed_(seed), rng_(seed) {
    for (int i = 1; i <= opt_.nodes; ++i) ids_.push_back("n" + std::to_string(i));
    for (const auto& id : ids_) {
      hosts_[id].disk = std::make_unique<raft::memory_storage>();
      start(id);
    }
  }

  /// One tick of chaos: faults, timers, deliveries, proposals, then the invariants. Returns the first violation.
  std::optional<std::string> chaos_tick() {
    if (chance(opt_.partition_per_tick)) {
      if (cut_.empty()) {
        std::string a = pick(ids_), b = pick(ids_);
        if (a != b) isolate_pair(a, b);
        if (chance(0.5)) isolate(pick(ids_));
      } else {
        cut_.clear();
      }
    }
    if (chance(opt_.crash_per_tick)) {
      std::string victim = pick(ids_);
      if (hosts_[victim].up) crash(victim);
    }
    for (auto& id : ids_)
      if (!hosts_[id].up && tick_ >= hosts_[id].restart_at) start(id);
    return tick(opt_.drop, opt_.duplicate, true);
  }

  /// One tick with a healed, lossless network and every node up.
  std::optional<std::string> calm_tick() {
    cut_.clear();
    for (auto& id : ids_)
      if (!hosts_[id].up) start(id);
    return tick(0, 0, false);
  }

  /// The leader every up node follows, if a majority is up and there is one.
  std::optional<std::string> agreed_leader() const {
    std::optional<std::string> leader;
    std::size_t up = 0;
    for (const auto& [id, h] : hosts_) {
      if (!h.up) continue;
      ++up;
      if (h.node->is_leader()) leader = id;
    }
    if (!leader || up < hosts_.size() / 2 + 1) return std::nullopt;
    for (const auto& [id, h] : hosts_)
      if (h.up && (h.node->leader() != *leader || h.node->term() != hosts_.at(*leader).node->term()))
        return std::nullopt;
    return leader;
  }

  /// One tick on a lossless network without starting nodes that are down (for failover measurements).
  std::optional<std::string> quiet_tick() {
    cut_.clear();
    return tick(0, 0, false);
  }

  /// Crashes a node now; it stays down until a calm_tick() or chaos_tick() restarts it.
  void crash_now(const std::string& id) {
    crash(id);
    hosts_[id].restart_at = UINT64_MAX;
  }

  std::uint64_t now() const { return tick_; }
  std::size_t committed_entries() const { return committed_.size(); }
  bool up(const std::string& id) const { return hosts_.at(id).up; }
  /// REQUIRES: up(id).
  const raft::node& node(const std::string& id) const { return *hosts_.at(id).node; }

 private:
  struct host {
    std::unique_ptr<raft::node> node;
    std::unique_ptr<raft::memory_storage> disk;
    bool up = false;
    std::uint64_t restart_at = 0;
    std::uint64_t state = 0;  // rolling hash of the applied entries: the state machine
    raft::index_t applied = 0;
    // Leader Append-Only: the leader's log as last seen in its current term.
    raft::term_t watched_term = 0;
    std::map<raft::index_t, raft::term_t> watched;
  };
  struct flight {
    std::uint64_t at;
    std::uint64_t order;
    raft::message m;
  };

  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  const std::string& pick(const std::vector<std::string>& v) {
    return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng_)];
  }

  void isolate_pair(const std::string& a, const std::string& b) {
    cut_.insert({a, b});
    cut_.insert({b, a});
  }
  void isolate(const std::string& a) {
    for (const auto& b : ids_)
      if (b != a) isolate_pair(a, b);
  }

  void start(const std::string& id) {
    host& h = hosts_[id];
    raft::node_config c;
    c.id = id;
    for (const auto& o : ids_)
      if (o != id) c.peers.push_back(o);
    c.election_ticks_min = opt_.election_ticks_min;
    c.election_ticks_max = opt_.election_ticks_max;
    c.seed = seed_ * 7919 + tick_;
    h.node = std::make_unique<raft::node>(c, *h.disk->load());
    h.up = true;
    h.state = 0;
    h.applied = 0;
    h.watched.clear();
    h.watched_term = 0;
  }

  void crash(const std::string& id) {
    host& h = hosts_[id];
    h.disk->crash();
    h.node.reset();
    h.up = false;
    h.restart_at = tick_ + 5 + std::uniform_int_distribution<std::uint64_t>(0, 40)(rng_);
  }

  static std::uint64_t mix(std::uint64_t state, const raft::entry& e) {
    std::uint64_t h = state ^ (e.index * 0x9E3779B97F4A7C15ull) ^ (e.term << 17);
    for (char c : e.data) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
    return h;
  }

  std::optional<std::string> tick(double drop, double duplicate, bool may_crash) {
    ++tick_;
    for (auto& id : ids_)
      if (hosts_[id].up) hosts_[id].node->tick();
    // Deliver what is due, in the (random) order the delays gave it.
    std::vector<flight> due;
    for (auto it = net_.begin(); it != net_.end();) {
      if (it->at <= tick_) {
        due.push_back(std::move(*it));
        it = net_.erase(it);
      } else {
        ++it;
      }
    }
    std::sort(due.begin(), due.end(), [](const flight& a, const flight& b) { return a.order < b.order; });
    for (auto& f : due) {
      host& h = hosts_[f.m.to];
      if (h.up) h.node->step(f.m);
    }
    for (auto& id : ids_) {
      host& h = hosts_[id];
      if (h.up && h.node->is_leader() && chance(opt_.propose_per_tick))
        (void)h.node->propose(raft::entry_kind::owner, "v" + std::to_string(tick_));
    }
    for (auto& id : ids_) {
      if (auto v = pump(id, drop, duplicate, may_crash)) return v;
    }
    return check();
  }

  /// Carries out a host's ready batches: write, (maybe crash), sync, send, apply.
  std::optional<std::string> pump(const std::string& id, double drop, double duplicate, bool may_crash) {
    host& h = hosts_[id];
    while (h.up && h.node->has_ready()) {
      raft::ready r = h.node->take_ready();
      h.disk->write(r);
      if (may_crash && chance(opt_.crash_per_tick * opt_.crash_before_sync)) {
        crash(id);  // the batch was never synced: none of its messages went out
        return std::nullopt;
      }
      h.disk->sync();
      for (auto& m : r.messages) {
        if (cut_.count({m.from, m.to}) || chance(drop)) continue;
        int copies = chance(duplicate) ? 2 : 1;
        for (int c = 0; c < copies; ++c) {
          auto delay = std::uniform_int_distribution<int>(0, opt_.max_delay_ticks)(rng_);
          net_.push_back({tick_ + 1 + static_cast<std::uint64_t>(delay), order_++, m});
        }
      }
      if (r.apply_snapshot) {
        // The snapshot's data is the state machine at its index.
        h.state = std::stoull(r.apply_snapshot->data);
        h.applied = r.apply_snapshot->index;
        if (auto v = record_state(id, h.applied, h.state)) return v;
      }
      for (const auto& e : r.committed) {
        if (e.index != h.applied + 1)
          return fail("apply order", id + " applied index " + std::to_string(e.index) + " after " +
                                         std::to_string(h.applied));
        h.state = mix(h.state, e);
        h.applied = e.index;
        if (auto v = record_state(id, h.applied, h.state)) return v;
      }
      if (h.node->log().size() > opt_.max_log_entries && h.applied > h.node->log().snapshot_index())
        h.node->compact(h.applied, std::to_string(h.state));
    }
    return std::nullopt;
  }

  std::optional<std::string> record_state(const std::string& id, raft::index_t i, std::uint64_t state) {
    auto [it, fresh] = states_.try_emplace(i, state);
    if (!fresh && it->second != state)
      return fail("State Machine Safety", id + " applied a different state at index " + std::to_string(i));
    return std::nullopt;
  }

  std::optional<std::string> fail(const std::string& property, const std::string& what) const {
    std::ostringstream s;
    s << property << " violated at tick " << tick_ << " (seed " << seed_ << "): " << what;
    return s.str();
  }

  /// The Raft paper's safety properties (Figure 3), over every node that is up.
  std::optional<std::string> check() {
    // Election Safety: at most one leader per term.
    for (auto& [id, h] : hosts_) {
      if (!h.up || !h.node->is_leader()) continue;
      auto [it, fresh] = leaders_.try_emplace(h.node->term(), id);
      if (!fresh && it->second != id)
        return fail("Election Safety", it->second + " and " + id + " both led term " + std::to_string(h.node->term()));
    }
    // Leader Append-Only: a leader never overwrites or deletes entries in its log (compaction aside).
    for (auto& [id, h] : hosts_) {
      if (!h.up || !h.node->is_leader()) continue;
      const auto& log = h.node->log();
      if (h.watched_term == h.node->term())
        for (const auto& [i, t] : h.watched)
          if (i > log.snapshot_index() && log.term_at(i) != t)
            return fail("Leader Append-Only", id + " changed its entry at index " + std::to_string(i));
      h.watched_term = h.node->term();
      h.watched.clear();
      for (auto i = log.first_index(); i <= log.last_index(); ++i) h.watched[i] = log.at(i).term;
    }
    // Log Matching: two logs with an entry of the same index and term agree on every entry up to it.
    for (auto& [a, ha] : hosts_)
      for (auto& [b, hb] : hosts_) {
        if (a >= b || !ha.up || !hb.up) continue;
        const auto& la = ha.node->log();
        const auto& lb = hb.node->log();
        const auto lo = std::max(la.first_index(), lb.first_index());
        const auto hi = std::min(la.last_index(), lb.last_index());
        bool matched = false;
        for (auto i = hi; i >= lo && i > 0; --i) {
          const bool same = la.at(i).term == lb.at(i).term;
          if (matched && !(same && la.at(i) == lb.at(i)))
            return fail("Log Matching", a + " and " + b + " differ at index " + std::to_string(i) +
                                            " below a matching entry");
          if (same && la.at(i) == lb.at(i)) matched = true;
          else if (same)
            return fail("Log Matching", a + " and " + b + " hold different entries of one term at index " +
                                            std::to_string(i));
        }
      }
    // Commitment as observed: every committed index has one term.
    for (auto& [id, h] : hosts_) {
      if (!h.up) continue;
      const auto& log = h.node->log();
      for (auto i = log.first_index(); i <= h.node->commit_index(); ++i) {
        auto [it, fresh] = committed_.try_emplace(i, std::make_pair(log.at(i).term, h.node->term()));
        if (!fresh && it->second.first != log.at(i).term)
          return fail("Commitment", id + " committed a different entry at index " + std::to_string(i));
      }
    }
    // Leader Completeness: a leader of a later term holds every committed entry.
    for (auto& [id, h] : hosts_) {
      if (!h.up || !h.node->is_leader()) continue;
      const auto& log = h.node->log();
      for (const auto& [i, when] : committed_) {
        if (h.node->term() <= when.second || i <= log.snapshot_index()) continue;
        if (log.term_at(i) != when.first)
          return fail("Leader Completeness", id + " (term " + std::to_string(h.node->term()) +
                                                 ") lacks committed index " + std::to_string(i));
      }
    }
    return std::nullopt;
  }

  sim_options opt_;
  std::uint64_t seed_;
  std::mt19937_64 rng_;
  std::uint64_t tick_ = 0;
  std::uint64_t order_ = 0;
  std::vector<std::string> ids_;
  std::map<std::string, host> hosts_;
  std::vector<flight> net_;
  std::set<std::pair<std::string, std::string>> cut_;
  std::map<raft::term_t, std::string> leaders_;
  std::map<raft::index_t, std::pair<raft::term_t, raft::term_t>> committed_;  // index -> (entry term, observer term)
  std::map<raft::index_t, std::uint64_t> states_;
};

}  // namespace moonmq::test
