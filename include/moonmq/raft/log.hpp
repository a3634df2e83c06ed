// A Raft node's log in memory: a snapshot point (index and term of the last entry compacted away) followed by the
// entries after it. Positions are absolute log indexes; entry i is at position i - snapshot_index - 1.
// Thread safety: none; owned by its node.
#pragma once

#include <cassert>
#include <optional>
#include <vector>

#include "moonmq/raft/message.hpp"

namespace moonmq::raft {

class raft_log {
 public:
  raft_log() = default;
  raft_log(index_t snapshot_index, term_t snapshot_term, std::vector<entry> entries)
      : snapshot_index_(snapshot_index), snapshot_term_(snapshot_term), entries_(std::move(entries)) {}

  index_t snapshot_index() const noexcept { return snapshot_index_; }
  term_t snapshot_term() const noexcept { return snapshot_term_; }
  index_t first_index() const noexcept { return snapshot_index_ + 1; }
  index_t last_index() const noexcept { return snapshot_index_ + entries_.size(); }
  term_t last_term() const noexcept { return entries_.empty() ? snapshot_term_ : entries_.back().term; }
  std::size_t size() const noexcept { return entries_.size(); }

  /// The term of the entry at `i`: the snapshot's for its own index, 0 for index 0, nullopt when compacted away or
  /// past the end.
  std::optional<term_t> term_at(index_t i) const {
    if (i == snapshot_index_) return snapshot_term_;
    if (i < snapshot_index_ || i > last_index()) return std::nullopt;
    return entries_[i - first_index()].term;
  }

  /// REQUIRES: first_index() <= i <= last_index().
  const entry& at(index_t i) const {
    assert(i >= first_index() && i <= last_index());
    return entries_[i - first_index()];
  }

  /// Entries [from, to], at most `max` of them. REQUIRES: first_index() <= from.
  std::vector<entry> slice(index_t from, index_t to, std::size_t max = SIZE_MAX) const {
    std::vector<entry> out;
    for (index_t i = from; i <= to && i <= last_index() && out.size() < max; ++i) out.push_back(at(i));
    return out;
  }

  /// Appends at the end. REQUIRES: e.index == last_index() + 1.
  void append(entry e) {
    assert(e.index == last_index() + 1);
    entries_.push_back(std::move(e));
  }

  /// Drops every entry from `i` on. REQUIRES: i > snapshot_index().
  void truncate_from(index_t i) {
    assert(i > snapshot_index_);
    if (i <= last_index()) entries_.resize(i - first_index());
  }

  /// Whether a candidate whose log ends at (index, term) is at least as up to date as this log (Raft §5.4.1).
  bool up_to_date(index_t index, term_t term) const {
    return term > last_term() || (term == last_term() && index >= last_index());
  }

  /// Forgets the entries up to `i` (now covered by a snapshot). REQUIRES: snapshot_index() <= i <= last_index().
  void compact(index_t i) {
    assert(i >= snapshot_index_ && i <= last_index());
    term_t t = *term_at(i);
    entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(i - snapshot_index_));
    snapshot_index_ = i;
    snapshot_term_ = t;
  }

  /// Replaces everything with a snapshot point, keeping the entries after it when the log holds the snapshot's last
  /// entry with the same term (Raft §7: a follower keeps a matching suffix).
  void restore(index_t index, term_t term) {
    if (term_at(index) == term && index <= last_index()) {
      compact(index);
      return;
    }
    entries_.clear();
    snapshot_index_ = index;
    snapshot_term_ = term;
  }

 private:
  index_t snapshot_index_ = 0;
  term_t snapshot_term_ = 0;
  std::vector<entry> entries_;
};

}  // namespace moonmq::raft
