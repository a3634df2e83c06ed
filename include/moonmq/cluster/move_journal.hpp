// The source broker's record of moves that have passed cutover but are not yet confirmed by their destination
// (`<data_dir>/cluster-moves.json`). Written before the ownership flip, cleared after the destination confirms. On
// restart each entry is resolved by asking the destination: confirmed (it serves the partition) -> cleared;
// not confirmed (it still names this broker as owner, so it never served a record) -> the flip is rolled back and the
// partition is served here again; destination unreachable -> kept and asked again later.
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
  bool operator==(const pending_move&) const = default;
};

class move_journal {
 public:
  virtual ~move_journal() = default;
  virtual status add(const pending_move& m) = 0;
  virtual status remove(const topic_partition& tp) = 0;
  virtual std::vector<pending_move> pending() const = 0;
};

result<std::unique_ptr<move_journal>> open_move_journal(std::unique_ptr<storage::state_file> file);

}  // namespace moonmq::cluster
