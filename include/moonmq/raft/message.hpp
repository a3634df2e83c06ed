// What Raft nodes say to each other and what they keep: log entries, snapshots, hard state and the messages of the
// protocol (PreVote and Vote requests, AppendEntries, InstallSnapshot, and their replies).
//
// Entries are opaque to the consensus core: a kind and a payload. The cluster layer gives them meaning: a
// `controller` entry (written by a node the moment it wins an election: the claim and Raft's no-op of the new term)
// and an `owner` entry (one partition ownership change).
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moonmq::raft {

/// Raft's term and log index (positions start at 1; 0 means "none").
using term_t = std::uint64_t;
using index_t = std::uint64_t;

enum class entry_kind : std::uint8_t { controller = 1, owner = 2, topic = 3 };

/// Whether `k` is an entry kind this version knows: the one list that the log file's reader and the wire's both
/// check, so that a kind added here is accepted by both or by neither.
constexpr bool known_entry_kind(std::uint64_t k) {
  return k == static_cast<std::uint64_t>(entry_kind::controller) || k == static_cast<std::uint64_t>(entry_kind::owner) ||
         k == static_cast<std::uint64_t>(entry_kind::topic);
}

struct entry {
  term_t term = 0;
  index_t index = 0;
  entry_kind kind = entry_kind::controller;
  std::string data;
  bool operator==(const entry&) const = default;
};

/// The state machine as of `index` (the applied ownership table), replacing the log prefix up to it.
struct snapshot {
  index_t index = 0;
  term_t term = 0;
  std::string data;
  bool operator==(const snapshot&) const = default;
};

/// What must be durable before a node acts on it: the current term, the vote in it, and the commit index.
struct hard_state {
  term_t term = 0;
  std::string voted_for;
  index_t commit = 0;
  bool operator==(const hard_state&) const = default;
};

enum class message_type : std::uint8_t {
  pre_vote,
  pre_vote_reply,
  vote,
  vote_reply,
  append,
  append_reply,
  snapshot,
};

constexpr const char* message_type_name(message_type t) noexcept {
  switch (t) {
    case message_type::pre_vote:
      return "pre_vote";
    case message_type::pre_vote_reply:
      return "pre_vote_reply";
    case message_type::vote:
      return "vote";
    case message_type::vote_reply:
      return "vote_reply";
    case message_type::append:
      return "append";
    case message_type::append_reply:
      return "append_reply";
    case message_type::snapshot:
      return "snapshot";
  }
  return "?";
}

struct message {
  message_type type = message_type::append;
  std::string from;
  std::string to;
  term_t term = 0;  ///< the sender's term (for a pre-vote: the term it would campaign in)

  // pre_vote / vote: the candidate's last log position.
  index_t last_index = 0;
  term_t last_term = 0;
  // replies: granted / success.
  bool accepted = false;

  // append: entries follow (prev_index, prev_term); commit is the leader's commit index.
  index_t prev_index = 0;
  term_t prev_term = 0;
  std::vector<entry> entries;
  index_t commit = 0;
  // append_reply: on success the highest index known to match; on refusal a hint of where the follower's log ends.
  index_t match = 0;

  // snapshot: the leader's snapshot.
  std::optional<raft::snapshot> snap;

  bool operator==(const message&) const = default;
};

}  // namespace moonmq::raft
