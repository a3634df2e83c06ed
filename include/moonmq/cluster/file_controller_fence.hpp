// The file-epoch controller fence: the highest claim seen, in a state_file (`<data_dir>/controller-epoch.json`,
// `{"epoch": 7, "controller": "b1"}`), written before a claim or an observed newer claim is acted on. A corrupt
// document stops `open` with an error naming the file (forgetting the epoch would let a stale controller act).
// Implemented in lib/.
// Thread safety: concurrent calls are allowed.
#pragma once

#include <memory>

#include "moonmq/cluster/controller_fence.hpp"
#include "moonmq/storage/state_file.hpp"

namespace moonmq::cluster {

result<std::unique_ptr<controller_fence>> open_file_controller_fence(broker_id self,
                                                                     std::unique_ptr<storage::state_file> file);

}  // namespace moonmq::cluster
