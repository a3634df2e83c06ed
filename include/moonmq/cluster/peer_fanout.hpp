// Asking peers from a thread that may block (an admin route on the blocking pool, a catch-up): one peer, or every
// peer at once, each within the peer timeout, so that one slow or dead peer costs one timeout, not one per peer.
// Thread safety: may be called from any thread that may block.
#pragma once

#include <string>
#include <vector>

#include "moonmq/cluster/local_loads.hpp"
#include "moonmq/transport/peer_client.hpp"

namespace moonmq::cluster {

/// One peer's answer; `response.status == 0` when it did not answer.
struct peer_answer {
  std::string broker;
  transport::response response;
};

/// `req` to `peer`, from the calling thread.
transport::response ask_now(transport::peer_client& client, const std::string& peer, const transport::request& req);

/// `req` to every one of `peers` at once; the answers in the order of `peers`.
std::vector<peer_answer> ask_each_now(transport::peer_client& client, const std::vector<std::string>& peers,
                                      const transport::request& req);

/// One peer's report of what it holds (GET /cluster/loads), or why there is none.
struct peer_report {
  std::string broker;
  bool answered = false;
  std::string silence;                     ///< !answered: why
  std::vector<partition_load> partitions;  ///< the partitions it serves
  std::uint64_t held_bytes = 0;            ///< bytes of copies it holds without serving them
  std::vector<partition_load> strays;      ///< logs the topic catalog did not make there
};

/// Every one of `peers`' report, asked at once.
std::vector<peer_report> ask_reports_now(transport::peer_client& client, const std::vector<std::string>& peers);

/// A peer's refusal or silence as fields, never its body inside a string: the error code and message of its JSON
/// answer, or for no answer `unreachable` and the transport's reason.
struct peer_error {
  std::string error;
  std::string message;
};
peer_error read_peer_error(const transport::response& r);

/// A peer's answer in a few words: "HTTP 409 conflict: <its message>" or "no answer: <the reason>".
std::string describe_answer(const transport::response& r);

}  // namespace moonmq::cluster
