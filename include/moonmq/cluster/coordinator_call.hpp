// Running a call on the broker that coordinates something (a consumer group, a transactional id): on this broker
// through `local`, or forwarded over the peer client on the caller's thread. A coordinator that does not answer is
// 503 `coordinator_unavailable`, naming what it coordinates and which broker it is.
// Thread safety: as the peer client's call_now.
#pragma once

#include <functional>
#include <string>

#include "moonmq/cluster/peer.hpp"

namespace moonmq::cluster {

inline transport::response call_coordinator(peer_client& peers, const broker_id& coordinator, transport::request req,
                                            const std::string& what,
                                            const std::function<transport::response(const transport::request&)>& local) {
  if (coordinator == peers.directory().self) return local(req);
  auto answer = peers.call_now(coordinator.value(), std::move(req));
  if (!answer || answer->status == 0)
    return transport::error_response(503, "coordinator_unavailable",
                                     "the coordinator of " + what + ", " + coordinator.value() + ", did not answer" +
                                         (answer ? ": " + answer->body : std::string()));
  return *answer;
}

}  // namespace moonmq::cluster
