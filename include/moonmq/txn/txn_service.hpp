// Transactions on one broker: the coordinator of the transactional ids that hash to it (txn::coordinator, with its
// state durable in a keyed log), the /cluster/txn/* routes, and the owner's side of a transaction (enrolment,
// markers, transactional offsets) for the partitions this broker serves.
//
// Coordinator routes (a call arriving elsewhere is forwarded, like groups; 503 naming an unreachable coordinator):
//   POST /cluster/txn/init {transactional_id}                     -> {producer_id, producer_epoch}
//   POST /cluster/txn/add {transactional_id, producer_id, producer_epoch, partitions:[{topic, partition, owner}]}
//   POST /cluster/txn/offsets {..., group, offsets:[{topic, partition, offset, owner}]}
//   POST /cluster/txn/end {..., commit, wait?}                    -> {state, producer_epoch, pending}
//     answers once the decision (prepare) is written; with `wait` (or no `defer` option), once the markers are
//     delivered too. The id's next add, end or init waits for a completion still under way.
//   GET  /cluster/txn/describe?transactional_id=  ·  GET /cluster/txn/list[?limit=N&after=ID] (one page, "more")
// Owner routes (421 naming the owner where the partition is not served, as for produce):
//   POST /cluster/txn/enroll {topic, partition, producer_id, producer_epoch}   (opens the transaction without
//     records; a forwarded transactional produce opens it itself)
//   POST /cluster/txn/markers {topic, partition, producer_id, producer_epoch, coordinator_epoch, commit}
//   POST /cluster/txn/commit_offsets {group, topic, partition, offset}
//
// Each change of a transaction is appended to the coordinator's keyed log (txn-state.log, one record per change,
// keyed by transactional id) before any answer that depends on it. The prepare record is the commit point and is
// always synced; the other records are synced when `sync_every_write` (Server.Storage.Fsync = always) and otherwise
// by tick() (about every 500 ms): written with pwrite, they survive a kill -9 either way. The prepare record is synced
// after the coordinator lets go of its lock, so that the commits of many producers share one fdatasync; no marker goes
// out before it is durable. After a restart, every transaction found in prepare has its markers (and offsets) sent
// again by tick().
// Thread safety: every method may be called concurrently.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <string>
#include <vector>

#include "moonmq/cluster/cluster_service.hpp"
#include "moonmq/transport/list_page.hpp"
#include "moonmq/transport/peer_client.hpp"
#include "moonmq/core/outcome.hpp"
#include "moonmq/storage/keyed_log.hpp"
#include "moonmq/txn/coordinator.hpp"

namespace asio {
class thread_pool;
}  // namespace asio

namespace moonmq::txn {

namespace wire {  // lib/txn/txn_wire.hpp
enum class owner_route : int;
struct owner_call;
}  // namespace wire

struct txn_service_options {
  std::vector<broker_id> brokers;  ///< every configured broker, this one included
  time_ms timeout_ms = 60'000;     ///< Server.Transactions.TimeoutMs
  std::function<time_ms()> clock;  ///< wall-clock milliseconds (transaction ages survive a restart)
  std::function<std::uint64_t()> fresh_producer_id;
  bool sync_every_write = false;   ///< fdatasync every change, the commit point among them
  /// Runs a transaction's completion (its markers and offsets) off the thread that answered its end. Empty: an end
  /// always waits for its markers.
  std::function<void(std::function<void()>)> defer;
};

/// A producer's identity as a coordinator hands it out.
struct producer_identity {
  std::uint64_t producer_id = 0;
  std::uint32_t epoch = 0;
};

/// What a producer asks for when its session starts.
struct init_options {
  session_options session;
  /// The session the producer has (Kafka's InitProducerId v3+ bump of its own epoch): refused as fenced unless it
  /// is the id's current one.
  std::optional<producer_identity> expected;
};

/// A producer's end of its transaction (Kafka's EndTxn).
struct end_call {
  std::string transactional_id;
  std::uint64_t producer_id = 0;
  std::uint32_t epoch = 0;
  bool commit = false;
  bool wait = false;  ///< answer once every marker is delivered
};

struct end_answer {
  std::string state;  ///< the transaction's phase after the end
  std::uint32_t epoch = 0;
  std::vector<std::string> pending;  ///< partitions ("topic-n") whose markers are not delivered yet
};

/// A group's offsets written if and only if the transaction commits (Kafka's TxnOffsetCommit), each with the broker
/// this one believes owns its partition.
struct offsets_call {
  std::string transactional_id;
  std::uint64_t producer_id = 0;
  std::uint32_t epoch = 0;
  std::string group;
  std::vector<std::pair<txn_offset, broker_id>> offsets;
};

class txn_service {
 public:
  /// `log` (which must outlive the service) holds the coordinator's transactions; unreadable: an error naming it.
  ~txn_service();
  static result<std::unique_ptr<txn_service>> open(txn_service_options options, storage::keyed_log& log,
                                                   cluster::cluster_state state, transport::peer_client& peers);

  transport::response handle_cluster(const transport::request& req);

  /// The producer's calls, on the coordinator of the transactional id: run directly when that is this broker,
  /// serialised over /cluster/txn/* only when the call leaves the process. Errors as the coordinator gives them
  /// (producer_fenced, conflict for a transaction that is ending, unavailable while the previous one completes, ...);
  /// a coordinator that does not answer is refusal::coordinator_silent (the only refusal marked by_coordinator).
  outcome<producer_identity> init(const std::string& transactional_id, const init_options& options = {});
  outcome<end_answer> end(const end_call& c);
  outcome<done> add_offsets(const offsets_call& c);
  /// The transaction as `GET /v1/transactions/{id}` shows it (a JSON document).
  outcome<std::string> describe(const std::string& transactional_id);
  /// The transactions this broker coordinates, one page of them by transactional id (a JSON document:
  /// {"coordinator","coordinator_epoch","transactions":[...],"more"}).
  std::string list_document(const transport::list_page& page = {});

  /// From the broker a transactional produce arrived at, before its records are routed: the coordinator records
  /// `tp` (owned by `owner`, as far as this broker knows) in the transaction, so its markers will reach it. Once per
  /// transaction and partition; the owner opens the transaction with the first batch it takes. Answers the owner the
  /// coordinator holds for `tp` (one it held already is kept), so that the caller can correct it with join_again()
  /// when the records land elsewhere. Errors as the coordinator gave them (producer_fenced, conflict for a
  /// transaction that is ending, unavailable, ...).
  /// `remembered` false: the coordinator is asked even if this broker joined `tp` at this epoch before.
  result<broker_id> join(const std::string& transactional_id, std::uint64_t producer_id, std::uint32_t epoch,
                         const topic_partition& tp, const broker_id& owner, bool remembered = true);

  /// A client's declaration of the partitions its transaction will write, before it writes them (Kafka's
  /// AddPartitionsToTxn): the coordinator records them all in one round trip, and a later produce to any of them
  /// through this broker needs none. Errors as join().
  status join_all(const std::string& transactional_id, std::uint64_t producer_id, std::uint32_t epoch,
                  const std::vector<std::pair<topic_partition, broker_id>>& partitions);

  /// Tells the coordinator that `tp`'s records were taken by `owner`, not the broker join() named.
  status join_again(const std::string& transactional_id, std::uint64_t producer_id, std::uint32_t epoch,
                    const topic_partition& tp, const broker_id& owner) {
    return add(transactional_id, producer_id, epoch, {{tp, owner}}, true).to_status();
  }

  /// Forgets that `tp` joined this transaction (its produce was refused: the next one asks the coordinator again).
  void forget_join(const std::string& transactional_id, std::uint64_t producer_id, std::uint32_t epoch,
                   const topic_partition& tp);

  /// Aborts expired transactions and delivers the markers and offsets of every transaction in prepare.
  void tick();

  broker_id coordinator_of(const std::string& transactional_id) const;
  const broker_id& self() const { return peers_.directory().self; }

 private:
  txn_service(txn_service_options o, storage::keyed_log& log, cluster::cluster_state st, transport::peer_client& peers);
  status load();
  /// The coordinator's add of partitions, each believed to be on the broker beside it; `replace_owners` when those
  /// are where records landed (see coordinator::add_partitions). Answers, and remembers, the owner the coordinator
  /// holds for each.
  result<std::map<topic_partition, broker_id>> add(const std::string& id, std::uint64_t producer_id,
                                                   std::uint32_t epoch,
                                                   const std::vector<std::pair<topic_partition, broker_id>>& partitions,
                                                   bool replace_owners = false);
  /// Whether `id`'s session keeps its epoch across its transactions (on its coordinator).
  bool keeps_epoch(const std::string& id);
  void remember_joins(const std::string& id, std::uint64_t producer_id, std::uint32_t epoch,
                      const std::map<topic_partition, broker_id>& partitions);
  /// Writes transaction `id` as it now is; `commit_point` forces a sync.
  status persist_locked(const std::string& id, bool commit_point = false);
  /// After a change of `id` (it was `before`, or absent): written when it differs; if the write fails, the change
  /// is undone, so that nothing is delivered that the log does not hold.
  status keep_locked(const std::string& id, const std::optional<transaction>& before, bool commit_point = false);
  void publish_locked();
  transport::response coordinator_route(const std::string& route, const transport::request& req);
  /// `route` with `body` sent to the coordinator of `id`.
  outcome<transport::response> forward(const std::string& id, const std::string& route, std::string body);
  result<producer_identity> init_here(const std::string& id, const init_options& options);
  result<std::map<topic_partition, broker_id>> add_here(const std::string& id, std::uint64_t producer_id,
                                                        std::uint32_t epoch, std::map<topic_partition, broker_id> owners,
                                                        bool replace_owners);
  status offsets_here(const offsets_call& c);
  result<end_answer> end_here(const end_call& c);
  result<std::string> describe_here(const std::string& id);
  /// `e`, counted when it fences a producer.
  error fenced(const error& e);
  transport::response owner_route(wire::owner_route route, const transport::request& req);
  /// Delivers the markers and offsets of `id`'s transaction in prepare (outside the lock; after a run of the same
  /// id in progress ends); true when complete.
  bool complete(const std::string& id);
  bool complete_now(const std::string& id);
  /// Whether `id`'s transaction is decided and its markers or offsets are still to be delivered. Under mu_.
  bool completing_locked(const std::string& id) const;
  /// Sends an owner route to `tp`'s owner, starting at `owner` and following 421 hints; the answer and who gave it.
  std::pair<transport::response, broker_id> to_owner(const topic_partition& tp, broker_id owner,
                                                     const wire::owner_call& call);
  void count_end_locked(const transaction& before, const transaction& after);

  txn_service_options opt_;
  storage::keyed_log& log_;
  cluster::cluster_state st_;
  transport::peer_client& peers_;
  std::mutex mu_;
  coordinator coord_;
  /// The keyed log's record of the coordinator epoch: a key no transactional id can be (ids have no control bytes).
  static constexpr const char* epoch_key = "\x01coordinator_epoch";
  std::uint32_t coordinator_epoch_ = 0;  ///< set by load(), then constant
  /// The transactional ids whose completion runs now: one run per id at a time (an end's, the ticker's, a waiting
  /// add's), runs of different ids in parallel.
  std::mutex completing_mu_;
  std::condition_variable completing_cv_;
  std::set<std::string> completing_ids_;
  /// Partitions this broker had the coordinator record in a transaction (id, producer, epoch, partition): a later
  /// produce to the same one in the same transaction goes straight to the owner; beside each, the owner the
  /// coordinator holds for it. Forgotten wholesale past max_joined entries.
  using joined_key = std::tuple<std::string, std::uint64_t, std::uint32_t, topic_partition>;
  static constexpr std::size_t max_joined = 100000;
  std::mutex joined_mu_;
  std::map<joined_key, broker_id> joined_;
  /// Sends the markers of one transaction to different owners at once (persistent: a thread per marker costs as
  /// much as the marker's round trip).
  std::unique_ptr<asio::thread_pool> marker_threads_;
};

}  // namespace moonmq::txn
