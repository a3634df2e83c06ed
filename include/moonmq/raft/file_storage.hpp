// Raft's durable state in the data directory:
//   raft-state.json     term, vote and commit index (replaced atomically: temp, fsync, rename, fsync directory)
//   raft-snapshot.json  the last snapshot: index, term and the state machine (the applied ownership table)
//   raft-log            the entries after the snapshot, as checksummed frames, appended and fdatasync'ed
// `save()` returns only once everything in the batch is on disk. On open, a torn last frame of the log (a crash
// mid-append, never acknowledged) is truncated and reported; a damaged frame elsewhere, a gap in the indexes or an
// unreadable JSON file is refused with a message naming the file: Raft's safety rests on this state, so it is never
// silently reset.
// Thread safety: one caller at a time.
#pragma once

#include <memory>
#include <string>

#include "moonmq/core/logger.hpp"
#include "moonmq/raft/storage.hpp"

namespace moonmq::raft {

/// Opens (creating when absent) the Raft state in `dir`.
result<std::unique_ptr<storage>> open_file_storage(const std::string& dir, logger& log);

}  // namespace moonmq::raft
