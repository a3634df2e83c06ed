#include "moonmq/frontend/topic_admin.hpp"

#include <algorithm>
#include <map>

#include "moonmq/cluster/topic_directory.hpp"
#include "moonmq/core/topic_name.hpp"

namespace moonmq::frontend {

namespace {

std::string owners_text(const std::vector<broker_id>& owners) {
  std::vector<std::string> ids;
  for (const auto& o : owners) ids.push_back(o.value());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ", ") + id;
  return out;
}

status check_count(const char* what, std::uint32_t n) {
  if (n < 1 || n > static_cast<std::uint32_t>(storage::max_partitions_per_topic_hard))
    return error{errc::invalid_argument,
                 std::string(what) + ": must be from 1 to " + std::to_string(storage::max_partitions_per_topic_hard)};
  return {};
}

error silent_holders(const std::string& name, const std::vector<std::string>& silent) {
  std::string names;
  for (const auto& b : silent) names += (names.empty() ? "" : ", ") + b;
  return {errc::unavailable,
          names + " might hold a topic named '" + name + "' and did not answer: try again when every broker answers"};
}

}  // namespace

const char* topic_admin_op_name(topic_admin_op op) noexcept {
  switch (op) {
    case topic_admin_op::create:
      return "create";
    case topic_admin_op::grow:
      return "grow";
    case topic_admin_op::remove:
      return "delete";
    case topic_admin_op::adopt:
      return "adopt";
  }
  return "?";
}

std::optional<topic_admin_op> topic_admin_op_of(std::string_view name) noexcept {
  for (auto op : {topic_admin_op::create, topic_admin_op::grow, topic_admin_op::remove, topic_admin_op::adopt})
    if (name == topic_admin_op_name(op)) return op;
  return std::nullopt;
}

bool topic_admin::known(const std::string& broker) const {
  return broker == p_.self.value() ||
         std::any_of(p_.peers.begin(), p_.peers.end(), [&](const broker_id& b) { return b.value() == broker; });
}

outcome<topic_decision> topic_admin::submit(topic_admin_request r) {
  if (auto v = validate_topic_name(r.name); !v) return error{errc::invalid_argument, "name: " + v.message()};
  switch (r.op) {
    case topic_admin_op::create:
      if (auto s = check_count("partitions", r.partitions); !s) return s.err();
      if (r.local && !r.brokers.empty())
        return error{errc::invalid_argument,
                     "brokers: a local placement puts every partition on the receiving broker: name no brokers"};
      if (r.exact && r.brokers.size() != r.partitions)
        return error{errc::invalid_argument, "brokers: an exact placement names one broker per partition (" +
                                                 std::to_string(r.partitions) + "), not " +
                                                 std::to_string(r.brokers.size())};
      for (const auto& b : r.brokers)
        if (!known(b)) return error{errc::invalid_argument, "brokers: unknown broker '" + b + "'"};
      if (r.local) r.brokers = {p_.self.value()};
      break;
    case topic_admin_op::grow:
      if (auto s = check_count("count", r.partitions); !s) return s.err();
      for (const auto& b : r.brokers)
        if (!known(b)) return error{errc::invalid_argument, "brokers: unknown broker '" + b + "'"};
      if (!p_.topics->find(r.name) && p_.store->partition_count(r.name)) {
        if (r.exact) return error{errc::invalid_argument, "a topic outside the catalog grows on this broker alone"};
        auto n = p_.topics->grow_unlisted(r.name, static_cast<std::int32_t>(r.partitions));
        if (!n) return n.err();
        topic_decision d;
        d.record.name = r.name;
        d.record.owners.assign(static_cast<std::size_t>(*n), p_.self);
        d.in_catalog = false;
        return d;
      }
      break;
    case topic_admin_op::remove:
      break;
    case topic_admin_op::adopt:
      if (p_.topics->find(r.name))
        return error{errc::conflict, "topic '" + r.name + "' is in the cluster's catalog already"};
      if (auto s = adopt_survey(r); !s) return s.err();
      break;
  }
  if (p_.topics->replicated()) return decide_here(r);
  const broker_id coordinator = p_.topics->coordinator_of(r.name);
  if (coordinator == p_.self) return decide_here(r);
  return p_.link->forward(coordinator, r);
}

outcome<topic_decision> topic_admin::decide(const topic_admin_request& r) {
  if (auto v = validate_topic_name(r.name); !v) return error{errc::invalid_argument, "name: " + v.message()};
  if (r.partitions > static_cast<std::uint32_t>(storage::max_partitions_per_topic_hard))
    return error{errc::invalid_argument,
                 "partitions: must be at most " + std::to_string(storage::max_partitions_per_topic_hard)};
  const broker_id coordinator = p_.topics->coordinator_of(r.name);
  if (p_.topics->replicated() || coordinator != p_.self) {
    refusal no{{errc::not_owner, p_.self.value() + " does not decide topic '" + r.name + "' (its coordinator is " +
                                     coordinator.value() + ")"}, {}, {}};
    no.owner = coordinator;
    no.by_coordinator = true;
    return no;
  }
  return decide_here(r);
}

status topic_admin::adopt_survey(topic_admin_request& r) {
  const std::string& name = r.name;
  const broker_id& self = p_.self;
  // Who serves each partition now; a broker that does not answer might, and nothing is decided without it.
  std::map<std::int32_t, std::vector<std::pair<broker_id, std::uint64_t>>> servers;  // partition -> broker, size
  std::vector<broker_id> holders;
  auto note_serving = [&](const broker_id& b, const std::vector<cluster::partition_load>& partitions) {
    bool holds = false;
    for (const auto& p : partitions)
      if (p.partition.topic == name) {
        servers[p.partition.partition].emplace_back(b, p.size_bytes);
        holds = true;
      }
    if (holds) holders.push_back(b);
  };
  note_serving(self, p_.local());
  for (const auto& s : p_.link->serving()) {
    if (!s.answered)
      return error{errc::unavailable, s.broker.value() + " did not answer (" + s.silence + "): it may hold a log of '" +
                                          name + "'; nothing changed"};
    note_serving(s.broker, s.partitions);
  }
  // Brokers that hold logs of it without serving any (a move's leftover or half-made copy) claim theirs too: once the
  // catalog lists the topic, an unclaimed log of it would be a stray.
  auto add_holder = [&](const broker_id& b) {
    if (std::find(holders.begin(), holders.end(), b) == holders.end()) holders.push_back(b);
  };
  for (const auto& h : p_.link->holdings(name, 0)) {
    if (!h.answered)
      return error{errc::unavailable,
                   h.broker.value() + " did not say whether it holds '" + name + "' (" + h.silence + "); nothing changed"};
    if (h.holds) add_holder(h.broker);
  }
  if (p_.store->partition_count(name)) add_holder(self);
  if (servers.empty()) return error{errc::not_found, "no broker serves a partition of '" + name + "'"};
  const std::int32_t count = servers.rbegin()->first + 1;
  // Each partition's log: of the brokers serving it, the one whose own entry for it is newest (a move confirmed there:
  // the others route to it), then the largest, then the first by id. The others' logs of it become strays.
  std::vector<broker_id> owners;
  for (std::int32_t p = 0; p < count; ++p) {
    auto it = servers.find(p);
    if (it == servers.end())
      return error{errc::conflict,
                   name + "-" + std::to_string(p) + " is served by no broker: adopt it once every partition is"};
    std::optional<broker_id> best;
    std::uint64_t best_version = 0, best_size = 0;
    for (const auto& [b, size] : it->second) {
      std::uint64_t version = 0;  // of b's own entry for the partition, when it names b
      std::optional<cluster::ownership_entry> entry;
      if (b == self) {
        entry = p_.own_entry({name, p});
      } else {
        auto e = p_.link->own_entry(b, {name, p});
        if (!e)
          return error{errc::unavailable, b.value() + " did not say who owns " + name + "-" + std::to_string(p) + " (" +
                                              e.message() + "); nothing changed"};
        entry = *e;
      }
      if (entry && entry->owner == b) version = entry->version;
      if (!best || version > best_version || (version == best_version && size > best_size) ||
          (version == best_version && size == best_size && b.value() < best->value())) {
        best = b;
        best_version = version;
        best_size = size;
      }
    }
    owners.push_back(*best);
  }
  // First every holder stamps its logs as the incarnation about to be made (version 1) and learns which of them are
  // not the partition's; then the create is decided like any other, with these owners.
  for (const auto& b : holders) {
    topic_claim c{name, 1, count, {}};
    for (std::int32_t p = 0; p < count; ++p) {
      const auto& list = servers[p];
      if (owners[static_cast<std::size_t>(p)] != b &&
          std::any_of(list.begin(), list.end(), [&](const auto& e) { return e.first == b; }))
        c.disowned.insert(p);
    }
    status s = b == self ? claim(c) : p_.link->claim(b, c);
    if (!s)
      return error{s.code(), b.value() + " did not claim its logs of '" + name + "': " + s.message() +
                                 "; the topic was not adopted (brokers that claimed theirs keep the claim until the "
                                 "next adoption of the name)"};
  }
  r.partitions = static_cast<std::uint32_t>(count);
  r.brokers.clear();
  for (const auto& o : owners) r.brokers.push_back(o.value());
  return {};
}

outcome<topic_decision> topic_admin::decide_here(const topic_admin_request& r) {
  const auto existing = p_.topics->find(r.name);
  const bool live = existing && !existing->deleted;
  cluster::topic_change change;
  change.name = r.name;
  change.expect = existing ? existing->version : 0;
  switch (r.op) {
    case topic_admin_op::adopt:
      // A topic made before topics were cluster metadata, its logs claimed on every broker holding them.
      if (existing) return error{errc::conflict, "topic '" + r.name + "' is in the cluster's catalog already"};
      if (r.brokers.size() != r.partitions || r.brokers.empty())
        return error{errc::invalid_argument, "adopt: one owner per partition"};
      change.op = cluster::topic_op::create;
      for (const auto& b : r.brokers) change.added.emplace_back(b);
      break;
    case topic_admin_op::create:
      if (live)
        return error{errc::already_exists, "topic '" + r.name + "' already exists (its partitions were created on " +
                                               owners_text(existing->owners) + ")"};
      change.op = cluster::topic_op::create;
      break;
    case topic_admin_op::grow:
      if (!live) return error{errc::not_found, "unknown topic '" + r.name + "'"};
      if (static_cast<std::int32_t>(r.partitions) <= existing->partitions())  // a topic never shrinks
        return topic_decision{*existing, true, {}};
      change.op = cluster::topic_op::grow;
      break;
    case topic_admin_op::remove:
      if (!live) return error{errc::not_found, "unknown topic '" + r.name + "'"};
      change.op = cluster::topic_op::remove;
      break;
  }

  if (r.op == topic_admin_op::create || r.op == topic_admin_op::grow) {
    const bool create = r.op == topic_admin_op::create;
    std::vector<topic_holding> answers{holding(r.name, r.partitions)};
    if (create && answers[0].holds)
      return error{errc::already_exists,
                   "topic '" + r.name + "' already exists: " + p_.self.value() + " holds a log of that name"};
    std::vector<std::string> silent;
    for (auto& h : p_.link->holdings(r.name, r.partitions)) {
      if (!h.answered) {
        silent.push_back(h.broker.value());
        continue;
      }
      if (create && h.holds)
        return error{errc::already_exists,
                     "topic '" + r.name + "' already exists: " + h.broker.value() + " holds a log of that name"};
      answers.push_back(std::move(h));
    }
    // A create waits for every broker: the one that did not answer might hold the name.
    if (create && !silent.empty()) return silent_holders(r.name, silent);
    // A grow makes the new partitions' logs on every broker that holds the topic: each must have room for them.
    for (const auto& a : answers)
      if (a.holds && !a.room) return a.room.err();
    std::vector<std::pair<broker_id, std::size_t>> candidates;
    std::optional<error> full;  // why a broker that could have taken partitions may not
    auto consider = [&](const topic_holding& a) {
      if (a.room)
        candidates.emplace_back(a.broker, a.served);
      else if (!full)
        full = a.room.err();
    };
    if (r.brokers.empty()) {
      for (const auto& a : answers) consider(a);
    } else {
      for (const auto& b : r.brokers) {
        auto it = std::find_if(answers.begin(), answers.end(), [&](const topic_holding& a) { return a.broker.value() == b; });
        if (it == answers.end())
          return error{errc::unavailable, b + " was named for topic '" + r.name + "' but did not answer"};
        if (!it->room) return it->room.err();
        consider(*it);
      }
    }
    if (candidates.empty())
      return full ? *full : error{errc::unavailable, "no broker can take topic '" + r.name + "'"};
    const std::size_t adding =
        create ? r.partitions : r.partitions - static_cast<std::size_t>(existing->partitions());
    if (r.exact) {
      // Each new partition on the broker named for it (all of them answered and have room: checked above).
      if (r.brokers.size() != adding)
        return error{errc::invalid_argument, "brokers: an exact placement names one broker per new partition (" +
                                                 std::to_string(adding) + "), not " + std::to_string(r.brokers.size())};
      for (const auto& b : r.brokers) change.added.emplace_back(b);
    } else {
      std::vector<std::string> ids;
      for (const auto& [b, n] : candidates) ids.push_back(b.value());
      change.added =
          cluster::spread_partitions(candidates, adding, autobalancer::relative_capacities(p_.balance, ids));
    }
  }

  auto decided = p_.topics->decide(change);
  if (!decided) return decided.err();
  topic_decision out{*decided, true, {}};
  // Without Raft, decided and durable on the coordinator; the brokers not told learn it at their next catch-up.
  if (!p_.topics->replicated()) out.not_yet_told = p_.link->tell(*decided);
  return out;
}

std::vector<topic_listing> topic_admin::list() const {
  std::vector<topic_listing> out;
  for (auto& t : p_.topics->live()) out.push_back({std::move(t), true});
  for (const auto& name : p_.store->topics()) {
    if (p_.topics->find(name)) continue;
    auto n = p_.store->partition_count(name);
    topic_listing l{{}, false};
    l.record.name = name;
    l.record.owners.assign(n ? static_cast<std::size_t>(*n) : 0, p_.self);
    out.push_back(std::move(l));
  }
  return out;
}

topic_holding topic_admin::holding(const std::string& name, std::uint32_t partitions) const {
  topic_holding h;
  h.broker = p_.self;
  h.served = p_.local().size();
  h.holds = p_.store->partition_count(name).ok();
  if (partitions > 0) {
    h.room = p_.store->room_for(name, static_cast<std::int32_t>(partitions));
    if (!h.room) h.room = error{h.room.code(), p_.self.value() + ": " + h.room.message()};
  }
  return h;
}

status topic_admin::claim(const topic_claim& c) {
  if (auto v = validate_topic_name(c.name); !v) return error{errc::invalid_argument, "name: " + v.message()};
  if (auto s = check_count("partitions", static_cast<std::uint32_t>(std::max(c.partitions, 0))); !s) return s;
  if (c.created < 1) return error{errc::invalid_argument, "created: must be at least 1"};
  if (!c.disowned.empty() && (*c.disowned.begin() < 0 || *c.disowned.rbegin() >= c.partitions))
    return error{errc::invalid_argument, "disowned: names a partition outside the topic's count"};
  return p_.topics->claim(c.name, c.created, c.partitions, c.disowned);
}

status topic_admin::learn(const cluster::topic_record& r) { return p_.topics->learn(r); }

cluster::topic_catalog topic_admin::catalog() const { return p_.topics->catalog(); }

void topic_admin::catch_up() {
  if (p_.topics->replicated()) return;
  for (const auto& [peer, catalog] : p_.link->catalogs())
    for (const auto& t : catalog.records())
      if (p_.topics->coordinator_of(t.name) == peer) (void)p_.topics->learn(t);
}

}  // namespace moonmq::frontend
