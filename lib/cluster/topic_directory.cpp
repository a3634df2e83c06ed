#include "moonmq/cluster/topic_directory.hpp"

#include <rapidjson/document.h>

#include <chrono>
#include <set>
#include <shared_mutex>

#include "cluster/topic_json.hpp"
#include "json/object_reader.hpp"
#include "json/parse.hpp"
#include "json/writer.hpp"
#include "moonmq/core/fnv1a.hpp"

namespace moonmq::cluster {

namespace {

/// Recent outcomes kept for decide() to read back (a decision waits for its own entry, which is among the newest).
constexpr std::size_t outcomes_kept = 4096;

std::string catalog_json(const topic_catalog& c) {
  return json::object([&](json::writer& w) { wire::write_catalog(w, c); });
}

}  // namespace

result<std::unique_ptr<topic_directory>> topic_directory::open(parts p, std::unique_ptr<storage::state_file> file,
                                                               std::unique_ptr<storage::state_file> stamps) {
  std::unique_ptr<topic_directory> d(new topic_directory(std::move(p)));
  d->stamps_file_ = std::move(stamps);
  if (auto s = d->load_stamps(); !s) return s.err();
  auto text = file->read();
  if (!text) return text.err();
  if (*text) {
    rapidjson::Document doc;
    if (auto s = json::parse_document(**text, doc, file->name()); !s) return error{errc::corrupt, s.message()};
    auto c = wire::read_catalog(doc, file->name());
    if (!c) return c.err();
    d->catalog_ = std::move(*c);
  }
  d->file_ = std::move(file);
  // What a stop may have cut short between deciding a record and carrying it out; then the strays.
  for (const auto& r : d->catalog_.records()) d->carry_out(r.name);
  if (d->catalog_.records().empty()) {
    std::lock_guard topics(d->p_.gates.topics());
    d->withhold_strays_locked();
  }
  return d;
}

result<std::unique_ptr<topic_directory>> topic_directory::replicated(parts p,
                                                                     std::unique_ptr<storage::state_file> stamps) {
  std::unique_ptr<topic_directory> d(new topic_directory(std::move(p)));
  d->stamps_file_ = std::move(stamps);
  if (auto s = d->load_stamps(); !s) return s.err();
  return d;
}

status topic_directory::load_stamps() {
  auto text = stamps_file_->read();
  if (!text) return text.err();
  if (!*text) return {};
  rapidjson::Document d;
  if (auto s = json::parse_document(**text, d, stamps_file_->name()); !s) return {errc::corrupt, s.message()};
  if (!d.IsObject() || !d.HasMember("logs") || !d["logs"].IsArray())
    return {errc::corrupt, stamps_file_->name() + ": expected {\"logs\": [...]}"};
  for (rapidjson::SizeType i = 0; i < d["logs"].Size(); ++i) {
    json::object_reader r(d["logs"][i], stamps_file_->name() + ".logs[" + std::to_string(i) + "]");
    std::string name;
    std::uint64_t created = 0;
    std::uint32_t made = 0;
    r.get("name", name, true);
    r.get("created", created, true);
    const bool has_made = d["logs"][i].IsObject() && d["logs"][i].HasMember("made");
    r.get("made", made);
    std::set<std::int32_t> disowned;
    if (const rapidjson::Value* list = r.member("disowned")) {
      if (!list->IsArray()) r.fail("disowned", "expected an array of partitions");
      for (rapidjson::SizeType k = 0; r.ok() && list->IsArray() && k < list->Size(); ++k) {
        if (!(*list)[k].IsInt() || (*list)[k].GetInt() < 0) r.fail("disowned", "expected partitions (whole numbers)");
        else disowned.insert((*list)[k].GetInt());
      }
    }
    if (auto s = r.finish(); !s) return {errc::corrupt, s.message()};
    stamps_[name] = created;
    if (has_made) made_[name] = static_cast<std::int32_t>(std::min<std::uint32_t>(made, INT32_MAX));
    if (!disowned.empty()) disowned_[name] = std::move(disowned);
  }
  return {};
}

status topic_directory::write_stamps_locked() const {
  return stamps_file_->replace(json::object([&](json::writer& w) {
                                 w.Key("logs");
                                 w.StartArray();
                                 for (const auto& [name, created] : stamps_) {
                                   w.StartObject();
                                   json::put(w, "name", name);
                                   json::put(w, "created", created);
                                   if (auto m = made_.find(name); m != made_.end()) json::put(w, "made", m->second);
                                   if (auto o = disowned_.find(name); o != disowned_.end() && !o->second.empty()) {
                                     w.Key("disowned");
                                     w.StartArray();
                                     for (std::int32_t p : o->second) w.Int(p);
                                     w.EndArray();
                                   }
                                   w.EndObject();
                                 }
                                 w.EndArray();
                               }) +
                               "\n");
}

broker_id topic_directory::coordinator_of(std::string_view topic) const {
  return coordinator_by_hash(topic, p_.brokers);
}

result<topic_record> topic_directory::decide(const topic_change& c) {
  std::lock_guard one(decide_mu_);
  const std::string what = std::string(topic_op_name(c.op)) + " of topic '" + c.name + "'";
  if (replicated()) {
    {
      std::lock_guard lock(mu_);
      if (auto s = catalog_.check(c); !s) return s.err();  // refused now: nothing to propose
    }
    if (!propose_) return error{errc::unavailable, "Raft is not running: the " + what + " cannot be decided"};
    auto index = propose_(raft::entry_kind::topic, wire::topic_change_body(c));
    if (!index) return error{errc::unavailable, "the outcome of the " + what + " is not known: " + index.message()};
    std::unique_lock lock(mu_);
    auto o = outcomes_.find(*index);
    if (o == outcomes_.end())
      return error{errc::unavailable, "the outcome of the " + what + " is not known here (it arrived in a snapshot)"};
    if (!o->second) {
      // Refused in the log's order: another change of the topic came first.
      auto why = catalog_.check(c);
      return why ? error{errc::conflict, "the " + what + " lost to a change decided first"} : why.err();
    }
    // What the entry made true here (logs made or removed) is done off the applying thread: wait for it, so that
    // a client told "created" finds the partitions on this broker.
    if (!carried_cv_.wait_for(lock, std::chrono::seconds(10), [&] { return carried_ >= *index; }))
      p_.log.warn("topics", "the " + what + " is decided but not yet carried out here");
    return *catalog_.find(c.name);
  }
  topic_record now;
  {
    std::lock_guard lock(mu_);
    const topic_catalog before = catalog_;
    auto r = catalog_.apply(c);
    if (!r) return r.err();
    if (auto s = persist_locked(); !s) {
      catalog_ = before;
      return error{s.code(), "the " + what + " could not be recorded: " + s.message()};
    }
    now = *r;
  }
  carry_out(now.name);
  return now;
}

status topic_directory::learn(const topic_record& r) {
  {
    std::lock_guard lock(mu_);
    const topic_catalog before = catalog_;
    if (!catalog_.learn(r)) return {};
    if (file_)
      if (auto s = persist_locked(); !s) {
        catalog_ = before;
        return s;
      }
  }
  carry_out(r.name);
  return {};
}

std::optional<topic_record> topic_directory::apply_entry(const raft::entry& e) {
  auto c = wire::read_topic_change(e.data);
  std::optional<topic_record> applied;
  {
    std::lock_guard lock(mu_);
    // Written by topic_change_body and carried in CRC-checked logs, so always readable; one that is not changes
    // nothing.
    if (c) {
      auto r = catalog_.apply(*c);
      if (r) applied = *r;
    }
    outcomes_[e.index] = applied.has_value();
    while (outcomes_.size() > outcomes_kept) outcomes_.erase(outcomes_.begin());
  }
  later([this, name = applied ? applied->name : std::string(), index = e.index] {
    if (!name.empty()) carry_out(name);
    {
      std::lock_guard lock(mu_);
      carried_ = std::max(carried_, index);
    }
    carried_cv_.notify_all();
  });
  return applied;
}

void topic_directory::later(std::function<void()> work) {
  if (p_.run_later)
    p_.run_later(std::move(work));
  else
    work();
}

void topic_directory::restore(std::string_view snapshot) {
  rapidjson::Document d;
  topic_catalog c;
  if (json::parse_object(snapshot, d))
    if (auto read = wire::read_catalog(d, "snapshot")) c = std::move(*read);
  std::vector<std::string> names;
  {
    std::lock_guard lock(mu_);
    catalog_ = c;
    outcomes_.clear();
  }
  for (const auto& r : c.records()) names.push_back(r.name);
  later([this, names] {
    for (const auto& n : names) carry_out(n);
  });
}

std::string topic_directory::snapshot() const {
  std::lock_guard lock(mu_);
  return catalog_json(catalog_);
}

std::optional<topic_record> topic_directory::find(std::string_view topic) const {
  std::lock_guard lock(mu_);
  if (const auto* t = catalog_.find(topic)) return *t;
  return std::nullopt;
}

bool topic_directory::rules_out(std::string_view topic, std::optional<std::int32_t> partition) const {
  std::lock_guard lock(mu_);
  const auto* t = catalog_.find(topic);
  if (!t) return false;
  return t->deleted || (partition && (*partition < 0 || *partition >= t->partitions()));
}

std::vector<topic_record> topic_directory::live() const {
  std::lock_guard lock(mu_);
  std::vector<topic_record> out;
  for (auto& t : catalog_.records())
    if (!t.deleted) out.push_back(std::move(t));
  return out;
}

topic_catalog topic_directory::catalog() const {
  std::lock_guard lock(mu_);
  return catalog_;
}

status topic_directory::persist_locked() const { return file_->replace(catalog_json(catalog_) + "\n"); }

void topic_directory::carry_out(const std::string& name) {
  std::lock_guard topics(p_.gates.topics());  // never interleaved with a client's or a peer's ensure
  (void)carry_out_locked(name);
  withhold_strays_locked();
}

void topic_directory::withhold_strays_locked() {
  for (const auto& r : catalog().records()) (void)adopt_if_empty_locked(r);
  const topic_catalog cat = catalog();
  std::set<topic_partition> strays;
  std::vector<ownership_entry> routes;
  for (const auto& tp : p_.store.list_partitions()) {
    const topic_record* r = cat.find(tp.topic);
    if (!r) continue;  // a topic the catalog does not list: made before topics were metadata, its own rules apply
    // A stamped log is the catalog's unless it is a partition past the count of the incarnation it is stamped with
    // (made by hand). A stamp of another incarnation means a carry-out is pending (a removal a stop cut short, or a
    // catalog behind the logs while the Raft log replays): not a stray.
    if (auto stamp = stamps_.find(tp.topic); stamp != stamps_.end()) {
      // Made by carry-outs here: the partitions up to the count they made (a stamp written before that count was kept:
      // up to the record's count).
      auto made = made_.find(tp.topic);
      const std::int32_t ours = made != made_.end() ? std::min(made->second, r->partitions()) : r->partitions();
      auto disowned = disowned_.find(tp.topic);
      const bool ours_not = disowned != disowned_.end() && disowned->second.count(tp.partition) > 0;
      if (r->deleted || stamp->second != r->created || (tp.partition < ours && !ours_not)) continue;
    }
    // An unstamped log that a move was confirmed onto (an entry naming this broker past version 0) is the partition's
    // log, made the old way by a move's ensure before this broker knew the topic: withholding it would leave the
    // partition with no server.
    if (!r->deleted && tp.partition < r->partitions() && !stamps_.count(tp.topic))
      if (auto e = p_.ownership.entry(tp); e && e->owner == p_.self && e->version > 0) continue;
    strays.insert(tp);
    // A produce for it here goes to the partition's first owner, not into this log.
    if (!r->deleted && tp.partition < r->partitions() && !p_.ownership.entry(tp)) {
      const broker_id& owner = r->owners[static_cast<std::size_t>(tp.partition)];
      if (owner != p_.self) routes.push_back({tp, owner, 0, false});
    }
  }
  const auto before = p_.ownership.withheld_all();
  for (const auto& tp : strays)
    if (!before.count(tp) && p_.ownership.ready())  // not while the Raft log replays (a grow not yet applied)
      p_.log.warn("topics", name_of(tp) + ": a stray log here (the cluster's catalog did not make it on this broker): "
                            "not served, kept untouched until an operator reconciles it (docs/cluster.md, \"Strays\")");
  p_.ownership.withhold(std::move(strays));
  if (auto s = p_.ownership.record_all(routes); !s)
    p_.log.error("topics", "cannot record the owners of the strays' partitions here: " + s.message());
}

std::optional<result<std::int32_t>> topic_directory::ensure_listed(const std::string& topic, std::int32_t partitions,
                                                                   const std::optional<topic_record>& theirs) {
  // The source's record, when its catalog lists the topic: a destination whose catalog is behind never makes the logs
  // the old way (unstamped, they would be strays once it learns the topic). Without Raft it takes the record (a newer
  // version only, as from the coordinator); with Raft the log is the only teacher, and the move waits for it.
  if (theirs) {
    if (replicated()) {
      auto mine = find(topic);
      if (!mine || mine->version < theirs->version)
        return result<std::int32_t>(error{errc::unavailable, "topic '" + topic + "': " + p_.self.value() +
                                                                 " has not yet applied version " +
                                                                 std::to_string(theirs->version) +
                                                                 " of it from the Raft log; try again"});
    } else if (auto s = learn(*theirs); !s) {
      return result<std::int32_t>(s.err());
    }
  }
  std::lock_guard topics(p_.gates.topics());
  std::optional<topic_record> r = find(topic);
  if (!r) return std::nullopt;
  if (r->deleted)
    return result<std::int32_t>(error{errc::not_found, "topic '" + topic + "' was deleted: nothing of it is made again"});
  // A source holding partitions past the catalog's count (strays made by hand) asks for its store's count: the
  // destination makes what the catalog lists, which covers every partition a move can take (a stray never moves).
  partitions = std::min(partitions, r->partitions());
  auto s = carry_out_locked(topic, true);
  withhold_strays_locked();
  if (!s) return result<std::int32_t>(s.err());
  // A move's destination never takes a stray for the partition's log (its records would be served as the partition's).
  for (std::int32_t i = 0; i < partitions; ++i)
    if (p_.ownership.withheld({topic, i}))
      return result<std::int32_t>(error{errc::conflict, name_of({topic, i}) + " on " + p_.self.value() +
                                                            " is a stray log (the cluster's catalog did not make it "
                                                            "here): reconcile it before anything moves here"});
  return p_.store.partition_count(topic);
}

status topic_directory::drop_stray(const topic_partition& tp,
                                   const std::function<status(const topic_partition&)>& empty) {
  std::lock_guard topics(p_.gates.topics());
  {
    std::unique_lock gate(p_.gates.gate(tp));
    if (!p_.ownership.withheld(tp))
      return {errc::conflict, name_of(tp) + " on " + p_.self.value() + " is no stray (nothing to reconcile there)"};
    if (auto s = empty(tp); !s) return s;
  }
  p_.log.warn("topics", name_of(tp) + ": the stray log here is emptied, by an operator's decision");
  // A disowned log (an adopted topic's duplicate) that is empty holds nothing of another history: the catalog's now.
  if (auto o = disowned_.find(tp.topic); o != disowned_.end() && o->second.erase(tp.partition) > 0) {
    if (o->second.empty()) disowned_.erase(o);
    if (auto s = write_stamps_locked(); !s) return s;
  }
  withhold_strays_locked();  // adopts the topic's logs when nothing of what no record made is left in them
  return {};
}

status topic_directory::claim(const std::string& name, std::uint64_t created, std::int32_t partitions,
                              std::set<std::int32_t> disowned) {
  std::lock_guard topics(p_.gates.topics());
  if (find(name)) return {errc::conflict, "topic '" + name + "' is in the cluster's catalog already: nothing to adopt"};
  if (!p_.store.partition_count(name)) return {};  // nothing of it here
  stamps_[name] = created;
  made_[name] = partitions;
  if (disowned.empty())
    disowned_.erase(name);
  else
    disowned_[name] = std::move(disowned);
  if (auto s = write_stamps_locked(); !s) {
    stamps_.erase(name);
    made_.erase(name);
    disowned_.erase(name);
    return s;
  }
  p_.log.info("topics", "topic '" + name + "': the logs here are claimed for its adoption into the catalog (version " +
                            std::to_string(created) + ")");
  return {};
}

bool topic_directory::adopt_if_empty_locked(const topic_record& r) {
  auto count = p_.store.partition_count(r.name);
  if (!count || stamps_.count(r.name)) return false;
  for (std::int32_t i = 0; i < *count; ++i) {
    auto size = p_.store.size_bytes({r.name, i});
    if (!size || *size != 0) return false;
  }
  // Nothing of what no record made is left (emptied by an operator, or never written): the logs are the catalog's.
  if (r.deleted) return remove_here(r.name, *count).ok();
  stamps_[r.name] = r.created;
  made_[r.name] = std::min(*count, r.partitions());
  if (auto s = write_stamps_locked(); !s) {
    stamps_.erase(r.name);
    made_.erase(r.name);
    p_.log.error("topics", "topic '" + r.name + "': cannot stamp its empty logs here: " + s.message());
    return false;
  }
  // A partition another broker owns is recorded as that broker's before anything reads the log as this broker's.
  std::vector<ownership_entry> theirs;
  for (std::int32_t i = 0; i < std::min(*count, r.partitions()); ++i) {
    const broker_id& owner = r.owners[static_cast<std::size_t>(i)];
    if (owner != p_.self && !p_.ownership.entry({r.name, i})) theirs.push_back({{r.name, i}, owner, 0, false});
  }
  if (auto s = p_.ownership.record_all(theirs); !s)
    p_.log.error("topics", "topic '" + r.name + "': cannot record its partitions' owners here: " + s.message());
  p_.log.info("topics", "topic '" + r.name + "': the empty logs here that no record made are now the catalog's");
  (void)carry_out_locked(r.name);
  return true;
}

result<std::int32_t> topic_directory::grow_unlisted(const std::string& topic, std::int32_t partitions) {
  std::lock_guard topics(p_.gates.topics());
  if (find(topic)) return error{errc::conflict, "topic '" + topic + "' is in the cluster's catalog"};
  return p_.store.ensure_topic(topic, partitions);
}

status topic_directory::remove_here(const std::string& name, std::int32_t partitions) {
  // Every partition's gate, held exclusively: no append, migration copy or commit runs in a log being removed.
  std::vector<std::unique_lock<std::shared_mutex>> held;
  for (std::int32_t i = 0; i < partitions; ++i) held.emplace_back(p_.gates.gate({name, i}));
  if (auto s = p_.store.remove_topic(name); !s && s.code() != errc::not_found) return s;
  if (p_.forget_producers) p_.forget_producers(name);
  // Then the partitions' ownership history here, so that a later incarnation starts afresh; then the stamp (last:
  // a stop before it leaves the stamp, and the next carry-out finishes the removal).
  if (auto s = p_.ownership.forget_topic(name); !s) return s;
  if (p_.forget_offsets)
    if (auto s = p_.forget_offsets(name); !s) return s;
  made_.erase(name);
  disowned_.erase(name);
  if (stamps_.erase(name)) return write_stamps_locked();
  return {};
}

status topic_directory::carry_out_locked(const std::string& name, bool make_here) {
  auto fail = [&](const std::string& doing, const status& s) {
    p_.log.error("topics", "topic '" + name + "': " + doing + ": " + s.message());
    return s;
  };
  std::optional<topic_record> r = find(name);
  if (!r) return {};
  auto had = p_.store.partition_count(name);
  std::optional<std::uint64_t> stamp;
  if (auto it = stamps_.find(name); it != stamps_.end()) stamp = it->second;
  // Logs of this name that no record stamped: made before topics were cluster metadata, or by hand. Left alone.
  if (had && !stamp) {
    p_.log.warn("topics", "topic '" + name + "': this broker holds logs of the name that the cluster's catalog did not "
                          "make; they are left untouched");
    return {};
  }
  // Logs (or what is left of a removal a stop cut short) of an incarnation made before the record's: of the one
  // deleted (a delete at version D removes what was made before D), or older than the live one. Removed.
  if (stamp && (r->deleted ? *stamp < r->version : *stamp < r->created)) {
    if (auto s = remove_here(name, had ? *had : 0); !s) return fail("cannot remove its logs here", s);
    if (had) p_.log.info("topics", "topic '" + name + "': the logs here of an earlier incarnation are removed");
    had = error{errc::not_found, ""};
    stamp.reset();
  } else if (!stamp && r->deleted) {
    // Nothing here to remove; its ownership history and committed offsets go (a broker that only routed to it may
    // hold entries; one a move's offsets were pushed to, offsets).
    if (auto s = p_.ownership.forget_topic(name); !s) return fail("cannot drop its ownership entries here", s);
    if (p_.forget_offsets)
      if (auto s = p_.forget_offsets(name); !s) return fail("cannot forget its committed offsets here", s);
  }
  if (r->deleted) return {};
  // Logs stamped by a later incarnation than this record (this broker is replaying the Raft log, or its catalog is
  // behind a peer's): the record is stale here, and the logs are left as they are.
  if (stamp && *stamp > r->created) return {};
  const std::int32_t from = had ? *had : 0;
  const std::int32_t want = r->partitions();
  if (stamp && *stamp == r->created && had && !made_.count(name)) {
    // A stamp written before the count was kept: what carry-outs made is at most the record's count (a log past it
    // was made by hand), and that stays so when a later grow covers its number.
    made_[name] = std::min(from, want);
    if (auto s = write_stamps_locked(); !s) {
      made_.erase(name);
      return fail("cannot record its logs' count here", s);
    }
  }
  if (from >= want) return {};
  const bool mine = std::find(r->owners.begin(), r->owners.end(), p_.self) != r->owners.end();
  if (!mine && !had && !make_here) return {};  // nothing of it lives here
  if (!stamp) {
    // A new incarnation here: whatever ownership entries this broker holds of the name belong to an earlier one (a
    // move that was running when that one was deleted can record its outcome after the delete's removal).
    if (!had)
      if (auto s = p_.ownership.forget_topic(name); !s) return fail("cannot drop its earlier ownership entries here", s);
    stamps_[name] = r->created;  // before the logs exist: a stop between the two leaves logs that are stamped
  }
  // So is the count they are made up to: a partition past it here (made by hand) stays a stray even once a grow
  // covers its number (the grow's partition is its first owner's).
  const std::optional<std::int32_t> made_before =
      made_.count(name) ? std::optional<std::int32_t>(made_[name]) : std::nullopt;
  made_[name] = want;
  if (auto s = write_stamps_locked(); !s) {
    if (!stamp) stamps_.erase(name);
    if (made_before)
      made_[name] = *made_before;
    else
      made_.erase(name);
    return fail("cannot stamp its logs here", s);
  }
  // The partitions about to be created here that another broker owns are recorded as that broker's first, so that
  // no produce ever lands in this broker's empty namesake of one.
  std::vector<ownership_entry> theirs;
  for (std::int32_t i = from; i < want; ++i) {
    const broker_id& owner = r->owners[static_cast<std::size_t>(i)];
    if (owner != p_.self && !p_.ownership.entry({name, i})) theirs.push_back({{name, i}, owner, 0, false});
  }
  if (auto s = p_.ownership.record_all(theirs); !s) return fail("cannot record its partitions' owners here", s);
  if (auto n = p_.store.ensure_topic(name, want); !n) return fail("cannot create its partitions here", n.err());
  return {};
}

void topic_directory::after_carried_out(std::function<void()> work) { later(std::move(work)); }

}  // namespace moonmq::cluster
