#include "moonmq/txn/txn_service.hpp"

#include <asio/post.hpp>
#include <asio/thread_pool.hpp>
#include <charconv>
#include <future>
#include <shared_mutex>

#include "json/object_reader.hpp"
#include "json/parse.hpp"
#include "json/writer.hpp"
#include "moonmq/core/fault_points.hpp"
#include "moonmq/core/topic_name.hpp"
#include "moonmq/core/utf8.hpp"
#include "moonmq/groups/group_service.hpp"
#include "moonmq/txn/txn_metrics.hpp"
#include "txn/txn_record.hpp"
#include "txn/txn_wire.hpp"

namespace moonmq::txn {

namespace {

using transport::error_response;
using transport::request;
using transport::response;

constexpr std::string_view prefix = "/cluster/txn/";
constexpr int max_hops = 3;
using wire::max_partitions;
constexpr std::size_t max_parallel_markers = 16;  ///< markers in flight at once for one transaction
constexpr std::size_t marker_thread_count = 4;     ///< threads that send markers, shared by all transactions

response json_ok(std::string body) { return {200, std::move(body), "application/json"}; }
response from_error(const error& e) { return error_response(transport::http_status_of(e.code), errc_name(e.code), e.message); }

}  // namespace

txn_service::txn_service(txn_service_options o, storage::keyed_log& log, cluster::cluster_state st,
                         transport::peer_client& peers)
    : opt_(std::move(o)),
      log_(log),
      st_(st),
      peers_(peers),
      marker_threads_(std::make_unique<asio::thread_pool>(marker_thread_count)) {}

txn_service::~txn_service() { marker_threads_->join(); }

result<std::unique_ptr<txn_service>> txn_service::open(txn_service_options options, storage::keyed_log& log,
                                                       cluster::cluster_state state, transport::peer_client& peers) {
  if (!options.clock || !options.fresh_producer_id)
    return error{errc::invalid_argument, "txn_service needs a clock and a producer id source"};
  std::unique_ptr<txn_service> s(new txn_service(std::move(options), log, state, peers));
  if (auto l = s->load(); !l) return l.err();
  return s;
}

status txn_service::load() {
  // This coordinator's epoch: one more than the last start's, synced before any marker carries it, so an owner can
  // tell a coordinator that came back from the process it replaced.
  std::uint64_t last = 0;
  for (const auto& [id, text] : log_.entries()) {
    if (id == epoch_key) {
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), last);
      if (ec != std::errc() || end != text.data() + text.size() || last >= UINT32_MAX)
        return {errc::corrupt, log_.name() + ": bad coordinator epoch '" + text + "'"};
      continue;
    }
    auto t = parse_transaction(text, log_.name() + ": transactional id " + id);
    if (!t) return t.err();
    if (t->id != id) return {errc::corrupt, log_.name() + ": the record of " + id + " names " + t->id};
    coord_.restore(std::move(*t));
  }
  coordinator_epoch_ = static_cast<std::uint32_t>(last + 1);
  if (auto s = log_.put(epoch_key, std::to_string(coordinator_epoch_), true); !s) return s;
  std::lock_guard lock(mu_);
  publish_locked();
  return {};
}

void txn_service::publish_locked() {
  std::size_t open = 0;
  for (const auto& [id, t] : coord_.all())
    if (t.phase != txn_phase::empty && t.phase != txn_phase::complete_commit && t.phase != txn_phase::complete_abort)
      ++open;
  st_.metrics.set(metrics::open, static_cast<double>(open));
}

status txn_service::persist_locked(const std::string& id, bool commit_point) {
  publish_locked();
  const transaction* t = coord_.find(id);
  if (!t) return {};
  return log_.put(id, render_transaction(*t), commit_point || opt_.sync_every_write);
}

status txn_service::keep_locked(const std::string& id, const std::optional<transaction>& before, bool commit_point) {
  const transaction* now = coord_.find(id);
  if (!now || (before && *before == *now)) return {};
  auto written = persist_locked(id, commit_point);
  if (!written) {
    if (before)
      coord_.restore(*before);
    else
      coord_.forget(id);
    publish_locked();
  }
  return written;
}

broker_id txn_service::coordinator_of(const std::string& id) const { return groups::coordinator_of(id, opt_.brokers); }

void txn_service::count_end_locked(const transaction& before, const transaction& after) {
  const bool was_done = before.phase == txn_phase::complete_commit || before.phase == txn_phase::complete_abort;
  if (was_done && before.epoch == after.epoch) return;
  if (after.phase == txn_phase::complete_commit) st_.metrics.add(metrics::committed, 1);
  if (after.phase == txn_phase::complete_abort)
    st_.metrics.add(metrics::aborted, {{"reason", after.reason.empty() ? "client"
                                                  : after.reason == "timeout" ? "timeout"
                                                                              : "fenced"}},
                    1);
}

outcome<response> txn_service::forward(const std::string& id, const std::string& route, std::string body) {
  const broker_id coordinator = coordinator_of(id);
  request r;
  r.path = std::string(prefix) + route;
  if (route == "describe") {
    r.method = "GET";
    r.params = {{"transactional_id", id}};
  } else {
    r.body = std::move(body);
  }
  auto answer = peers_.call_now(coordinator.value(), std::move(r));
  if (!answer || answer->status == 0)
    return refusal::coordinator_silent("the coordinator of transactional id " + id + ", " + coordinator.value() +
                                       ", did not answer" + (answer ? ": " + answer->body : std::string()));
  if (!answer->ok()) return error_of(*answer);
  return std::move(*answer);
}

namespace {

/// The coordinator's own answer (a refusal it gave is not its silence).
template <typename T>
outcome<T> answered(result<T> r) {
  if (!r) return r.err();
  return std::move(*r);
}

}  // namespace

outcome<producer_identity> txn_service::init(const std::string& id, const init_options& o) {
  if (coordinator_of(id) == self()) return answered(init_here(id, o));
  auto r = forward(id, "init", wire::write(wire::init_request{id, o}));
  if (!r) return r.refused();
  return answered(wire::read_identity(r->body));
}

outcome<end_answer> txn_service::end(const end_call& c) {
  if (coordinator_of(c.transactional_id) == self()) return answered(end_here(c));
  auto r = forward(c.transactional_id, "end", wire::write(c));
  if (!r) return r.refused();
  return answered(wire::read_end_answer(r->body));
}

outcome<done> txn_service::add_offsets(const offsets_call& c) {
  if (coordinator_of(c.transactional_id) == self()) {
    if (auto s = offsets_here(c); !s) return s.err();
    return done{};
  }
  auto r = forward(c.transactional_id, "offsets", wire::write(c));
  if (!r) return r.refused();
  return done{};
}

outcome<std::string> txn_service::describe(const std::string& id) {
  if (coordinator_of(id) == self()) return answered(describe_here(id));
  auto r = forward(id, "describe", "");
  if (!r) return r.refused();
  return std::move(r->body);
}

std::string txn_service::list_document(const transport::list_page& page) {
  const time_ms now = opt_.clock();
  std::lock_guard lock(mu_);
  const auto& all = coord_.all();
  auto it = page.after.empty() ? all.begin() : all.upper_bound(page.after);
  return json::object([&](json::writer& w) {
    json::put(w, "coordinator", self().value());
    json::put(w, "coordinator_epoch", coordinator_epoch_);
    w.Key("transactions");
    w.StartArray();
    for (std::size_t n = 0; it != all.end() && n < page.limit; ++it, ++n) {
      w.StartObject();
      write_txn(w, it->second, now);
      w.EndObject();
    }
    w.EndArray();
    json::put(w, "more", it != all.end());
  });
}

response txn_service::handle_cluster(const request& req) {
  const std::string route = req.path.substr(std::min(req.path.size(), prefix.size()));
  if (auto owner_side = wire::owner_route_named(route)) {
    if (req.method != "POST") return error_response(405, "method_not_allowed", req.path + " takes POST");
    return owner_route(*owner_side, req);
  }
  return coordinator_route(route, req);
}

response txn_service::coordinator_route(const std::string& route, const request& req) {
  if (route == "list" && req.method == "GET") {
    auto page = transport::list_page::from(req.params);
    if (!page) return error_response(400, "invalid_argument", page.message());
    return json_ok(list_document(*page));
  }
  if (route == "describe" && req.method == "GET") {
    auto id = req.params.find("transactional_id");
    if (id == req.params.end()) return error_response(400, "invalid_argument", "transactional_id is required");
    if (coordinator_of(id->second) != self())
      return error_response(421, "not_coordinator", "the coordinator of " + id->second + " is " +
                                                        coordinator_of(id->second).value());
    auto d = describe_here(id->second);
    if (!d) return from_error(d.err());
    return json_ok(std::move(*d));
  }
  if (req.method != "POST") return error_response(405, "method_not_allowed", req.path + " takes POST");
  auto refused = [](const error& e) { return error_response(400, "invalid_argument", e.message); };
  auto not_here = [this](const std::string& id) -> std::optional<response> {
    if (!valid_client_name(id)) return std::nullopt;  // the call's reader says what is wrong with it
    if (coordinator_of(id) == self()) return std::nullopt;
    return error_response(421, "not_coordinator", "the coordinator of " + id + " is " + coordinator_of(id).value());
  };
  // A call for an id coordinated elsewhere: 421 before anything else about it is judged.
  if (auto id = wire::peek_transactional_id(req.body))
    if (auto other = not_here(*id)) return *other;
  // An owner the sender left out is its own.
  auto owner_or_self = [this](const broker_id& b) { return b.value().empty() ? self() : b; };

  if (route == "init") {
    auto q = wire::read_init_request(req.body);
    if (!q) return refused(q.err());
    auto p = init_here(q->transactional_id, q->options);
    if (!p) return from_error(p.err());
    return json_ok(wire::identity_body(*p));
  }
  if (route == "add") {
    auto q = wire::read_add_request(req.body);
    if (!q) return refused(q.err());
    std::map<topic_partition, broker_id> owners;
    for (const auto& [tp, owner] : q->partitions) owners[tp] = owner_or_self(owner);
    auto held = add_here(q->transactional_id, q->producer_id, q->epoch, std::move(owners), q->replace_owners);
    if (!held) return from_error(held.err());
    return json_ok(wire::write(wire::add_answer{std::move(*held), keeps_epoch(q->transactional_id)}));
  }
  if (route == "offsets") {
    auto c = wire::read_offsets_call(req.body);
    if (!c) return refused(c.err());
    for (auto& [offset, owner] : c->offsets) owner = owner_or_self(owner);
    if (auto s = offsets_here(*c); !s) return from_error(s.err());
    return json_ok("{}");
  }
  if (route == "end") {
    auto c = wire::read_end_call(req.body);
    if (!c) return refused(c.err());
    auto a = end_here(*c);
    if (!a) return from_error(a.err());
    return json_ok(wire::end_answer_body(*a));
  }
  return error_response(404, "not_found", req.path + " is not a transaction route");
}

result<std::string> txn_service::describe_here(const std::string& id) {
  const time_ms now = opt_.clock();
  std::lock_guard lock(mu_);
  const transaction* t = coord_.find(id);
  if (!t) return error{errc::not_found, "no transactional id " + id};
  return json::object([&](json::writer& w) {
    write_txn(w, *t, now);
    json::put(w, "coordinator", self().value());
    json::put(w, "coordinator_epoch", coordinator_epoch_);
  });
}

result<producer_identity> txn_service::init_here(const std::string& id, const init_options& o) {
  for (int round = 0; round < 2; ++round) {
    {
      std::lock_guard lock(mu_);
      if (o.expected && round == 0) {
        // KIP-360: the producer names its session. Its own bump answered before (the answer lost, the request
        // sent again) is answered again; any other session than the current one is fenced.
        const transaction* t = coord_.find(id);
        const bool current = t && t->producer_id == o.expected->producer_id && t->epoch == o.expected->epoch;
        const bool retried = t && t->producer_id == o.expected->producer_id && t->epoch == o.expected->epoch + 1 &&
                             t->phase == txn_phase::empty && t->keeps_epoch == o.session.keeps_epoch;
        if (retried) return producer_identity{t->producer_id, t->epoch};
        if (!current)
          return fenced(error{errc::producer_fenced,
                              "producer " + std::to_string(o.expected->producer_id) + " epoch " +
                                  std::to_string(o.expected->epoch) + " is not the current session of " + id});
      }
      const std::optional<transaction> before =
          coord_.find(id) ? std::optional<transaction>(*coord_.find(id)) : std::nullopt;
      auto t = coord_.init(id, opt_.fresh_producer_id(), opt_.clock(), o.session);
      if (!t) {
        if (t.code() != errc::unavailable) return t.err();
      } else {
        // Always synced: an epoch handed to a session must never be handed again after a power loss.
        if (auto p = keep_locked(id, before, true); !p) return p.err();
        if (t->phase == txn_phase::empty) return producer_identity{t->producer_id, t->epoch};
        count_end_locked(before.value_or(transaction{}), *t);
      }
    }
    // An open transaction of the id was aborted (or one is completing): deliver its markers, then start again.
    if (!complete(id)) break;
  }
  return error{errc::unavailable,
               "the previous transaction of " + id + " is still being completed (a partition owner did not answer); retry"};
}

result<std::map<topic_partition, broker_id>> txn_service::add_here(const std::string& id, std::uint64_t producer_id,
                                                                   std::uint32_t epoch,
                                                                   std::map<topic_partition, broker_id> owners,
                                                                   bool replace_owners) {
  for (int round = 0;; ++round) {
    std::unique_lock lock(mu_);
    const std::optional<transaction> before =
        coord_.find(id) ? std::optional<transaction>(*coord_.find(id)) : std::nullopt;
    auto t = coord_.add_partitions(id, producer_id, epoch, owners, opt_.clock(), replace_owners);
    if (!t && t.code() == errc::unavailable && round == 0 && completing_locked(id)) {
      lock.unlock();
      complete(id);  // the previous transaction's markers first (or wait for the run delivering them)
      continue;
    }
    if (!t) return fenced(t.err());
    if (auto p = keep_locked(id, before); !p) return p.err();
    // The owner now held for each partition named: the one named before, unless this add replaced it.
    for (auto& [tp, owner] : owners)
      if (auto held = t->partitions.find(tp); held != t->partitions.end()) owner = held->second;
    return owners;
  }
}

status txn_service::offsets_here(const offsets_call& c) {
  std::map<topic_partition, broker_id> owners;
  std::vector<txn_offset> offsets;
  for (const auto& [o, owner] : c.offsets) {
    owners[o.partition] = owner;
    offsets.push_back({c.group, o.partition, o.offset});
  }
  for (int round = 0;; ++round) {
    std::unique_lock lock(mu_);
    const std::optional<transaction> before = coord_.find(c.transactional_id)
                                                  ? std::optional<transaction>(*coord_.find(c.transactional_id))
                                                  : std::nullopt;
    auto t = coord_.add_offsets(c.transactional_id, c.producer_id, c.epoch, offsets, owners, opt_.clock());
    if (!t && t.code() == errc::unavailable && round == 0 && completing_locked(c.transactional_id)) {
      lock.unlock();
      complete(c.transactional_id);
      continue;
    }
    if (!t) return fenced(t.err());
    return keep_locked(c.transactional_id, before);
  }
}

result<end_answer> txn_service::end_here(const end_call& c) {
  const std::string& id = c.transactional_id;
  for (int round = 0;; ++round) {
    std::unique_lock lock(mu_);
    const std::optional<transaction> before =
        coord_.find(id) ? std::optional<transaction>(*coord_.find(id)) : std::nullopt;
    auto t = coord_.end(id, c.producer_id, c.epoch, c.commit, opt_.clock());
    if (!t && t.code() == errc::unavailable && round == 0 && completing_locked(id)) {
      lock.unlock();
      complete(id);
      continue;
    }
    if (!t) return fenced(t.err());
    // The commit point, written here and synced below, outside the lock, so that the commits of many producers
    // share one fdatasync (the keyed log's group commit) and no other call waits behind it.
    if (auto p = keep_locked(id, before); !p) return p.err();
    break;
  }
  // Synced before the answer and before any marker (complete_now syncs too): lost to a power loss after a marker
  // went out, the coordinator would come back with the transaction open, time it out and abort what an owner
  // already committed.
  if (auto p = log_.sync(); !p) return p.err();
  // Decided, no marker sent: an error is answered as it is, and the ticker delivers what was decided.
  if (auto f = MOONMQ_FAULT("txn.after_prepare"); !f) return f.err();
  // The transaction is decided. Its markers go out now; the answer waits for them only when asked to (a
  // read_committed reader then sees the commit as soon as this returns), or when it commits group offsets (a
  // member that takes the partitions over must find them). Otherwise it says which are pending, and the
  // producer's next add, end or init waits for them.
  bool offsets = false;
  {
    std::lock_guard lock(mu_);
    const transaction* t = coord_.find(id);
    offsets = t && t->offsets_pending;
  }
  if (c.wait || offsets || !opt_.defer)
    complete(id);
  else
    opt_.defer([this, id] { complete(id); });
  std::lock_guard lock(mu_);
  const transaction* t = coord_.find(id);
  end_answer a{to_string(t->phase), t->epoch, {}};
  for (const auto& tp : t->markers_pending) a.pending.push_back(name_of(tp));
  return a;
}

error txn_service::fenced(const error& e) {
  if (e.code == errc::producer_fenced) st_.metrics.add(metrics::producer_fenced, 1);
  return e;
}

bool txn_service::completing_locked(const std::string& id) const {
  const transaction* t = coord_.find(id);
  return t && (t->phase == txn_phase::prepare_commit || t->phase == txn_phase::prepare_abort);
}

bool txn_service::complete(const std::string& id) {
  {
    std::unique_lock lock(completing_mu_);
    completing_cv_.wait(lock, [&] { return !completing_ids_.count(id); });
    completing_ids_.insert(id);
  }
  struct release {
    txn_service& s;
    const std::string& id;
    ~release() {
      {
        std::lock_guard lock(s.completing_mu_);
        s.completing_ids_.erase(id);
      }
      s.completing_cv_.notify_all();
    }
  } done{*this, id};
  return complete_now(id);
}

bool txn_service::complete_now(const std::string& id) {
  transaction t;
  {
    std::lock_guard lock(mu_);
    const transaction* found = coord_.find(id);
    if (!found) return false;
    t = *found;
  }
  if (t.phase != txn_phase::prepare_commit && t.phase != txn_phase::prepare_abort)
    return t.phase == txn_phase::complete_commit || t.phase == txn_phase::complete_abort;
  // No marker before the decision is durable: an end syncs its prepare record after it lets go of the lock, and
  // another caller (the ticker, the producer's next add) may get here first. Costs nothing once it is synced.
  if (!log_.sync()) return false;
  const bool commit = t.phase == txn_phase::prepare_commit;
  // Markers first: a committed transaction's offsets are written only once its records are readable. Markers to
  // different owners go out together (each on its own thread): the commit's latency is one round trip, not one per
  // partition.
  auto deliver = [&](const topic_partition& tp) {
    wire::owner_call marker{wire::owner_call::kind::markers, tp, t.producer_id, t.epoch, commit};
    marker.coordinator_epoch = coordinator_epoch_;
    marker.number = t.marker_number;
    auto [answer, at] = to_owner(tp, t.partitions.at(tp), marker);
    // Between markers: this one delivered (or not), the others maybe not yet. An error forgets this delivery.
    const bool counted = answer.status == 200 && MOONMQ_FAULT("txn.between_markers").ok();
    std::lock_guard lock(mu_);
    if (at != t.partitions.at(tp)) coord_.owner_moved(id, tp, at);
    if (counted) coord_.marker_written(id, t.epoch, tp);
  };
  std::vector<std::future<void>> remote;
  std::vector<topic_partition> local;
  for (const auto& tp : t.markers_pending) {
    if (t.partitions.at(tp) == self() || remote.size() >= max_parallel_markers) {
      local.push_back(tp);
      continue;
    }
    auto task = std::make_shared<std::packaged_task<void()>>([&deliver, tp] { deliver(tp); });
    remote.push_back(task->get_future());
    asio::post(*marker_threads_, [task] { (*task)(); });
  }
  // The pool's tasks refer to `deliver` and `t` on this stack: wait for every one of them, whatever happens here.
  struct join_all {
    std::vector<std::future<void>>& futures;
    ~join_all() {
      for (auto& f : futures)
        if (f.valid()) f.wait();
    }
  } joined{remote};
  for (const auto& tp : local) deliver(tp);
  for (auto& f : remote) f.get();
  bool markers_done = false;
  {
    std::lock_guard lock(mu_);
    const transaction* now = coord_.find(id);
    markers_done = now && now->markers_pending.empty();
  }
  if (markers_done && commit && t.offsets_pending) {
    bool all = true;
    for (const auto& o : t.offsets) {
      wire::owner_call commit_offset{wire::owner_call::kind::commit_offsets, o.partition};
      commit_offset.group = o.group;
      commit_offset.offset = o.offset;
      auto owner = t.offset_owners.count(o.partition) ? t.offset_owners.at(o.partition) : self();
      auto [answer, at] = to_owner(o.partition, owner, commit_offset);
      if (at != owner) {
        std::lock_guard lock(mu_);
        coord_.owner_moved(id, o.partition, at);
      }
      // A partition that no longer exists takes no offset: nothing is left to deliver there.
      all = all && (answer.status == 200 || answer.status == 404);
    }
    if (all) {
      std::lock_guard lock(mu_);
      coord_.offsets_written(id, t.epoch);
    }
  }
  if (auto f = MOONMQ_FAULT("txn.before_complete"); !f) return false;  // the ticker tries again
  std::lock_guard lock(mu_);
  const transaction* after = coord_.find(id);
  if (!after) return false;
  count_end_locked(t, *after);
  (void)persist_locked(id);  // a failed write only means the next tick delivers (idempotently) again
  return after->phase == txn_phase::complete_commit || after->phase == txn_phase::complete_abort;
}

std::pair<response, broker_id> txn_service::to_owner(const topic_partition& tp, broker_id owner,
                                                     const wire::owner_call& call) {
  request r;
  r.path = std::string(prefix) + wire::route_of(call.route);
  r.body = wire::write(call);
  response answer = error_response(503, "unavailable", "no owner of " + name_of(tp) + " answered");
  for (int hop = 0; hop <= max_hops; ++hop) {
    if (owner == self()) {
      answer = owner_route(call.route, r);
    } else {
      auto a = peers_.call_now(owner.value(), r);
      answer = a ? std::move(*a) : error_response(0, "unavailable", owner.value() + " cannot be reached from here");
    }
    if (answer.status != 421) break;
    auto next = wire::read_not_owner(answer.body);
    if (!next || *next == owner) break;
    owner = *next;
  }
  return {std::move(answer), owner};
}

result<broker_id> txn_service::join(const std::string& id, std::uint64_t producer_id, std::uint32_t epoch,
                                    const topic_partition& tp, const broker_id& owner, bool remembered) {
  // Once per transaction (an epoch is one transaction) and partition: the owner opens the transaction with the
  // first batch it takes, and fences the epoch when the marker closes it, so a later batch needs no round trip.
  if (remembered) {
    std::lock_guard lock(joined_mu_);
    if (auto it = joined_.find(joined_key{id, producer_id, epoch, tp}); it != joined_.end()) return it->second;
  }
  auto held = add(id, producer_id, epoch, {{tp, owner}});
  if (!held) return held.err();
  return held->at(tp);
}

status txn_service::join_all(const std::string& id, std::uint64_t producer_id, std::uint32_t epoch,
                             const std::vector<std::pair<topic_partition, broker_id>>& partitions) {
  if (partitions.empty()) return {};
  if (partitions.size() > max_partitions)
    return {errc::invalid_argument, "partitions: at most " + std::to_string(max_partitions) + " at once"};
  return add(id, producer_id, epoch, partitions).to_status();
}

bool txn_service::keeps_epoch(const std::string& id) {
  std::lock_guard lock(mu_);
  const transaction* t = coord_.find(id);
  return t && t->keeps_epoch;
}

void txn_service::remember_joins(const std::string& id, std::uint64_t producer_id, std::uint32_t epoch,
                                 const std::map<topic_partition, broker_id>& partitions) {
  std::lock_guard lock(joined_mu_);
  if (joined_.size() + partitions.size() > max_joined) joined_.clear();
  for (const auto& [tp, owner] : partitions) joined_[joined_key{id, producer_id, epoch, tp}] = owner;
}

result<std::map<topic_partition, broker_id>> txn_service::add(
    const std::string& id, std::uint64_t producer_id, std::uint32_t epoch,
    const std::vector<std::pair<topic_partition, broker_id>>& partitions, bool replace_owners) {
  std::map<topic_partition, broker_id> held(partitions.begin(), partitions.end());
  bool keeps = false;
  if (coordinator_of(id) == self()) {
    auto added = add_here(id, producer_id, epoch, held, replace_owners);
    if (!added) return added.err();
    held = std::move(*added);
    keeps = keeps_epoch(id);
  } else {
    auto added = forward(id, "add", wire::write(wire::add_request{id, producer_id, epoch, partitions, replace_owners}));
    if (!added) return added.err();
    // The owners the coordinator holds (a coordinator that predates this answer says nothing, and one that says
    // something unreadable is not believed: what was named stands).
    if (auto a = wire::read_add_answer(added->body)) {
      for (const auto& [tp, owner] : a->partitions)
        if (auto it = held.find(tp); it != held.end()) it->second = owner;
      keeps = a->keeps_epoch;
    }
  }
  // A join is remembered for the epoch's one transaction; a session that keeps its epoch has many, so a join of
  // one proves nothing about the next.
  if (!keeps) remember_joins(id, producer_id, epoch, held);
  return held;
}

void txn_service::forget_join(const std::string& id, std::uint64_t producer_id, std::uint32_t epoch,
                              const topic_partition& tp) {
  std::lock_guard lock(joined_mu_);
  joined_.erase(joined_key{id, producer_id, epoch, tp});
}

response txn_service::owner_route(wire::owner_route route, const request& req) {
  auto call = wire::read_owner_call(route, req.body);
  if (!call) return error_response(400, "invalid_argument", call.message());
  const wire::owner_call& c = *call;
  const topic_partition& tp = c.partition;
  std::shared_lock gate(st_.gates.gate(tp));
  if (!cluster::serves(st_.ownership, tp, self())) {
    auto e = cluster::entry_as_seen_by(st_.ownership, tp, self());
    if (e.owner == self()) return error_response(503, "handover", name_of(tp) + " is being handed over here; retry");
    return {421, wire::write_not_owner(e.owner), "application/json"};
  }
  auto count = st_.store.partition_count(tp.topic);
  if (!count || tp.partition >= *count) return error_response(404, "not_found", "no partition " + name_of(tp) + " here");
  status s;
  if (route == wire::owner_call::kind::enroll)
    s = st_.producers.enroll(tp, c.producer_id, c.epoch);
  else if (route == wire::owner_call::kind::markers) {
    s = st_.producers.end_transaction(tp, c.producer_id, c.epoch, c.commit, c.coordinator_epoch, c.number);
    if (s) s = MOONMQ_FAULT("txn.after_marker_write");  // written on the owner, the answer lost
  }
  else if (auto raised = st_.offsets.commit_if_higher(c.group, tp, c.offset); !raised)
    s = raised.err();  // only forward: a re-sent transactional offset must not rewind what the group did since
  if (!s) {
    if (s.code() == errc::producer_fenced) st_.metrics.add(metrics::producer_fenced, 1);
    return from_error(s.err());
  }
  return json_ok("{}");
}

void txn_service::tick() {
  std::vector<std::string> prepared;
  {
    std::lock_guard lock(mu_);
    std::map<std::string, transaction> before;
    for (const auto& [id, t] : coord_.all())
      if (t.phase == txn_phase::ongoing) before.emplace(id, t);
    auto expired = coord_.expire(opt_.clock(), opt_.timeout_ms);
    st_.metrics.add(metrics::timeouts, static_cast<double>(expired.size()));
    // The abort decision: undone when it cannot be written (the next tick tries again).
    for (const auto& id : expired) (void)keep_locked(id, before.at(id), true);
    for (const auto& t : coord_.unfinished()) prepared.push_back(t.id);
  }
  for (const auto& id : prepared) complete(id);
  (void)log_.sync();  // what was written without a sync since the last tick
}

}  // namespace moonmq::txn
