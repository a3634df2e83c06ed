// The topic admin front end: a topic is created, grown, deleted or adopted for the whole cluster, whichever protocol
// asked (moonmqd's HTTP API, the Kafka listener's CreateTopics / CreatePartitions / DeleteTopics) and wherever it runs
// (moonmqd, the simulation). The decision itself is cluster::topic_directory's; this is what comes before it.
//
// - **Checks.** A name as topic_name.hpp allows, a count from 1 to the hard limit, brokers the cluster knows.
// - **Who decides.** With Raft, the broker that received the change, through the log. Without Raft, the topic's
//   coordinator: a change received elsewhere is forwarded to it, and a coordinator that does not answer means no
//   change to that topic now (errc::unavailable).
// - **Before a create, every broker is asked** whether it holds a log of the name: one that does, or one that does
//   not answer (it might), refuses the create. Before a create or a grow, each broker says how many partitions it
//   serves and whether its limits leave room.
// - **Placement.** The new partitions go to the brokers that answered (or those named), each to the one serving the
//   fewest, weighted by the balancer's stated capacities; a local placement puts them all on the receiving broker; an
//   exact one puts each on the broker named for it, in order (each must answer and have room).
// - **After the decision** (without Raft), the coordinator tells every broker; the ones that missed it learn it from
//   catch_up() (moonmqd runs it at start and every 5 s).
// - **Adoption** of a topic made before topics were cluster metadata: each partition's log is, of the brokers serving
//   it, the one whose own ownership entry is newest, then the largest, then the first by id; every holder claims its
//   logs for the incarnation about to be made before the create is decided with those owners.
// A topic this broker has in its store but the catalog does not list (made before topics were cluster metadata) is
// grown on this broker alone, as it was made.
//
// The other brokers are reached through `topic_peers`: over the /cluster/admin/topics/* routes in moonmqd
// (frontend/http_topic_peers.hpp), directly in the simulation.
// Thread safety: every method may be called concurrently; decisions are serialized by the directory.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "moonmq/autobalancer/config.hpp"
#include "moonmq/cluster/local_loads.hpp"
#include "moonmq/cluster/ownership_table.hpp"
#include "moonmq/cluster/topic_catalog.hpp"
#include "moonmq/frontend/outcome.hpp"
#include "moonmq/storage/partition_store.hpp"

namespace moonmq::cluster {
class topic_directory;
}

namespace moonmq::frontend {

enum class topic_admin_op : std::uint8_t { create, grow, remove, adopt };

/// "create", "grow", "delete", "adopt": the names the coordinator route carries.
const char* topic_admin_op_name(topic_admin_op op) noexcept;
std::optional<topic_admin_op> topic_admin_op_of(std::string_view name) noexcept;

struct topic_admin_request {
  topic_admin_op op = topic_admin_op::create;
  std::string name;
  std::uint32_t partitions = 1;  ///< create: the count; grow: the new count (adopt: found by submit)
  bool local = false;            ///< create: every partition on the receiving broker
  std::vector<std::string> brokers;  ///< where new partitions may go (empty: every broker); adopt: one per partition
  /// create, grow: `brokers` names each new partition's owner, in order (Kafka's explicit replica assignments)
  bool exact = false;
};

struct topic_decision {
  cluster::topic_record record;
  /// false: a topic the catalog does not list, grown on this broker alone (record.owners is this broker throughout).
  bool in_catalog = true;
  /// Without Raft: the brokers the coordinator could not tell (they learn it at their next catch-up).
  std::vector<std::string> not_yet_told;
};

/// One topic as a list shows it: the catalog's, or one this broker has that the catalog does not list.
struct topic_listing {
  cluster::topic_record record;
  bool in_catalog = true;
};

/// What one broker says of a topic name about to be made or grown.
struct topic_holding {
  broker_id broker;
  bool answered = true;
  std::string silence;      ///< !answered: why
  std::size_t served = 0;   ///< partitions it serves now
  bool holds = false;       ///< it has a log of the name
  status room;              ///< whether its limits leave room for the topic at the count asked (when one was)
};

/// An adoption's claim of one holder's logs (topic_directory::claim).
struct topic_claim {
  std::string name;
  std::uint64_t created = 1;
  std::int32_t partitions = 0;
  std::set<std::int32_t> disowned;  ///< the holder's logs that are not the partition's: strays from now on
};

/// The partitions one peer serves, as it reported them (adoption reads their sizes).
struct peer_serving {
  broker_id broker;
  bool answered = false;
  std::string silence;  ///< !answered: why
  std::vector<cluster::partition_load> partitions;
};

/// How the topic front end reaches the other brokers.
class topic_peers {
 public:
  virtual ~topic_peers() = default;
  /// Every peer's holding of `name` (room asked for `partitions`, when not 0).
  virtual std::vector<topic_holding> holdings(const std::string& name, std::uint32_t partitions) = 0;
  /// `r` decided on `coordinator`; errc::unavailable when it does not answer.
  virtual outcome<topic_decision> forward(const broker_id& coordinator, const topic_admin_request& r) = 0;
  /// A decided record told to every peer; returns the peers that did not take it.
  virtual std::vector<std::string> tell(const cluster::topic_record& r) = 0;
  /// The catalogs of the peers that answered.
  virtual std::vector<std::pair<broker_id, cluster::topic_catalog>> catalogs() = 0;
  /// What every peer serves.
  virtual std::vector<peer_serving> serving() = 0;
  /// `peer`'s own ownership entry of `tp` (nullopt: it has none); an error when it does not answer.
  virtual result<std::optional<cluster::ownership_entry>> own_entry(const broker_id& peer, const topic_partition& tp) = 0;
  /// `c` claimed on `peer`.
  virtual status claim(const broker_id& peer, const topic_claim& c) = 0;
};

struct topic_admin_parts {
  broker_id self;
  std::vector<broker_id> peers;  ///< the other brokers of the cluster
  cluster::topic_directory* topics = nullptr;
  storage::partition_store* store = nullptr;
  topic_peers* link = nullptr;
  /// The partitions this broker serves now (placement counts them; adoption reads their sizes).
  std::function<std::vector<cluster::partition_load>()> local;
  /// This broker's own ownership entry of a partition.
  std::function<std::optional<cluster::ownership_entry>(const topic_partition&)> own_entry;
  autobalancer::autobalance_config balance;  ///< stated capacities weigh placement
};

class topic_admin {
 public:
  explicit topic_admin(topic_admin_parts parts) : p_(std::move(parts)) {}

  /// A client's change, received here. Refusals: invalid_argument (checks), already_exists (a create of a name some
  /// broker holds), not_found, conflict (adopt of a listed topic), unavailable (a broker that must answer did not),
  /// resource_exhausted (a broker's limits).
  outcome<topic_decision> submit(topic_admin_request r);

  /// A change forwarded by a peer, decided here when this broker is the topic's coordinator (else errc::not_owner,
  /// by_coordinator, naming it).
  outcome<topic_decision> decide(const topic_admin_request& r);

  /// The topics a list shows: the catalog's live ones, then this broker's own that the catalog does not list.
  std::vector<topic_listing> list() const;

  /// This broker's answer to a peer's holdings() (room checked when `partitions` is not 0).
  topic_holding holding(const std::string& name, std::uint32_t partitions) const;
  /// A peer's claim() (an adoption), checked and applied here.
  status claim(const topic_claim& c);
  /// A record a coordinator told this broker.
  status learn(const cluster::topic_record& r);
  /// This broker's catalog (what a peer's catch_up() reads).
  cluster::topic_catalog catalog() const;

  /// Without Raft: learns from every peer the records of the topics that peer coordinates.
  void catch_up();

 private:
  outcome<topic_decision> decide_here(const topic_admin_request& r);
  /// Adoption's survey: fills r.partitions and r.brokers with each partition's log; then claims them everywhere.
  status adopt_survey(topic_admin_request& r);
  bool known(const std::string& broker) const;

  topic_admin_parts p_;
};

}  // namespace moonmq::frontend
