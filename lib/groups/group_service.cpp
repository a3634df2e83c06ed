#include "moonmq/groups/group_service.hpp"

#include <algorithm>
#include <random>

#include "json/state_document.hpp"
#include "json/writer.hpp"
#include "moonmq/core/fnv1a.hpp"
#include "moonmq/groups/group_metrics.hpp"
#include "moonmq/core/fault_points.hpp"

namespace moonmq::groups {

namespace {

/// A fresh member id: 128 bits from the operating system's random source, in hex (not guessable).
std::string new_member_id() {
  static std::mutex mu;
  static std::random_device source;
  std::lock_guard lock(mu);
  char text[33];
  for (int i = 0; i < 4; ++i) std::snprintf(text + 8 * i, 9, "%08x", static_cast<unsigned>(source()));
  return text;
}

void write_partition(json::writer& w, const topic_partition& tp) {
  json::put(w, "topic", tp.topic);
  json::put(w, "partition", tp.partition);
}

void write_group(json::writer& w, const group& g) {
  const auto& s = g.state();
  w.StartObject();
  json::put(w, "id", s.id);
  json::put(w, "epoch", s.epoch);
  w.Key("members");
  w.StartArray();
  for (const auto& [mid, m] : s.members) {
    w.StartObject();
    json::put(w, "id", m.id);
    json::put(w, "broker", m.broker.value());
    json::put(w, "epoch", m.epoch);
    json::put(w, "previous_epoch", m.previous_epoch);
    if (m.classic) {
      json::put(w, "classic", true);
      json::put(w, "cooperative", m.cooperative);
      json::put(w, "session_timeout_ms", m.session_timeout_ms);
    }
    w.Key("topics");
    w.StartArray();
    for (const auto& t : m.topics) w.String(t.c_str(), static_cast<rapidjson::SizeType>(t.size()));
    w.EndArray();
    w.Key("owned");
    w.StartArray();
    for (const auto& tp : m.owned) {
      w.StartObject();
      write_partition(w, tp);
      w.EndObject();
    }
    w.EndArray();
    w.Key("handed");
    w.StartArray();
    for (const auto& [tp, since] : m.handed) {
      w.StartObject();
      write_partition(w, tp);
      json::put(w, "since", since);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("target");
  w.StartArray();
  for (const auto& [tp, member] : s.target) {
    w.StartObject();
    write_partition(w, tp);
    json::put(w, "member", member);
    w.EndObject();
  }
  w.EndArray();
  w.Key("cleared");
  w.StartArray();
  for (const auto& tp : s.cleared) {
    w.StartObject();
    write_partition(w, tp);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

/// One group's record in the log: its state as one JSON object.
std::string render_group(const group& g) {
  rapidjson::StringBuffer buffer;
  json::writer w(buffer);
  write_group(w, g);
  return std::string(buffer.GetString(), buffer.GetSize());
}

result<topic_partition> read_partition(json::object_reader& r) {
  std::string topic;
  std::int64_t partition = -1;
  r.get("topic", topic, true);
  r.get("partition", partition, true);
  if (r.ok() && (topic.empty() || partition < 0 || partition > INT32_MAX)) r.fail_here("bad topic or partition");
  if (!r.ok()) return r.first_error().err();
  return topic_partition{topic, static_cast<std::int32_t>(partition)};
}

/// One group's state, as write_group writes it; `at` names it in errors.
result<group_state> parse_group(const rapidjson::Value& value, const std::string& at) {
  json::object_reader g(value, at);
  group_state s;
  g.get("id", s.id, true);
  g.get("epoch", s.epoch, true);
  const auto* members = g.member("members");
  const auto* target = g.member("target");
  const auto* cleared = g.member("cleared");
  if (g.ok() && (!members || !members->IsArray() || !target || !target->IsArray() || !cleared ||
                 !cleared->IsArray()))
    g.fail_here("members, target and cleared must be arrays");
  if (auto st = g.finish(); !st) return st.err();
  for (rapidjson::SizeType k = 0; k < members->Size(); ++k) {
    json::object_reader m((*members)[k], at + ".members[" + std::to_string(k) + "]");
    member mem;
    std::string broker;
    std::vector<std::string> topics;
    m.get("id", mem.id, true);
    m.get("broker", broker, true);
    m.get("epoch", mem.epoch, true);
    m.get("previous_epoch", mem.previous_epoch, true);
    m.get("topics", topics, true);
    m.get("classic", mem.classic);
    m.get("cooperative", mem.cooperative);
    m.get("session_timeout_ms", mem.session_timeout_ms);
    mem.anywhere = mem.classic;
    const auto* handed = m.member("handed");
    const auto* owned = m.member("owned");
    if (m.ok() && (!handed || !handed->IsArray())) m.fail("handed", "expected an array");
    if (m.ok() && (!owned || !owned->IsArray())) m.fail("owned", "expected an array");
    if (auto st = m.finish(); !st) return st.err();
    mem.broker = broker_id(broker);
    mem.topics = {topics.begin(), topics.end()};
    for (rapidjson::SizeType h = 0; h < handed->Size(); ++h) {
      json::object_reader hr((*handed)[h], at + ".members[" + std::to_string(k) + "].handed[" + std::to_string(h) + "]");
      auto tp = read_partition(hr);
      std::uint64_t since = 0;
      hr.get("since", since, true);
      if (auto st = hr.finish(); !st || !tp) return st ? tp.err() : st.err();
      mem.handed[*tp] = since;
    }
    for (rapidjson::SizeType h = 0; h < owned->Size(); ++h) {
      json::object_reader o((*owned)[h], at + ".members[" + std::to_string(k) + "].owned[" + std::to_string(h) + "]");
      auto tp = read_partition(o);
      if (auto st = o.finish(); !st || !tp) return st ? tp.err() : st.err();
      mem.owned.insert(*tp);
    }
    s.members[mem.id] = std::move(mem);
  }
  for (rapidjson::SizeType k = 0; k < target->Size(); ++k) {
    json::object_reader t((*target)[k], at + ".target[" + std::to_string(k) + "]");
    auto tp = read_partition(t);
    std::string holder;
    t.get("member", holder, true);
    if (auto st = t.finish(); !st || !tp) return st ? tp.err() : st.err();
    s.target[*tp] = holder;
  }
  for (rapidjson::SizeType k = 0; k < cleared->Size(); ++k) {
    json::object_reader c((*cleared)[k], at + ".cleared[" + std::to_string(k) + "]");
    auto tp = read_partition(c);
    if (auto st = c.finish(); !st || !tp) return st ? tp.err() : st.err();
    s.cleared.insert(*tp);
  }
  return s;
}

/// A group-state.json of an older version: {"version":1,"groups":[...]}.
result<std::vector<group_state>> parse_groups(const rapidjson::Value& doc, const std::string& file) {
  json::object_reader top(doc, file);
  std::uint32_t version = 0;
  top.get("version", version, true);
  const auto* list = top.member("groups");
  if (top.ok() && version != 1) top.fail("version", "unsupported version " + std::to_string(version));
  if (top.ok() && (!list || !list->IsArray())) top.fail("groups", "expected an array");
  if (auto s = top.finish(); !s) return s.err();
  std::vector<group_state> out;
  for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
    auto g = parse_group((*list)[i], file + ": groups[" + std::to_string(i) + "]");
    if (!g) return g.err();
    out.push_back(std::move(*g));
  }
  return out;
}

}  // namespace

broker_id coordinator_of(const std::string& group_id, std::vector<broker_id> brokers) {
  return coordinator_by_hash(group_id, std::move(brokers));
}

group_service::group_service(group_service_options o, storage::keyed_log& f, placement_source p, logger& l,
                             metrics_sink& m)
    : opt_(std::move(o)), file_(f), placements_(std::move(p)), log_(l), metrics_(m) {}

result<std::unique_ptr<group_service>> group_service::open(group_service_options options, storage::keyed_log& file,
                                                           placement_source placements, time_ms now, logger& log,
                                                           metrics_sink& metrics, const storage::state_file* legacy) {
  std::unique_ptr<group_service> s(new group_service(std::move(options), file, std::move(placements), log, metrics));
  for (const auto& [id, value] : file.entries()) {
    if (value.empty()) continue;  // a group dropped since
    rapidjson::Document d;
    const std::string at = file.name() + ": group " + id;
    if (auto parsed = json::parse_document(value, d, at); !parsed) return error{errc::corrupt, parsed.message()};
    auto st = parse_group(d, at);
    if (!st) return error{errc::corrupt, st.message()};
    if (st->id != id) return error{errc::corrupt, at + ": holds group " + st->id};
    s->written_[id] = value;
    s->groups_.emplace(id, group(std::move(*st), s->opt_.timing, now));
  }
  bool carried = false;
  if (legacy) {
    // A group-state.json of an older version: its groups go into the log (those the log does not have yet: a start
    // cut short after carrying them over finds them there), synced, before the caller renames it.
    rapidjson::Document d;
    auto present = json::read_state_document(*legacy, d);
    if (!present) return present.err();
    if (*present) {
      auto states = parse_groups(d, legacy->name());
      if (!states) return error{errc::corrupt, states.message()};
      for (auto& st : *states) {
        std::string id = st.id;
        if (s->groups_.count(id)) continue;
        s->groups_.emplace(id, group(std::move(st), s->opt_.timing, now));
        carried = true;
      }
    }
  }
  std::lock_guard lock(s->mu_);
  if (carried)
    if (auto w = s->persist_locked(); !w) return w.err();
  for (auto& [id, g] : s->groups_) s->refresh_locked(g, now);
  return s;
}

group& group_service::group_locked(const std::string& id, time_ms) {
  auto it = groups_.find(id);
  if (it == groups_.end()) it = groups_.emplace(id, group(id, opt_.timing)).first;
  return it->second;
}

void group_service::refresh_locked(group& g, time_ms now) {
  if (placements_)
    if (auto p = placements_(g.subscribed_topics())) g.set_placement(std::move(*p), now);
  publish_locked(g);
}

void group_service::publish_locked(const group& g) {
  const metric_labels labels{{"group", g.state().id}};
  metrics_.set(metrics::members, labels, static_cast<double>(g.state().members.size()));
  metrics_.set(metrics::epoch, labels, static_cast<double>(g.state().epoch));
  metrics_.set(metrics::unassigned, labels, static_cast<double>(g.unassigned_partitions().size()));
}

status group_service::persist_locked(const std::vector<std::string>* only) {
  // Each group whose state changed since it was written is appended as one record (a dropped group as an empty
  // one), then one sync for all of them.
  std::vector<std::pair<std::string, std::string>> changed;
  auto consider = [&](const std::string& id) {
    auto g = groups_.find(id);
    std::string now = g == groups_.end() ? std::string() : render_group(g->second);
    auto w = written_.find(id);
    if (w == written_.end() ? now.empty() : w->second == now) return;
    changed.emplace_back(id, std::move(now));
  };
  if (only) {
    for (const auto& id : *only) consider(id);
  } else {
    for (const auto& [id, g] : groups_) consider(id);
    for (const auto& [id, value] : written_)
      if (!groups_.count(id)) consider(id);
  }
  if (changed.empty()) return {};
  auto s = MOONMQ_FAULT("groups.before_persist");
  for (std::size_t i = 0; s && i < changed.size(); ++i) s = file_.put(changed[i].first, changed[i].second, false);
  if (s) s = file_.sync();
  if (!s) {
    log_.error("groups", "could not write the group state (it is kept in memory, and written again at the next "
                         "tick): " + s.message());
    for (const auto& [id, value] : changed) unwritten_.insert(id);
    return s;
  }
  for (auto& [id, value] : changed) {
    unwritten_.erase(id);
    if (value.empty()) written_.erase(id);
    else written_[id] = std::move(value);
  }
  return MOONMQ_FAULT("groups.after_persist");
}

result<member_answer> group_service::join(const std::string& group_id, const std::string& member_id,
                                          const broker_id& broker, std::set<std::string> topics, time_ms now) {
  if (topics.empty()) return error{errc::invalid_argument, "topics: a member subscribes to at least one topic"};
  std::lock_guard lock(mu_);
  if (!member_id.empty()) {
    auto known = groups_.find(group_id);
    if (known == groups_.end() || !known->second.state().members.count(member_id))
      return error{errc::not_found, "member " + member_id + " is not in group " + group_id +
                                        " (the coordinator gives ids: join without one)"};
  }
  group& g = group_locked(group_id, now);
  if (auto full = room_for_member(g, member_id); !full) return full.err();
  const auto rebalances = g.rebalances();
  auto all = g.subscribed_topics();
  all.insert(topics.begin(), topics.end());
  if (placements_)
    if (auto p = placements_(all)) g.set_placement(std::move(*p), now);
  auto a = g.join(member_id.empty() ? (opt_.member_ids ? opt_.member_ids() : new_member_id()) : member_id, broker,
                  std::move(topics), now);
  metrics_.add(metrics::rebalances, {{"group", group_id}}, static_cast<double>(g.rebalances() - rebalances));
  publish_locked(g);
  (void)persist_locked(group_id);
  return a;
}

result<member_answer> group_service::heartbeat(const std::string& group_id, const std::string& member_id,
                                               std::uint64_t member_epoch, const std::vector<topic_partition>& owned,
                                               time_ms now) {
  std::lock_guard lock(mu_);
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return error{errc::not_found, "member " + member_id + " is not in group " + group_id};
  const auto before = it->second.state().members.find(member_id);
  const std::uint64_t epoch_before = before == it->second.state().members.end() ? 0 : before->second.epoch;
  auto a = it->second.heartbeat(member_id, member_epoch, owned, now);
  if (a && a->member_epoch != epoch_before) (void)persist_locked(group_id);  // what the member holds changed
  return a;
}

status group_service::room_for_member(const group& g, const std::string& member_id) const {
  if (g.state().members.count(member_id) || g.state().members.size() < opt_.max_members) return {};
  return {errc::resource_exhausted, "group " + g.state().id + " has " + std::to_string(opt_.max_members) +
                                        " members, the most one group may have"};
}

result<classic_answer> group_service::join_classic(const std::string& group_id, classic_join call, time_ms now) {
  if (call.topics.empty()) return error{errc::invalid_argument, "topics: a member subscribes to at least one topic"};
  std::lock_guard lock(mu_);
  if (!call.member_id.empty()) {
    auto known = groups_.find(group_id);
    if (known == groups_.end() || !known->second.state().members.count(call.member_id))
      return error{errc::not_found, "member " + call.member_id + " is not in group " + group_id};
  } else {
    call.member_id = opt_.member_ids ? opt_.member_ids() : new_member_id();
  }
  group& g = group_locked(group_id, now);
  if (auto full = room_for_member(g, call.member_id); !full) return full.err();
  const auto rebalances = g.rebalances();
  auto all = g.subscribed_topics();
  all.insert(call.topics.begin(), call.topics.end());
  if (placements_)
    if (auto p = placements_(all)) g.set_placement(std::move(*p), now);
  auto a = g.join_classic(call, now);
  metrics_.add(metrics::rebalances, {{"group", group_id}}, static_cast<double>(g.rebalances() - rebalances));
  publish_locked(g);
  (void)persist_locked(group_id);
  return a;
}

result<classic_answer> group_service::sync_classic(const std::string& group_id, const std::string& member_id,
                                                   std::uint64_t generation, time_ms now) {
  std::lock_guard lock(mu_);
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return error{errc::not_found, "member " + member_id + " is not in group " + group_id};
  auto a = it->second.sync_classic(member_id, generation, now);
  if (a) (void)persist_locked(group_id);  // what it holds may have changed (nothing is written when it did not)
  return a;
}

result<classic_answer> group_service::heartbeat_classic(const std::string& group_id, const std::string& member_id,
                                                        std::uint64_t generation, time_ms now) {
  std::lock_guard lock(mu_);
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return error{errc::not_found, "member " + member_id + " is not in group " + group_id};
  return it->second.heartbeat_classic(member_id, generation, now);
}

status group_service::leave(const std::string& group_id, const std::string& member_id) {
  std::lock_guard lock(mu_);
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return {errc::not_found, "member " + member_id + " is not in group " + group_id};
  const auto rebalances = it->second.rebalances();
  if (auto s = it->second.leave(member_id); !s) return s;
  metrics_.add(metrics::rebalances, {{"group", group_id}},
               static_cast<double>(it->second.rebalances() - rebalances));
  publish_locked(it->second);
  (void)persist_locked(group_id);
  return {};
}

void group_service::tick(time_ms now) {
  std::lock_guard lock(mu_);
  // What a tick can change in a group (members expired, the target following the partitions) moves its epoch or
  // its member count: only those groups, and the dropped ones, are looked at for writing.
  std::vector<std::string> changed;
  for (auto it = groups_.begin(); it != groups_.end();) {
    auto& [id, g] = *it;
    const auto rebalances = g.rebalances();
    const auto before = std::pair{g.state().epoch, g.state().members.size()};
    for (const auto& gone : g.expire(now))
      log_.info("groups", "member " + gone + " of group " + id + " missed its session timeout; it was removed");
    if (g.state().members.empty()) {  // an empty group holds nothing worth keeping; its offsets live elsewhere
      for (const auto* f : {&metrics::members, &metrics::epoch, &metrics::unassigned}) metrics_.set(*f, {{"group", id}}, 0);
      changed.push_back(id);
      it = groups_.erase(it);
      continue;
    }
    refresh_locked(g, now);
    metrics_.add(metrics::rebalances, {{"group", id}}, static_cast<double>(g.rebalances() - rebalances));
    if (before != std::pair{g.state().epoch, g.state().members.size()}) changed.push_back(id);
    ++it;
  }
  changed.insert(changed.end(), unwritten_.begin(), unwritten_.end());  // a write that failed is tried again
  if (!changed.empty()) (void)persist_locked(&changed);
}

status group_service::check_commit(const std::string& group_id, const std::string& member_id,
                                   std::uint64_t member_epoch, const topic_partition& tp) const {
  std::lock_guard lock(mu_);
  auto it = groups_.find(group_id);
  if (it == groups_.end() || it->second.state().members.empty()) {
    if (member_id.empty()) return {};
    return {errc::conflict, "member " + member_id + " is not in group " + group_id + "; its commit is fenced"};
  }
  if (member_id.empty())
    return {errc::conflict, "group " + group_id + " has members: a commit must name the member and its epoch"};
  return it->second.check_commit(member_id, member_epoch, tp);
}

bool group_service::has_members(const std::string& group_id) const {
  std::lock_guard lock(mu_);
  auto it = groups_.find(group_id);
  return it != groups_.end() && !it->second.state().members.empty();
}

std::optional<group_description> group_service::describe(const std::string& group_id) const {
  std::lock_guard lock(mu_);
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return std::nullopt;
  group_description d{group_id, opt_.self, it->second.state().epoch, {}, it->second.unassigned_partitions()};
  for (const auto& [id, m] : it->second.state().members) d.members.push_back(m);
  return d;
}

std::vector<std::pair<std::string, placement>> group_service::pending_clearances() const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, placement>> out;
  asked_.clear();
  for (const auto& [id, g] : groups_)
    for (const auto& p : g.needing_clearance()) {
      out.emplace_back(id, p);
      asked_[{id, p.partition}] = g.handovers(p.partition);
    }
  return out;
}

void group_service::clearance_done(const std::string& group_id, const topic_partition& tp) {
  std::lock_guard lock(mu_);
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return;
  // The owner's answer covers the commits checked before it was asked: if the partition was handed and given up
  // since (an eager member taking its own back), a commit of that holder may have come after, and the answer is old.
  auto asked = asked_.find({group_id, tp});
  if (asked == asked_.end()) return;  // not asked in this round
  it->second.cleared_by_owner(tp, asked->second);
  (void)persist_locked(group_id);
}

std::vector<std::string> group_service::groups(const std::string& after, std::size_t limit) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (auto it = after.empty() ? groups_.begin() : groups_.upper_bound(after); it != groups_.end() && out.size() < limit;
       ++it)
    out.push_back(it->first);
  return out;
}

}  // namespace moonmq::groups
