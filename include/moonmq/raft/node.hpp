// The Raft consensus core as a pure state machine, in the manner of etcd's raft: messages and ticks go in, a `ready`
// batch comes out. The node owns no thread, clock, socket or file.
//
// The host's loop:  step(m) for every message that arrives, tick() on every timer tick, propose() on the leader;
// then, while has_ready(): take_ready(), make its hard state, snapshot and entries durable (fsync), and only then
// send its messages and apply its committed entries (and snapshot) to the state machine. A vote or an append is
// therefore never acknowledged before it is on disk.
//
// What it implements (Raft paper sections in brackets): leader election with randomized timeouts drawn from an
// injected seed [5.2]; PreVote (a node only campaigns after a majority says it could win, so a node rejoining from a
// partition does not depose a healthy leader) and, with CheckQuorum, votes are not granted while a leader is known to
// be alive; CheckQuorum (a leader that heard from no majority within an election timeout steps down) [thesis 6.2, 9.6];
// log replication with conflict truncation [5.3]; commitment only of current-term entries by counting, with the
// `controller` entry written on winning an election as the no-op that lets earlier entries commit [5.4.2]; log
// compaction on the host's request and InstallSnapshot for a follower behind the snapshot [7]. Membership is static.
// Thread safety: none; one host drives a node.
#pragma once

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "moonmq/core/result.hpp"
#include "moonmq/raft/log.hpp"

namespace moonmq::raft {

enum class role { follower, pre_candidate, candidate, leader };

constexpr const char* role_name(role r) noexcept {
  switch (r) {
    case role::follower:
      return "follower";
    case role::pre_candidate:
      return "pre_candidate";
    case role::candidate:
      return "candidate";
    case role::leader:
      return "leader";
  }
  return "?";
}

struct node_config {
  std::string id;
  std::vector<std::string> peers;  ///< every other member
  int heartbeat_ticks = 1;
  int election_ticks_min = 10;  ///< also the CheckQuorum period and the leader lease
  int election_ticks_max = 20;  ///< timeouts are drawn from [min, max)
  std::uint64_t seed = 1;
  std::size_t max_entries_per_append = 64;
};

/// What the node restarts from: the durable state the host kept.
struct durable_state {
  hard_state hard;
  std::optional<raft::snapshot> snap;
  std::vector<entry> entries;  ///< after the snapshot, in order
};

/// One batch of work for the host, in the order it must be done.
struct ready {
  std::optional<hard_state> hard;        ///< persist when set
  std::optional<raft::snapshot> snap;    ///< persist (replacing the log prefix it covers) when set
  std::optional<index_t> truncate_from;  ///< drop persisted entries from this index on, then append `entries`
  std::vector<entry> entries;            ///< append
  std::vector<message> messages;         ///< send once the above is durable
  std::optional<raft::snapshot> apply_snapshot;  ///< install in the state machine before `committed`
  std::vector<entry> committed;                  ///< apply, in order
  bool empty() const {
    return !hard && !snap && !truncate_from && entries.empty() && messages.empty() && !apply_snapshot &&
           committed.empty();
  }
};

class node {
 public:
  node(node_config config, durable_state restored = {})
      : cfg_(std::move(config)), rng_(cfg_.seed ^ std::hash<std::string>{}(cfg_.id)) {
    hard_ = restored.hard;
    persisted_hard_ = hard_;
    if (restored.snap) {
      log_ = raft_log(restored.snap->index, restored.snap->term, std::move(restored.entries));
      snap_ = *restored.snap;
      pending_apply_snapshot_ = *restored.snap;
      applied_ = restored.snap->index;
    } else {
      log_ = raft_log(0, 0, std::move(restored.entries));
    }
    hard_.commit = std::min(hard_.commit, log_.last_index());
    hard_.commit = std::max(hard_.commit, log_.snapshot_index());
    persisted_last_ = log_.last_index();
    become_follower(hard_.term, "");
  }

  // ---- inputs ----------------------------------------------------------------------------------------------------

  void tick() {
    ++election_elapsed_;
    if (role_ == role::leader) {
      if (++heartbeat_elapsed_ >= cfg_.heartbeat_ticks) {
        heartbeat_elapsed_ = 0;
        broadcast_append();
      }
      if (election_elapsed_ >= cfg_.election_ticks_min) {
        election_elapsed_ = 0;
        check_quorum();
      }
      return;
    }
    if (election_elapsed_ >= randomized_timeout_) campaign_pre_vote();
  }

  void step(const message& m) {
    if (m.to != cfg_.id || !is_member(m.from)) return;
    if (m.type == message_type::pre_vote) return handle_pre_vote(m);
    if (m.type == message_type::pre_vote_reply) {
      // A grant carries the term we would campaign in; a refusal carries the voter's term, news when it is later.
      if (!m.accepted && m.term > hard_.term) return become_follower(m.term, "");
      if (role_ != role::pre_candidate) return;
      if ((m.accepted && m.term == hard_.term + 1) || (!m.accepted && m.term <= hard_.term)) count_vote(m, true);
      return;
    }
    if (m.term > hard_.term) {
      // A vote request while a leader is known to be alive is ignored (CheckQuorum's lease): a disruptive node
      // cannot depose a healthy leader by campaigning in a higher term.
      if (m.type == message_type::vote && in_lease()) return;
      const bool from_leader = m.type == message_type::append || m.type == message_type::snapshot;
      become_follower(m.term, from_leader ? m.from : "");
    }
    if (m.term < hard_.term) {
      // A stale leader learns the current term from our answer and steps down.
      if (m.type == message_type::append || m.type == message_type::snapshot)
        send(reply_to(m, message_type::append_reply, false));
      else if (m.type == message_type::vote)
        send(reply_to(m, message_type::vote_reply, false));
      return;
    }
    switch (m.type) {
      case message_type::vote:
        return handle_vote(m);
      case message_type::vote_reply:
        if (role_ == role::candidate) count_vote(m, false);
        return;
      case message_type::append:
        return handle_append(m);
      case message_type::snapshot:
        return handle_snapshot(m);
      case message_type::append_reply:
        if (role_ == role::leader) handle_append_reply(m);
        return;
      default:
        return;
    }
  }

  /// Appends an entry on the leader; returns its index. Elsewhere: `not_owner` naming the leader, if known.
  result<index_t> propose(entry_kind kind, std::string data) {
    if (role_ != role::leader)
      return error{errc::not_owner, "not the Raft leader" + (leader_.empty() ? std::string() : "; leader is " + leader_)};
    index_t i = append_local(kind, std::move(data));
    broadcast_append();
    return i;
  }

  /// Replaces the log up to `index` (already applied by the host) with a snapshot of the state machine.
  /// REQUIRES: index <= applied index.
  void compact(index_t index, std::string data) {
    if (index <= log_.snapshot_index() || index > applied_) return;
    term_t t = *log_.term_at(index);
    log_.compact(index);
    snap_ = raft::snapshot{index, t, std::move(data)};
    out_.snap = snap_;
  }

  // ---- outputs ---------------------------------------------------------------------------------------------------

  bool has_ready() const {
    return !out_.messages.empty() || out_.snap || out_.apply_snapshot || pending_apply_snapshot_ || vote_changed() ||
           log_.last_index() != persisted_last_ || truncated_from_ || hard_.commit > applied_;
  }

  /// The batch to persist, send and apply. Taking it is acknowledging it: the host must carry it out.
  ready take_ready() {
    ready r = std::move(out_);
    out_ = {};
    // Term and vote must be durable before anything that depends on them goes out. The commit index rides along
    // when they are written, but never forces a write of its own: it is volatile in Raft (a restarted node learns it
    // again from the leader), and writing it on every commit would put two more fsyncs in every commit's path.
    if (vote_changed()) {
      r.hard = hard_;
      persisted_hard_ = hard_;
    }
    if (truncated_from_) {
      r.truncate_from = *truncated_from_;
      persisted_last_ = std::min(persisted_last_, *truncated_from_ - 1);
      truncated_from_.reset();
    }
    if (log_.last_index() > persisted_last_) {
      index_t from = std::max(persisted_last_ + 1, log_.first_index());
      r.entries = log_.slice(from, log_.last_index());
    }
    persisted_last_ = log_.last_index();
    if (pending_apply_snapshot_) {
      r.apply_snapshot = std::move(pending_apply_snapshot_);
      pending_apply_snapshot_.reset();
    }
    if (hard_.commit > applied_) {
      r.committed = log_.slice(std::max(applied_ + 1, log_.first_index()), hard_.commit);
      applied_ = hard_.commit;
    }
    note_caught_up();
    return r;
  }

  // ---- observers -------------------------------------------------------------------------------------------------

  const std::string& id() const noexcept { return cfg_.id; }
  role current_role() const noexcept { return role_; }
  bool is_leader() const noexcept { return role_ == role::leader; }
  term_t term() const noexcept { return hard_.term; }
  const std::string& leader() const noexcept { return leader_; }
  index_t commit_index() const noexcept { return hard_.commit; }
  index_t applied_index() const noexcept { return applied_; }
  /// Whether everything the cluster had committed when this node started has been handed out for applying: a
  /// leader of the current term was heard from (or this node is it), its own-term entry is applied, and so is every
  /// index up to the commit index it announced first. An own-term entry commits only after every entry committed in
  /// earlier terms, and the first announced commit index covers what was committed earlier in this term. Once true,
  /// stays true (a broker's state only moves forward from there, by the entries it applies).
  bool caught_up() const noexcept { return caught_up_; }
  const raft_log& log() const noexcept { return log_; }
  const std::string& voted_for() const noexcept { return hard_.voted_for; }
  std::size_t quorum() const noexcept { return (cfg_.peers.size() + 1) / 2 + 1; }

 private:
  struct progress {
    index_t next = 1;
    index_t match = 0;
    bool active = false;  ///< heard from since the last quorum check
  };

  bool is_member(const std::string& id) const {
    return std::find(cfg_.peers.begin(), cfg_.peers.end(), id) != cfg_.peers.end();
  }

  bool vote_changed() const {
    return hard_.term != persisted_hard_.term || hard_.voted_for != persisted_hard_.voted_for;
  }

  /// A leader was heard from within the minimum election timeout.
  bool in_lease() const { return !leader_.empty() && election_elapsed_ < cfg_.election_ticks_min; }

  void reset_timers() {
    election_elapsed_ = 0;
    heartbeat_elapsed_ = 0;
    std::uniform_int_distribution<int> d(cfg_.election_ticks_min, std::max(cfg_.election_ticks_min, cfg_.election_ticks_max - 1));
    randomized_timeout_ = d(rng_);
  }

  void become_follower(term_t term, std::string leader) {
    if (term > hard_.term) {
      hard_.term = term;
      hard_.voted_for.clear();
    }
    role_ = role::follower;
    leader_ = std::move(leader);
    votes_.clear();
    reset_timers();
  }

  void campaign_pre_vote() {
    role_ = role::pre_candidate;
    leader_.clear();
    votes_.clear();
    votes_[cfg_.id] = true;
    reset_timers();
    if (votes_granted() >= quorum()) return campaign_vote();
    for (const auto& p : cfg_.peers) {
      message m = to(p, message_type::pre_vote);
      m.term = hard_.term + 1;
      m.last_index = log_.last_index();
      m.last_term = log_.last_term();
      send(std::move(m));
    }
  }

  void campaign_vote() {
    role_ = role::candidate;
    ++hard_.term;
    hard_.voted_for = cfg_.id;
    leader_.clear();
    votes_.clear();
    votes_[cfg_.id] = true;
    reset_timers();
    if (votes_granted() >= quorum()) return become_leader();
    for (const auto& p : cfg_.peers) {
      message m = to(p, message_type::vote);
      m.last_index = log_.last_index();
      m.last_term = log_.last_term();
      send(std::move(m));
    }
  }

  void become_leader() {
    role_ = role::leader;
    leader_ = cfg_.id;
    reset_timers();
    progress_.clear();
    for (const auto& p : cfg_.peers) progress_[p] = progress{log_.last_index() + 1, 0, true};
    ++elections_won_;
    floor_term_ = hard_.term;
    floor_ = 0;
    // The controller entry: the claim of this term and the no-op that lets earlier entries commit.
    append_local(entry_kind::controller, cfg_.id);
    broadcast_append();
  }

  std::size_t votes_granted() const {
    return static_cast<std::size_t>(std::count_if(votes_.begin(), votes_.end(), [](const auto& v) { return v.second; }));
  }

  void count_vote(const message& m, bool pre) {
    votes_[m.from] = m.accepted;
    if (votes_granted() >= quorum()) {
      if (pre)
        campaign_vote();
      else
        become_leader();
      return;
    }
    const std::size_t refused = votes_.size() - votes_granted();
    if (refused >= quorum()) become_follower(hard_.term, "");
  }

  void handle_pre_vote(const message& m) {
    // Granted when the candidate could win: its term is ahead, its log is up to date, and no leader is alive here.
    // A node that is itself asking for pre-votes grants only a strictly better log, or an equal one from a greater
    // id: of two nodes that time out together exactly one goes on to a real election, instead of both splitting the
    // vote and waiting out another timeout. (Pre-votes change no durable state, so this only shapes liveness.)
    bool grant = m.term > hard_.term && !in_lease() && log_.up_to_date(m.last_index, m.last_term);
    if (grant && role_ == role::pre_candidate) {
      const bool equal = m.last_term == log_.last_term() && m.last_index == log_.last_index();
      grant = !equal || m.from > cfg_.id;
    }
    message r = reply_to(m, message_type::pre_vote_reply, grant);
    r.term = grant ? m.term : hard_.term;
    send(std::move(r));
  }

  void handle_vote(const message& m) {
    const bool free = hard_.voted_for.empty() || hard_.voted_for == m.from;
    const bool grant = free && log_.up_to_date(m.last_index, m.last_term);
    if (grant) {
      hard_.voted_for = m.from;
      election_elapsed_ = 0;
    }
    send(reply_to(m, message_type::vote_reply, grant));
  }

  void handle_append(const message& m) {
    if (role_ != role::follower || leader_ != m.from) become_follower(m.term, m.from);
    election_elapsed_ = 0;
    if (floor_term_ != hard_.term) {
      floor_term_ = hard_.term;
      floor_ = m.commit;
    }
    message r = reply_to(m, message_type::append_reply, false);
    if (m.prev_index < hard_.commit) {
      // Everything up to our commit index is known to match; tell the leader where we are.
      r.accepted = true;
      r.match = hard_.commit;
      send(std::move(r));
      return;
    }
    auto t = log_.term_at(m.prev_index);
    if (!t || *t != m.prev_term) {
      r.match = std::min(m.prev_index - 1, log_.last_index());  // hint: retry from before here
      send(std::move(r));
      return;
    }
    for (const entry& e : m.entries) {
      if (e.index <= log_.snapshot_index()) continue;
      auto have = log_.term_at(e.index);
      if (have && *have == e.term) continue;
      if (have) {
        // Conflict: this entry and all that follow it go (never a committed one: the leader has every committed entry).
        log_.truncate_from(e.index);
        truncated_from_ = truncated_from_ ? std::min(*truncated_from_, e.index) : e.index;
      }
      log_.append(e);
    }
    const index_t last_new = m.prev_index + m.entries.size();
    if (m.commit > hard_.commit) hard_.commit = std::min(m.commit, last_new);
    r.accepted = true;
    r.match = last_new;
    send(std::move(r));
  }

  void handle_snapshot(const message& m) {
    if (role_ != role::follower || leader_ != m.from) become_follower(m.term, m.from);
    election_elapsed_ = 0;
    message r = reply_to(m, message_type::append_reply, true);
    if (!m.snap || m.snap->index <= hard_.commit) {
      r.match = hard_.commit;
      send(std::move(r));
      return;
    }
    const raft::snapshot& s = *m.snap;
    const bool keep_suffix = log_.term_at(s.index) == s.term && s.index <= log_.last_index();
    log_.restore(s.index, s.term);
    if (!keep_suffix) {
      // The snapshot replaces the whole persisted log: the host drops every entry after it too.
      truncated_from_ = s.index + 1;
      persisted_last_ = s.index;
    }
    snap_ = s;
    out_.snap = s;
    pending_apply_snapshot_ = s;
    hard_.commit = s.index;
    applied_ = s.index;
    note_caught_up();
    r.match = s.index;
    send(std::move(r));
  }

  void handle_append_reply(const message& m) {
    auto it = progress_.find(m.from);
    if (it == progress_.end()) return;
    progress& p = it->second;
    p.active = true;
    if (m.accepted) {
      if (m.match > p.match) p.match = m.match;
      p.next = std::max(p.next, p.match + 1);
      if (maybe_commit()) {
        broadcast_append();  // followers learn the new commit index now, not at the next heartbeat
      } else if (p.next <= log_.last_index()) {
        send_append(m.from);
      }
      return;
    }
    // Refused: back up to just after the follower's hint (never below 1, never forward).
    p.next = std::max<index_t>(1, std::min(p.next - 1, m.match + 1));
    send_append(m.from);
  }

  /// Advances the commit index to what a majority holds; returns whether it moved.
  bool maybe_commit() {
    std::vector<index_t> matches{log_.last_index()};
    for (const auto& [id, p] : progress_) matches.push_back(p.match);
    std::sort(matches.begin(), matches.end(), std::greater<>());
    const index_t n = matches[quorum() - 1];
    // Only an entry of the current term commits by counting (Raft §5.4.2); earlier ones commit with it.
    if (n <= hard_.commit || log_.term_at(n) != hard_.term) return false;
    hard_.commit = n;
    return true;
  }

  void check_quorum() {
    std::size_t active = 1;
    for (auto& [id, p] : progress_) {
      active += p.active ? 1 : 0;
      p.active = false;
    }
    if (active < quorum()) become_follower(hard_.term, "");
  }

  index_t append_local(entry_kind kind, std::string data) {
    entry e{hard_.term, log_.last_index() + 1, kind, std::move(data)};
    log_.append(e);
    maybe_commit();  // a single-node cluster commits at once
    return e.index;
  }

  void broadcast_append() {
    for (const auto& p : cfg_.peers) send_append(p);
  }

  void send_append(const std::string& peer) {
    progress& p = progress_[peer];
    if (p.next <= log_.snapshot_index()) {
      message m = to(peer, message_type::snapshot);
      m.snap = snap_;
      send(std::move(m));
      return;
    }
    message m = to(peer, message_type::append);
    m.prev_index = p.next - 1;
    m.prev_term = *log_.term_at(m.prev_index);
    m.entries = log_.slice(p.next, log_.last_index(), cfg_.max_entries_per_append);
    m.commit = hard_.commit;
    send(std::move(m));
  }

  message to(const std::string& peer, message_type type) const {
    message m;
    m.type = type;
    m.from = cfg_.id;
    m.to = peer;
    m.term = hard_.term;
    return m;
  }

  message reply_to(const message& req, message_type type, bool accepted) const {
    message m = to(req.from, type);
    m.accepted = accepted;
    return m;
  }

  void send(message m) { out_.messages.push_back(std::move(m)); }

 public:
  /// Elections this node has won since it started (for metrics).
  std::uint64_t elections_won() const noexcept { return elections_won_; }

 private:
  node_config cfg_;
  std::mt19937_64 rng_;
  hard_state hard_;
  hard_state persisted_hard_;
  raft_log log_;
  raft::snapshot snap_;
  index_t applied_ = 0;
  // caught_up(): the term whose leader's first announced commit index is `floor_` (0: none heard since start).
  term_t floor_term_ = 0;
  index_t floor_ = 0;
  bool caught_up_ = false;

  void note_caught_up() {
    if (caught_up_ || floor_term_ == 0 || floor_term_ != hard_.term || applied_ < floor_) return;
    caught_up_ = log_.term_at(applied_) == hard_.term;
  }
  index_t persisted_last_ = 0;
  std::optional<index_t> truncated_from_;
  std::optional<raft::snapshot> pending_apply_snapshot_;
  role role_ = role::follower;
  std::string leader_;
  int election_elapsed_ = 0;
  int heartbeat_elapsed_ = 0;
  int randomized_timeout_ = 0;
  std::map<std::string, bool> votes_;
  std::map<std::string, progress> progress_;
  std::uint64_t elections_won_ = 0;
  ready out_;
};

}  // namespace moonmq::raft
