// The fetch front end: what a consumer's fetch means, whichever protocol carried it.
//
// A fetch is served only by the partition's owner (a broker that does not serve it refuses with the owner, or with
// errc::unavailable while the partition is being handed over to it). An offset inside a record reads from the next
// one (Kafka clients fetch at a record's offset + 1); one past the end is out of range, with the log's end so that a
// consumer can reset. Under read_committed the read stops at the last stable offset, and control records and the
// records of aborted transactions are left out; the last stable offset and the aborted ranges are taken before the
// read, so every record of a transaction still open then lies at or past it.
// Thread safety: every method may be called concurrently (a read may block on the disk).
#pragma once

#include <optional>
#include <vector>

#include "moonmq/cluster/ownership_table.hpp"
#include "moonmq/cluster/producer_states.hpp"
#include "moonmq/cluster/traffic.hpp"
#include "moonmq/core/metrics_sink.hpp"
#include "moonmq/frontend/outcome.hpp"
#include "moonmq/frontend/placement.hpp"
#include "moonmq/storage/partition_store.hpp"
#include "moonmq/storage/record.hpp"

namespace moonmq::frontend {

struct fetch_request {
  topic_partition tp;
  std::uint64_t offset = 0;
  std::size_t max_bytes = 1u << 20;  ///< at least one whole record is returned, whatever its size
  bool read_committed = false;
  /// Control records (transaction markers) are returned too, below the last stable offset under read_committed: a
  /// Kafka consumer must see them to move its position past them.
  bool with_control = false;
  /// The caller's thread must not wait (the Kafka listener's reactor): a fetch that would wait is refused with
  /// errc::would_block, and the caller asks again from a thread that may wait. It would wait for a topic this broker
  /// does not hold (the brokers are asked who serves it), bytes the page cache does not hold
  /// (partition_store::read_cached), and under read_committed, where cluster::producer_states::committed would.
  /// Such a fetch is not counted: its caller counts it (fetch_frontend::count) once its whole answer stands, so that
  /// a request of several partitions that goes to another thread half way is counted once.
  bool never_wait = false;
  /// Nonzero: a read ends at the end of a stored Kafka batch (storage::batch_position), as a Kafka broker's does. A
  /// batch that `max_bytes` cuts is left for the next fetch, unless it is the first thing read: then the read goes on
  /// until the batch ends, up to this many bytes read in all (past that, the batch is returned cut at its last
  /// record). Zero: a read ends where `max_bytes` ends it.
  std::size_t whole_batch_bytes = 0;
};

struct fetched {
  std::uint64_t offset = 0;       ///< where the read started: the first record at or after the one asked for
  storage::read_result read;      ///< whole frames from `offset`
  std::uint64_t next_offset = 0;  ///< where the next fetch starts (never past the last stable offset)
  std::uint64_t end_offset = 0;   ///< the log's end when it was read
  std::optional<std::uint64_t> last_stable_offset;  ///< under read_committed
  /// The reads after `read` that completed a stored batch (fetch_request::whole_batch_bytes).
  std::vector<storage::read_result> more;
  std::vector<storage::record_view> records;  ///< what the consumer gets, in order (views into read and more)
  std::size_t data_records = 0;  ///< of `records`, those that are not control records
  std::size_t data_bytes = 0;    ///< and their keys' and values' bytes
  /// With fetch_request::whole_batch_bytes: the records end inside a stored batch, which did not fit in it.
  bool batch_cut = false;
};

struct fetch_parts {
  broker_id self;
  storage::partition_store* store = nullptr;
  cluster::ownership_table* ownership = nullptr;
  cluster::producer_states* producers = nullptr;
  cluster::traffic* counters = nullptr;         ///< null: the read is not counted as consumer load
  metrics_sink* metrics = nullptr;              ///< null: nothing counted
  const placement_source* placement = nullptr;  ///< asked for the owner of a topic this broker does not have
};

/// A refusal for a partition this broker does not serve: errc::not_owner naming the owner, or errc::unavailable when
/// that is this broker itself (a handover to it, or catching up with the ownership log after a start).
refusal not_served(const cluster::ownership_table& ownership, const topic_partition& tp, const broker_id& self);

class fetch_frontend {
 public:
  explicit fetch_frontend(fetch_parts parts) : p_(std::move(parts)) {}

  outcome<fetched> fetch(const fetch_request& req) const;

  /// Counts what `f` read from `tp`: the partition's consumer load, and the records and bytes fetched. fetch() counts
  /// its own reads, except with never_wait.
  void count(const topic_partition& tp, const fetched& f) const;

 private:
  fetch_parts p_;
};

}  // namespace moonmq::frontend
