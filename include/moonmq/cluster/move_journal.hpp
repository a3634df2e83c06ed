// The source broker's record of moves that have passed cutover but are not yet finished
// (`<data_dir>/cluster-moves.json`): the partition, the destination, the move's ownership version and whether the
// tail was drained. Written before the cutover, marked `drained` (durably) before the first confirm is sent, cleared
// when the move's outcome is known. A journaled move is resolved (reassigner::recover) by its phase alone, never by
// asking whether the destination serves: before `drained` no confirm was ever sent, so the move is rolled back; once
// `drained`, the move can only go forward and its confirm is sent again until an answer says how it was decided.
// An entry written before ownership versions existed (no "version") is read as `legacy` and resolved the way that
// code did: by asking whether the destination serves the partition.
// Implemented in lib/ (RapidJSON).
// Thread safety: concurrent calls are allowed.
#pragma once

#include <memory>
#include <vector>

#include "moonmq/core/ids.hpp"
#include "moonmq/core/result.hpp"
#include "moonmq/storage/state_file.hpp"

namespace moonmq::cluster {

struct pending_move {
  topic_partition partition;
  broker_id dest;
  std::uint64_t version = 0;  ///< the ownership version the move gives `dest` (the source's version + 1)
  bool drained = false;       ///< the tail is on `dest`: a confirm may have been sent
  bool legacy = false;        ///< written before ownership versions (no version, no phase)
  /// The incarnation of the partition's topic the move is for (topic_record::created; 0: a topic the catalog does
  /// not list, or written before incarnations were kept): a move whose topic was deleted meanwhile is dropped, never
  /// decided (its decision would be taken for a later topic of the name).
  std::uint64_t incarnation = 0;
  bool operator==(const pending_move&) const = default;
};

class move_journal {
 public:
  virtual ~move_journal() = default;
  /// Records `m`, replacing an entry of the same partition.
  virtual status add(const pending_move& m) = 0;
  /// Removes the entry of `tp` if it is still the one of the move at `version` (a newer move of the same partition
  /// keeps its own).
  virtual status remove(const topic_partition& tp, std::uint64_t version) = 0;
  virtual std::vector<pending_move> pending() const = 0;
};

result<std::unique_ptr<move_journal>> open_move_journal(std::unique_ptr<storage::state_file> file);

}  // namespace moonmq::cluster
