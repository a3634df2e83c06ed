// raft::node against the rules of the Raft paper (section numbers in the names), driven by hand: every message is
// delivered, dropped or held explicitly.
#include <catch2/catch.hpp>

#include <functional>
#include <map>

#include "moonmq/raft/storage.hpp"

using namespace moonmq;
using namespace moonmq::raft;

namespace {

node_config config(const std::string& id, std::vector<std::string> peers) {
  node_config c;
  c.id = id;
  c.peers = std::move(peers);
  c.election_ticks_min = 10;
  c.election_ticks_max = 20;
  c.seed = 7;
  return c;
}

/// Three nodes and a hand-driven network: messages wait in `inbox` until delivered.
struct trio {
  std::map<std::string, std::unique_ptr<node>> nodes;
  std::map<std::string, memory_storage> disks;
  std::vector<message> inbox;
  std::map<std::string, std::vector<entry>> applied;

  trio() {
    nodes["a"] = std::make_unique<node>(config("a", {"b", "c"}));
    nodes["b"] = std::make_unique<node>(config("b", {"a", "c"}));
    nodes["c"] = std::make_unique<node>(config("c", {"a", "b"}));
  }
  node& operator[](const std::string& id) { return *nodes.at(id); }

  /// Takes every ready batch: persists, queues messages, applies.
  void pump() {
    for (auto& [id, n] : nodes)
      while (n->has_ready()) {
        ready r = n->take_ready();
        REQUIRE(disks[id].save(r));
        for (auto& m : r.messages) inbox.push_back(m);
        for (auto& e : r.committed) applied[id].push_back(e);
      }
  }
  /// Delivers queued messages (those `keep` accepts) until none are left.
  void settle(const std::function<bool(const message&)>& keep = {}) {
    for (int round = 0; round < 100; ++round) {
      pump();
      if (inbox.empty()) return;
      auto batch = std::move(inbox);
      inbox.clear();
      for (auto& m : batch)
        if (!keep || keep(m)) nodes.at(m.to)->step(m);
    }
  }
  /// Ticks every node but `excluded` (cut off) until one of them leads in a term after `after`; returns its id.
  std::string elect_without(const std::string& excluded, term_t after) {
    auto cut = [&](const message& m) { return m.to != excluded && m.from != excluded; };
    for (int i = 0; i < 100; ++i) {
      for (auto& [id, n] : nodes)
        if (id != excluded) n->tick();
      settle(cut);
      for (auto& [id, n] : nodes)
        if (id != excluded && n->is_leader() && n->term() > after) return id;
    }
    FAIL("no leader without " << excluded);
    return {};
  }
  /// Ticks `id` until it campaigns, then lets the election run.
  void elect(const std::string& id) {
    for (int i = 0; i < 25 && !nodes.at(id)->is_leader(); ++i) {
      nodes.at(id)->tick();
      settle();
    }
    REQUIRE(nodes.at(id)->is_leader());
  }
};

message vote_request(const std::string& from, const std::string& to, term_t term, index_t last_index,
                     term_t last_term) {
  message m;
  m.type = message_type::vote;
  m.from = from;
  m.to = to;
  m.term = term;
  m.last_index = last_index;
  m.last_term = last_term;
  return m;
}

/// The messages of `r` of type `t`.
std::vector<message> of_type(const ready& r, message_type t) {
  std::vector<message> out;
  for (const auto& m : r.messages)
    if (m.type == t) out.push_back(m);
  return out;
}

}  // namespace

TEST_CASE("raft 5.2: a node grants one vote per term, and the vote is durable in the batch that grants it",
          "[raft]") {
  node n(config("a", {"b", "c"}));
  n.step(vote_request("b", "a", 1, 0, 0));
  ready r = n.take_ready();
  REQUIRE(r.hard);
  CHECK(r.hard->voted_for == "b");  // persisted before the reply below is sent
  REQUIRE(of_type(r, message_type::vote_reply).size() == 1);
  CHECK(of_type(r, message_type::vote_reply)[0].accepted);
  n.step(vote_request("c", "a", 1, 0, 0));
  CHECK_FALSE(of_type(n.take_ready(), message_type::vote_reply)[0].accepted);
  n.step(vote_request("b", "a", 1, 0, 0));  // the same candidate asking again: still granted
  CHECK(of_type(n.take_ready(), message_type::vote_reply)[0].accepted);
}

TEST_CASE("raft 5.4.1: a vote is refused to a candidate whose log is less up to date", "[raft]") {
  trio t;
  t.elect("a");
  REQUIRE(t["a"].propose(entry_kind::owner, "x"));
  t.settle();
  REQUIRE(t["b"].log().last_index() == 2);
  REQUIRE(t["b"].log().last_term() == t["b"].term());
  for (int k = 0; k < 10; ++k) t["b"].tick();  // the leader's lease runs out at b (votes are ignored within it)
  (void)t["b"].take_ready();
  const term_t next = t["b"].term() + 1;
  // Older last term: refused. Same last term but shorter: refused. As long or longer: granted.
  t["b"].step(vote_request("c", "b", next, 5, t["b"].log().last_term() - 1));
  CHECK_FALSE(of_type(t["b"].take_ready(), message_type::vote_reply).at(0).accepted);
  t["b"].step(vote_request("c", "b", next, 1, t["b"].log().last_term()));
  CHECK_FALSE(of_type(t["b"].take_ready(), message_type::vote_reply).at(0).accepted);
  t["b"].step(vote_request("c", "b", next, 2, t["b"].log().last_term()));
  CHECK(of_type(t["b"].take_ready(), message_type::vote_reply).at(0).accepted);
}

TEST_CASE("raft 5.1: a request from an older term is refused with the current term", "[raft]") {
  node n(config("a", {"b", "c"}));
  n.step(vote_request("b", "a", 3, 0, 0));
  (void)n.take_ready();
  n.step(vote_request("c", "a", 2, 10, 2));
  auto replies = of_type(n.take_ready(), message_type::vote_reply);
  REQUIRE(replies.size() == 1);
  CHECK_FALSE(replies[0].accepted);
  CHECK(replies[0].term == 3);
}

TEST_CASE("raft 5.2: an election winner writes a controller entry in its new term", "[raft]") {
  trio t;
  t.elect("a");
  const auto& last = t["a"].log().at(t["a"].log().last_index());
  CHECK(last.kind == entry_kind::controller);
  CHECK(last.data == "a");
  CHECK(last.term == t["a"].term());
  CHECK(t["b"].leader() == "a");
  CHECK(t["c"].leader() == "a");
}

TEST_CASE("raft 5.3: an append that does not match the follower's log is refused, conflicts are truncated",
          "[raft]") {
  node f(config("b", {"a", "c"}));
  message m;
  m.type = message_type::append;
  m.from = "a";
  m.to = "b";
  m.term = 2;
  m.prev_index = 0;
  m.prev_term = 0;
  m.entries = {{1, 1, entry_kind::controller, "x"}, {1, 2, entry_kind::owner, "old"}, {1, 3, entry_kind::owner, "old"}};
  f.step(m);
  (void)f.take_ready();
  // prev (5, 2) is not in the log: refused with a hint of where the log ends.
  message gap = m;
  gap.prev_index = 5;
  gap.prev_term = 2;
  gap.entries = {};
  f.step(gap);
  auto refused = of_type(f.take_ready(), message_type::append_reply).at(0);
  CHECK_FALSE(refused.accepted);
  CHECK(refused.match == 3);
  // A new leader's entries from index 2 differ in term: 2 and 3 go, the new ones take their place.
  message fix = m;
  fix.prev_index = 1;
  fix.prev_term = 1;
  fix.entries = {{2, 2, entry_kind::owner, "new"}};
  f.step(fix);
  ready r = f.take_ready();
  CHECK(r.truncate_from == index_t{2});
  REQUIRE(r.entries.size() == 1);
  CHECK(r.entries[0].data == "new");
  CHECK(f.log().last_index() == 2);
  CHECK(f.log().at(2).data == "new");
  CHECK(of_type(r, message_type::append_reply).at(0).match == 2);
  // The same append again changes nothing.
  f.step(fix);
  ready again = f.take_ready();
  CHECK_FALSE(again.truncate_from);
  CHECK(again.entries.empty());
}

TEST_CASE("raft 5.3: an entry commits once a majority holds it, and every node applies it", "[raft]") {
  trio t;
  t.elect("a");
  auto i = t["a"].propose(entry_kind::owner, "orders-0=b2");
  REQUIRE(i);
  // Only b hears of it: a and b are a majority of three.
  t.settle([](const message& m) { return m.to != "c" && m.from != "c"; });
  CHECK(t["a"].commit_index() == *i);
  t["a"].tick();  // the next heartbeat reaches c too
  t.settle();
  for (const char* id : {"a", "b", "c"}) {
    INFO(id);
    REQUIRE_FALSE(t.applied[id].empty());
    CHECK(t.applied[id].back().data == "orders-0=b2");
  }
}

TEST_CASE("raft 5.4.2: an entry of an earlier term never commits by counting alone", "[raft]") {
  // b led term 1 and wrote an entry that only it holds; then it is follower in a later term and a leads.
  trio t;
  t.elect("b");
  t.settle();
  REQUIRE(t["b"].propose(entry_kind::owner, "from-term-1"));
  const index_t old_index = t["b"].log().last_index();
  const term_t old_term = t["b"].term();
  t.pump();
  t.inbox.clear();  // nobody hears of it
  // a or c wins the next term without b; b's old entry is in neither log.
  const std::string leader = t.elect_without("b", old_term);
  node& l = t[leader];
  REQUIRE(l.term() > old_term);
  // Holding the new leader's controller entry back from everyone, a majority could hold b's old entry only if a
  // had it; check the rule directly: a's commit index never covers an entry of an earlier term by counting.
  CHECK(l.log().term_at(l.commit_index()) == l.term());
  // b rejoins: its uncommitted entry of the earlier term is replaced by the leader's log.
  l.tick();
  t.settle();
  CHECK(t["b"].log().term_at(old_index) != old_term);
  CHECK(t["b"].log().last_index() == l.log().last_index());
}

TEST_CASE("raft 5.4.2: the controller entry of a new term commits earlier-term entries with it", "[raft]") {
  trio t;
  t.elect("a");
  auto i = t["a"].propose(entry_kind::owner, "p");
  REQUIRE(i);
  // The entry reaches b, but a crashes (stops) before learning that it committed.
  t.pump();
  for (auto& m : t.inbox)
    if (m.to == "b") t["b"].step(m);
  t.inbox.clear();
  t.pump();
  t.inbox.clear();
  REQUIRE(t["b"].log().last_index() == *i);
  REQUIRE(t["b"].commit_index() < *i);
  t.nodes.erase("a");
  // b wins with c; the entry from a's term commits only when b's own controller entry does.
  // Only b can win: c's log lacks the entry, so b refuses it.
  CHECK(t.elect_without("a", 0) == "b");
  t.settle([](const message& m) { return m.to != "a"; });
  CHECK(t["b"].commit_index() == t["b"].log().last_index());
  CHECK(t["b"].commit_index() > *i);
  CHECK(t["c"].log().at(*i).data == "p");
}

TEST_CASE("raft 6.2 CheckQuorum: a leader that hears from no majority steps down within an election timeout",
          "[raft]") {
  trio t;
  t.elect("a");
  for (int k = 0; k < 2 * 10 + 1; ++k) {
    t["a"].tick();
    t.pump();
    t.inbox.clear();  // partitioned: nothing arrives
  }
  CHECK_FALSE(t["a"].is_leader());
  CHECK(t["a"].current_role() == role::follower);
}

TEST_CASE("raft 9.6 PreVote: a node cut off does not raise its term, and on return does not depose the leader",
          "[raft]") {
  trio t;
  t.elect("a");
  const term_t term = t["a"].term();
  // c is cut off for a long time: it keeps trying pre-votes that nobody answers.
  for (int k = 0; k < 200; ++k) {
    t["c"].tick();
    t["a"].tick();
    t.settle([](const message& m) { return m.to != "c" && m.from != "c"; });
  }
  CHECK(t["c"].term() == term);
  // c rejoins while a is healthy: b refuses its pre-vote (a leader is alive), nothing changes.
  for (int k = 0; k < 50; ++k) {
    t["c"].tick();
    t["a"].tick();
    t.settle();
  }
  CHECK(t["a"].is_leader());
  CHECK(t["a"].term() == term);
  CHECK(t["c"].leader() == "a");
}

TEST_CASE("raft 5.1: a leader that sees a later term steps down", "[raft]") {
  trio t;
  t.elect("a");
  message m;
  m.type = message_type::append_reply;
  m.from = "b";
  m.to = "a";
  m.term = t["a"].term() + 3;
  t["a"].step(m);
  CHECK_FALSE(t["a"].is_leader());
  CHECK(t["a"].term() == m.term);
}

TEST_CASE("raft 7: a follower behind the leader's snapshot is caught up by InstallSnapshot", "[raft]") {
  trio t;
  t.elect("a");
  for (int k = 0; k < 10; ++k) {
    REQUIRE(t["a"].propose(entry_kind::owner, "e" + std::to_string(k)));
    t.settle([](const message& m) { return m.to != "c"; });  // c hears nothing
  }
  const index_t applied = t["a"].applied_index();
  t["a"].compact(applied, "table-at-" + std::to_string(applied));
  ready r = t["a"].take_ready();
  REQUIRE(r.snap);
  REQUIRE(t.disks["a"].save(r));
  CHECK(t.disks["a"].durable().snap->index == applied);
  CHECK(t["a"].log().snapshot_index() == applied);
  // c's next append would need entries that are gone: it gets the snapshot.
  bool sent_snapshot = false;
  for (int k = 0; k < 5; ++k) {
    t["a"].tick();
    t.pump();
    for (const auto& m : t.inbox) sent_snapshot = sent_snapshot || (m.type == message_type::snapshot && m.to == "c");
    t.settle();
  }
  CHECK(sent_snapshot);
  CHECK(t["c"].log().snapshot_index() == applied);
  CHECK(t["c"].commit_index() >= applied);
  CHECK(t.disks["c"].durable().snap->data == "table-at-" + std::to_string(applied));
}

TEST_CASE("raft storage twin: a crash loses what was written and not synced", "[raft]") {
  memory_storage disk;
  ready r;
  r.hard = hard_state{3, "b", 1};
  r.entries = {{3, 1, entry_kind::controller, "b"}};
  REQUIRE(disk.save(r));
  ready later;
  later.hard = hard_state{4, "c", 1};
  later.entries = {{4, 2, entry_kind::controller, "c"}};
  disk.write(later);
  disk.crash();
  auto s = disk.load();
  CHECK(s->hard == hard_state{3, "b", 1});
  CHECK(s->entries.size() == 1);
  // A node restarting from it resumes with that term and vote.
  node n(config("a", {"b", "c"}), *s);
  CHECK(n.term() == 3);
  CHECK(n.voted_for() == "b");
  CHECK(n.log().last_index() == 1);
}

TEST_CASE("raft 5.4.2 (Figure 8): a majority holding an earlier-term entry does not commit it", "[raft]") {
  // a restarts holding an uncommitted entry of term 2 at index 2; b lacks it. a leads term 4 with b's vote and
  // replicates one entry per append, so b comes to hold index 2 before index 3 (a's controller entry of term 4).
  auto restored = [](std::vector<entry> entries) {
    durable_state s;
    s.hard = hard_state{3, "", 1};
    s.entries = std::move(entries);
    return s;
  };
  node_config ca = config("a", {"b", "c"});
  ca.max_entries_per_append = 1;
  node a(ca, restored({{1, 1, entry_kind::controller, "a"}, {2, 2, entry_kind::owner, "old"}}));
  node b(config("b", {"a", "c"}), restored({{1, 1, entry_kind::controller, "a"}}));
  auto exchange = [&] {  // a <-> b only (c is away), until a leads
    for (int round = 0; round < 20 && !a.is_leader(); ++round) {
      bool any = false;
      for (node* n : {&a, &b}) {
        ready r = n->take_ready();
        for (auto& m : r.messages)
          if (m.to != "c") {
            (m.to == "a" ? a : b).step(m);
            any = true;
          }
      }
      if (!any) return;
    }
  };
  for (int k = 0; k < 25 && !a.is_leader(); ++k) {
    a.tick();
    exchange();
  }
  REQUIRE(a.is_leader());
  REQUIRE(a.log().last_index() == 3);
  // Walk the replication one message at a time and watch a's commit index while b holds index 2 but not 3.
  bool seen_old_on_majority = false;
  for (int round = 0; round < 20; ++round) {
    ready ra = a.take_ready();
    for (auto& m : ra.messages)
      if (m.to == "b") b.step(m);
    ready rb = b.take_ready();
    for (auto& m : rb.messages)
      if (m.to == "a") a.step(m);
    if (b.log().last_index() == 2 && b.log().term_at(2) == term_t{2}) {
      seen_old_on_majority = true;
      CHECK(a.commit_index() < 2);  // counting alone never commits an entry of an earlier term
    }
  }
  CHECK(seen_old_on_majority);
  CHECK(a.commit_index() == 3);  // once the term-4 entry is on a majority, both commit
}

TEST_CASE("raft: a restarted node is caught up only once it applied what the leader had committed when it returned",
          "[raft]") {
  trio t;
  t.elect("a");
  CHECK(t["a"].caught_up());  // the leader, once its own-term entry is applied
  for (int i = 0; i < 3; ++i) REQUIRE(t["a"].propose(entry_kind::owner, "move " + std::to_string(i)));
  t.settle();
  CHECK(t["c"].caught_up());
  const index_t committed = t["a"].commit_index();
  // c crashes and comes back from its disk: its state machine is rebuilt only up to the commit index it saved.
  t.nodes["c"] = std::make_unique<node>(config("c", {"a", "b"}), *t.disks["c"].load());
  CHECK_FALSE(t["c"].caught_up());
  t.pump();
  CHECK_FALSE(t["c"].caught_up());  // what it applied from its own disk proves nothing yet
  // The leader's heartbeat says how far the cluster has committed; once c has applied that far, it is caught up.
  for (int i = 0; i < 10 && !t["c"].caught_up(); ++i) {
    t["a"].tick();
    t.settle();
  }
  CHECK(t["c"].caught_up());
  CHECK(t["c"].applied_index() >= committed);
}
