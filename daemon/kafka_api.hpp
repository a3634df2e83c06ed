// The Kafka listener's handlers: each request is decoded (kafka/messages), authorized, handed to the same front end
// the HTTP API calls (produce, fetch, topic admin, consumer groups and offsets, transactions' producer ids), and its
// answer encoded. What a Kafka
// client sees of the cluster is in docs/kafka.md: leader = the partition's owner, no forwarding (a partition served
// elsewhere is NOT_LEADER_OR_FOLLOWER, and the client follows Metadata), offsets = log offsets.
//
// Authentication is per connection (a `session`): with client tokens configured, only ApiVersions and the SASL
// requests are answered until SASL PLAIN or SCRAM-SHA-256 succeeds (user = a token's Name, password = its Token); the
// token's role then decides what the connection may do (client: produce, fetch, consumer groups, offsets, metadata,
// producer ids; admin: also topics).
// Thread safety: handle() may be called concurrently for different sessions; one session's calls are serialized by
// its connection.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "client_auth.hpp"
#include "moonmq/cluster/config.hpp"
#include "moonmq/cluster/ownership_table.hpp"
#include "moonmq/frontend/fetch.hpp"
#include "moonmq/frontend/offsets.hpp"
#include "moonmq/groups/group_routes.hpp"
#include "moonmq/frontend/placement_directory.hpp"
#include "moonmq/frontend/produce.hpp"
#include "moonmq/frontend/topic_admin.hpp"
#include "moonmq/frontend/transactions.hpp"
#include "moonmq/kafka/scram.hpp"
#include "moonmq/storage/partition_store.hpp"

namespace moonmq::daemon {

struct kafka_api_parts {
  const cluster::server_config* cfg = nullptr;
  broker_id self;
  storage::partition_store* store = nullptr;
  cluster::ownership_table* ownership = nullptr;
  frontend::placement_directory* directory = nullptr;
  frontend::produce_frontend* produce = nullptr;
  frontend::fetch_frontend* fetch = nullptr;
  frontend::topic_admin* topics = nullptr;
  frontend::transactions_frontend* txns = nullptr;
  std::function<std::string()> controller_id;
  /// The peers' own advertised Kafka addresses (GET /cluster/admin/kafka, every peer at once): broker id ->
  /// "host:port", for those that answered. Empty: peers are named at their configured addresses only.
  std::function<std::map<std::string, std::string>()> peer_kafka_addresses;
  groups::group_routes* group_routes = nullptr;
  frontend::offsets_frontend* offsets = nullptr;
};

class kafka_api {
 public:
  explicit kafka_api(kafka_api_parts parts);

  /// One connection's authentication state.
  struct session {
    bool authenticated = false;
    std::optional<role> granted;  ///< the role of the token it authenticated with (none: every role, no tokens)
    enum class mechanism { none, plain, scram_sha_256 };
    mechanism chosen = mechanism::none;  ///< what SaslHandshake chose: the next requests authenticate
    bool handshake_done = false;
    bool raw_sasl = false;  ///< SaslHandshake v0: the next frames are bare SASL tokens, answered bare
    std::optional<kafka::scram::server_exchange> scram;  ///< a SCRAM exchange under way
  };
  session open_session() const;

  struct reply {
    std::optional<std::string> bytes;  ///< the response frame, size prefix included; none: no response (acks=0)
    bool close = false;                ///< close the connection after sending `bytes`
    /// A fetch that found nothing: ask again (final=false) until this many milliseconds have passed, then once more
    /// with final=true (Kafka's max_wait_ms, served without holding a thread while it waits).
    std::int32_t wait_ms = 0;
  };

  /// Answers one request (its bytes without the size prefix).
  reply handle(session& s, std::string_view frame, bool final_attempt = true);

  /// handle(), on a thread that must not wait (the listener's reactor, which serves every connection), for a request
  /// that needs no wait, of an authenticated connection: a Produce of one partition, not transactional, not
  /// compressed, of at most a few MiB, that this broker appends at once (frontend::produce_request::never_wait); a
  /// Fetch of at most a few MiB of topics held here, every byte in the page cache (frontend::fetch_request::
  /// never_wait). nullopt for anything else, with nothing done but a fetch's counters (a fetch of several partitions
  /// that finds one not cached has counted the ones before it): the caller calls handle() from a thread that may wait.
  std::optional<reply> handle_at_once(const session& s, std::string_view frame);

 private:
  struct impl;
  std::shared_ptr<impl> m_;
};

}  // namespace moonmq::daemon
