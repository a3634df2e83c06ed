// A replicated log without the consensus, for in-process tests of the Raft-backed ownership table: an entry one
// broker proposes is appended and applied, in order, to every broker's table that is keeping up. Faults are chosen per
// proposal by a hook: the answer is lost although the entry was appended (`lose_answer`), the entry is held back and
// commits only at release() while its proposer hears that it did not (`hold`: a leader that commits after the wait
// gave up), or the proposal fails before it is appended (`refuse`). A broker can lag (a restarted one that has not caught up yet): it applies
// nothing until catch_up().
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "moonmq/cluster/raft_ownership_table.hpp"

namespace moonmq::test {

class test_log {
 public:
  enum class fate { append, lose_answer, hold, refuse };
  std::function<fate(const std::string& proposer, const raft::entry&)> hook;

  /// Registers (or, after a restart, replaces) `id`'s table. A lagging table applies nothing until catch_up().
  void attach(const std::string& id, cluster::raft_ownership_table& table, bool lagging) {
    std::lock_guard lock(mu_);
    tables_[id] = {&table, 0, lagging};
    table.attach([this, id](raft::entry_kind k, std::string data) { return propose(id, k, std::move(data)); });
    if (!lagging) catch_up_locked(id);
  }

  /// What `id` proposes through (a topic directory's proposer: the same log, the same faults).
  std::function<result<raft::index_t>(raft::entry_kind, std::string)> proposer_for(const std::string& id) {
    return [this, id](raft::entry_kind k, std::string data) { return propose(id, k, std::move(data)); };
  }

  /// `id` applies everything appended so far and is caught up from then on.
  void catch_up(const std::string& id) {
    std::lock_guard lock(mu_);
    catch_up_locked(id);
  }

  /// The held entries commit now, after everything appended so far.
  void release() {
    std::lock_guard lock(mu_);
    for (auto& e : held_) {
      e.index = entries_.size() + 1;
      entries_.push_back(std::move(e));
    }
    held_.clear();
    for (auto& [id, m] : tables_)
      if (!m.lagging) apply_all(m);
  }

  /// How many entries are held back (see release()).
  std::size_t held() const {
    std::lock_guard lock(mu_);
    return held_.size();
  }

  std::size_t size() const {
    std::lock_guard lock(mu_);
    return entries_.size();
  }

 private:
  struct member {
    cluster::raft_ownership_table* table = nullptr;
    std::size_t applied = 0;
    bool lagging = false;
  };

  result<raft::index_t> propose(const std::string& from, raft::entry_kind kind, std::string data) {
    std::lock_guard lock(mu_);
    raft::entry e{1, entries_.size() + 1, kind, std::move(data)};
    const fate f = hook ? hook(from, e) : fate::append;
    if (f == fate::refuse) return error{errc::unavailable, "no Raft leader is known yet; retry"};
    if (f == fate::hold) {
      held_.push_back(std::move(e));
      return error{errc::unavailable, "the entry did not commit within the timeout"};
    }
    entries_.push_back(e);
    for (auto& [id, m] : tables_)
      if (!m.lagging) apply_all(m);
    if (f == fate::lose_answer || tables_[from].lagging)
      return error{errc::unavailable, "entry " + std::to_string(e.index) + " did not commit within the timeout"};
    return e.index;
  }

  void apply_all(member& m) {
    for (; m.applied < entries_.size(); ++m.applied) m.table->apply(entries_[m.applied]);
  }

  void catch_up_locked(const std::string& id) {
    auto& m = tables_.at(id);
    m.lagging = false;
    apply_all(m);
    m.table->caught_up();
  }

  mutable std::mutex mu_;
  std::vector<raft::entry> entries_;
  std::vector<raft::entry> held_;
  std::map<std::string, member> tables_;
};

}  // namespace moonmq::test
