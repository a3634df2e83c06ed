#include "moonmq/cluster/topic_directory.hpp"

#include <rapidjson/document.h>

#include <shared_mutex>

#include "cluster/topic_json.hpp"
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

result<std::unique_ptr<topic_directory>> topic_directory::open(parts p, std::unique_ptr<storage::state_file> file) {
  std::unique_ptr<topic_directory> d(new topic_directory(std::move(p)));
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
  // What a stop may have cut short between deciding a record and carrying it out.
  for (const auto& r : d->catalog_.records()) d->carry_out(r);
  return d;
}

std::unique_ptr<topic_directory> topic_directory::replicated(parts p) {
  return std::unique_ptr<topic_directory>(new topic_directory(std::move(p)));
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
    std::lock_guard lock(mu_);
    auto o = outcomes_.find(*index);
    if (o == outcomes_.end())
      return error{errc::unavailable, "the outcome of the " + what + " is not known here (it arrived in a snapshot)"};
    if (!o->second) {
      // Refused in the log's order: another change of the topic came first.
      auto why = catalog_.check(c);
      return why ? error{errc::conflict, "the " + what + " lost to a change decided first"} : why.err();
    }
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
  carry_out(now);
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
  carry_out(r);
  return {};
}

void topic_directory::apply_entry(const raft::entry& e) {
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
  if (applied) carry_out(*applied);
}

void topic_directory::restore(std::string_view snapshot) {
  rapidjson::Document d;
  topic_catalog c;
  if (json::parse_object(snapshot, d))
    if (auto read = wire::read_catalog(d, "snapshot")) c = std::move(*read);
  {
    std::lock_guard lock(mu_);
    catalog_ = c;
    outcomes_.clear();
  }
  for (const auto& r : c.records()) carry_out(r);
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

void topic_directory::carry_out(const topic_record& r) {
  std::lock_guard topics(p_.gates.topics());  // never interleaved with a client's or a peer's ensure
  auto had = p_.store.partition_count(r.name);
  if (r.deleted) {
    // First the partitions' ownership history, on every broker (a topic made again under the name starts afresh).
    if (auto s = p_.ownership.forget_topic(r.name); !s)
      p_.log.error("topics", "topic '" + r.name + "' is deleted but its ownership entries here remain: " + s.message());
    if (!had) return;
    // Every partition's gate, held exclusively: no append, migration copy or commit runs in a log being removed.
    std::vector<std::unique_lock<std::shared_mutex>> held;
    for (std::int32_t i = 0; i < *had; ++i) held.emplace_back(p_.gates.gate({r.name, i}));
    if (auto s = p_.store.remove_topic(r.name); !s)
      p_.log.error("topics", "topic '" + r.name + "' is deleted but its logs here could not be removed: " + s.message());
    else
      p_.log.info("topics", "topic '" + r.name + "' deleted: its logs here are removed");
    return;
  }
  const std::int32_t from = had ? *had : 0;
  if (from >= r.partitions()) return;
  const bool mine = std::find(r.owners.begin(), r.owners.end(), p_.self) != r.owners.end();
  if (!mine && !had) return;  // nothing of it lives here
  // The partitions about to be created here that another broker owns are recorded as that broker's first, so that
  // no produce ever lands in this broker's empty namesake of one.
  std::vector<ownership_entry> theirs;
  for (std::int32_t i = from; i < r.partitions(); ++i) {
    const broker_id& owner = r.owners[static_cast<std::size_t>(i)];
    if (owner != p_.self && !p_.ownership.entry({r.name, i})) theirs.push_back({{r.name, i}, owner, 0, false});
  }
  if (auto s = p_.ownership.record_all(theirs); !s) {
    p_.log.error("topics", "topic '" + r.name + "': cannot record its partitions' owners here: " + s.message());
    return;
  }
  if (auto n = p_.store.ensure_topic(r.name, r.partitions()); !n)
    p_.log.error("topics", "topic '" + r.name + "': cannot create its partitions here: " + n.message());
}

}  // namespace moonmq::cluster
