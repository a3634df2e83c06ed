// The local ownership table: a sparse JSON document in a state_file (`<data_dir>/cluster-assignments.json`).
//
//   {"version": 1, "assignments": [{"topic": "orders", "partition": 0, "broker": "b2"}, ...]}
//
// Setting a partition's owner to this broker itself removes its entry (absent = owned locally), which is how the
// reassigner's "confirm" step clears a stale entry on the destination. Every change is written (atomically) before
// set_owner returns; a failed write leaves the table as it was. A corrupt or unreadable document stops `open` with
// an error naming the file: it is never silently read as empty, since an empty table would make this broker serve
// partitions it gave away. Implemented in lib/ (RapidJSON).
// Thread safety: concurrent calls are allowed; changes are serialized.
#pragma once

#include <memory>

#include "moonmq/cluster/ownership_table.hpp"
#include "moonmq/storage/state_file.hpp"

namespace moonmq::cluster {

result<std::unique_ptr<ownership_table>> open_local_ownership_table(broker_id self,
                                                                    std::unique_ptr<storage::state_file> file);

}  // namespace moonmq::cluster
