#include "moonmq/cluster/reassigner.hpp"
#include "moonmq/cluster/peer_fanout.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/this_coro.hpp>
#include <chrono>
#include <deque>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <stdexcept>

#include "json/parse.hpp"
#include "json/writer.hpp"
#include "moonmq/cluster/cluster_metrics.hpp"
#include "moonmq/core/crc32c.hpp"
#include "moonmq/core/offload.hpp"
#include "moonmq/core/runtime_sleep.hpp"
#include "moonmq/core/fault_points.hpp"
#include "moonmq/cluster/copy_throttle.hpp"
#include "wire_owner.hpp"

namespace moonmq::cluster {

using transport::request;
using transport::response;

namespace {

reassigner_options checked(reassigner_options o) {
  if (!o.rt) throw std::invalid_argument("reassigner_options::rt is required");
  return o;
}

constexpr const char* cancelled_by_operator = "cancelled by an operator";

/// Finished moves progress() keeps showing (and hand_moves keeps across a restart).
constexpr std::size_t max_finished = 100;

/// Whether a move at `step` has not begun its cutover: a cancel can still roll it back.
bool before_cutover(const std::string& step) {
  return step == "starting" || step == "ensure" || step == "check" || step == "reserve" || step == "copy";
}

std::string quoted(const std::string& s) {
  rapidjson::StringBuffer buf;
  json::writer w(buf);
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
  return std::string(buf.GetString(), buf.GetSize());
}

/// A peer's answer as an error naming the peer and the step.
error step_error(const std::string& peer, const std::string& step, const response& r) {
  return error{transport::error_of(r).code, step + " on " + peer + " failed: " + describe_answer(r)};
}

/// Why broker `self` does not serve `tp`, naming who does.
std::string not_served_reason(const ownership_table& t, const topic_partition& tp, const broker_id& self) {
  auto e = entry_as_seen_by(t, tp, self);
  if (!t.ready()) return self.value() + " is catching up with the cluster's ownership log";
  if (e.owner == self) return name_of(tp) + " is being handed over to " + self.value() + " (version " +
                              std::to_string(e.version) + ")";
  return name_of(tp) + " is served by " + e.owner.value() + " (version " + std::to_string(e.version) + "), not by " +
         self.value();
}

std::optional<std::uint64_t> json_u64(const std::string& body, const char* key) {
  rapidjson::Document d;
  if (!json::parse_object(body, d) || !d.HasMember(key) || !d[key].IsUint64()) return std::nullopt;
  return d[key].GetUint64();
}

}  // namespace

struct reassigner::impl {
  impl(reassigner_options o, cluster_state s, transport::peer_client& p, move_journal& j, asio::any_io_executor b)
      : opt(checked(std::move(o))), st(s), peers(p), journal(j), pool(b) {}

  reassigner_options opt;
  cluster_state st;
  transport::peer_client& peers;
  move_journal& journal;
  asio::any_io_executor pool;
  copy_throttle throttle{opt.throttle_bytes_per_sec};
  std::shared_ptr<void> alive = std::make_shared<char>();  ///< expires with the reassigner (see run_started)

  mutable std::mutex mu;
  std::map<topic_partition, std::shared_ptr<move_progress>> running;
  std::set<topic_partition> recovering;  ///< journaled moves recover() is resolving: no new move of them meanwhile
  std::map<topic_partition, move_progress> resuming;  ///< hand moves listed before a restart, not started yet
  std::deque<move_progress> finished;
  // Ids start from the clock so that a restarted broker does not reuse the ids of its previous life.
  std::uint64_t next_id = static_cast<std::uint64_t>(opt.rt->wall_ms()) * 1000;

  /// Wall seconds, as progress shows them.
  double now_seconds() const { return static_cast<double>(opt.rt->wall_ms()) / 1000.0; }
  copy_throttle::clock::time_point throttle_now() const {
    return copy_throttle::clock::time_point(std::chrono::milliseconds(opt.rt->steady_ms()));
  }

  void log(const move_progress& p, const std::string& what) {
    st.log.info("reassigner",
                "move " + name_of(p.partition) + " " + peers.directory().self.value() + "->" + p.dest + ": " + what);
  }

  void set_step(move_progress& p, const char* step) {
    {
      std::lock_guard lock(mu);
      p.step = step;
      p.last_activity_at = now_seconds();
      p.waiting_for.clear();
    }
    log(p, std::string("step ") + step);
  }

  void add_copied(move_progress& p, std::uint64_t n) {
    {
      std::lock_guard lock(mu);
      p.bytes_copied += n;
      p.last_activity_at = now_seconds();
    }
    st.metrics.add(metrics::move_bytes, {}, static_cast<double>(n));
  }

  void waiting(move_progress& p, std::string what) {
    std::lock_guard lock(mu);
    p.waiting_for = std::move(what);
  }

  /// A cancelled move stops at the next check before its cutover (an error the caller returns as is).
  status check_cancel(const move_progress& p) {
    std::lock_guard lock(mu);
    if (p.cancel_requested) return {errc::conflict, cancelled_by_operator};
    return {};
  }

  /// The cutover step begins only if no cancel came first; after it a cancel is refused (both under `mu`).
  status enter_cutover(move_progress& p) {
    {
      std::lock_guard lock(mu);
      if (p.cancel_requested) return {errc::conflict, cancelled_by_operator};
      p.step = "cutover";
      p.last_activity_at = now_seconds();
      p.waiting_for.clear();
    }
    log(p, "step cutover");
    return {};
  }

  /// Waits until the throttle lets `bytes` go, in short slices (a new rate applies at once). A cancel ends the wait
  /// when `cancellable`.
  asio::awaitable<status> pace(move_progress& p, std::uint64_t bytes, bool cancellable) {
    bool noted = false;
    while (true) {
      auto wait = throttle.take(bytes, throttle_now());
      if (wait == copy_throttle::clock::duration::zero()) break;
      if (cancellable)
        if (auto c = check_cancel(p); !c) co_return c;
      if (!noted) {
        waiting(p, "throttle: " + std::to_string(throttle.rate()) + " bytes/s for the cluster's copies");
        noted = true;
      }
      co_await sleep_on(*opt.rt, std::chrono::ceil<std::chrono::milliseconds>(wait));
    }
    co_return status{};
  }

  /// Registers a move of `tp` (refused when one is running); the caller then runs it with `finish_after`.
  result<std::shared_ptr<move_progress>> begin(const topic_partition& tp, const broker_id& dest,
                                               std::optional<std::uint64_t> id = {}) {
    auto p = std::make_shared<move_progress>();
    p->partition = tp;
    p->source = peers.directory().self.value();
    p->dest = dest.value();
    p->step = "starting";
    p->started_at = now_seconds();
    p->last_activity_at = p->started_at;
    std::lock_guard lock(mu);
    if (running.count(tp)) return error{errc::conflict, name_of(tp) + " is already moving"};
    if (recovering.count(tp))
      return error{errc::conflict, name_of(tp) + " has an interrupted move being resolved; try again shortly"};
    p->id = id ? *id : next_id++;
    running[tp] = p;
    resuming.erase(tp);
    st.metrics.set(metrics::moves_in_progress, static_cast<double>(running.size()));
    return p;
  }

  /// Runs a registered move and records how it ended.
  asio::awaitable<status> finish_after(std::shared_ptr<move_progress> p, std::optional<controller_claim> claim) {
    const topic_partition tp = p->partition;
    status s = co_await run(*p, tp, broker_id(p->dest), claim);
    bool cancelled = false;
    {
      std::lock_guard lock(mu);
      // Only the cancel itself counts: another failure while a cancel was pending (a destination that holds other
      // data, a reservation refused) keeps whatever it found.
      cancelled = !s.ok() && p->cancel_requested && before_cutover(p->step) && s.message() == cancelled_by_operator;
    }
    if (cancelled) {
      // Rolled back: ownership never left this broker; the destination's partial copy is given back to its disk.
      auto discarded = co_await discard_copy(tp, broker_id(p->dest));
      s = status{errc::conflict, "cancelled by an operator before its cutover; " + p->source + " kept serving " +
                                     name_of(tp) + "; " +
                                     (discarded ? "the copy on " + p->dest + " was discarded"
                                                : "the copy on " + p->dest + " was NOT discarded (" +
                                                      discarded.message() + "); a later move there resumes from it")};
    }
    {
      std::lock_guard lock(mu);
      p->finished = true;
      p->succeeded = s.ok();
      p->step = s.ok() ? "done" : cancelled ? "cancelled" : "failed";
      p->error = s.ok() ? "" : s.message();
      p->waiting_for.clear();
      p->finished_at = now_seconds();
      finished.push_back(*p);
      while (finished.size() > max_finished) finished.pop_front();
      running.erase(tp);
      st.metrics.set(metrics::moves_in_progress, static_cast<double>(running.size()));
    }
    st.metrics.add(metrics::moves, {{"result", s.ok() ? "succeeded" : cancelled ? "cancelled" : "failed"}}, 1);
    st.metrics.observe(metrics::move_duration, {}, p->finished_at - p->started_at);
    log(*p, s.ok() ? "done" : (cancelled ? "cancelled: " : "failed: ") + s.message());
    if (opt.on_finished) opt.on_finished(*p);
    co_return s;
  }

  /// Asks `dest` to discard its copy of `tp` (it refuses when it serves the partition or is being handed it).
  asio::awaitable<status> discard_copy(const topic_partition& tp, const broker_id& dest) {
    auto resp = co_await peers.call(dest.value(), req("POST", "/cluster/discard", tp));
    if (resp.ok()) co_return status{};
    status failed = step_error(dest.value(), "discard", resp);
    co_return failed;
  }

  request req(const char* method, const char* path, const topic_partition& tp) {
    request r;
    r.method = method;
    r.path = path;
    r.params = {{"topic", tp.topic}, {"partition", std::to_string(tp.partition)}};
    return r;
  }

  /// Copies local frames [from, until) to `dest`, batch by batch; returns the offset reached. The next batch is
  /// read while the current one is in flight, so the local read never adds to a batch's round trip.
  /// The copy before the cutover is `cancellable` and waits for the throttle; the drain after it is neither (its
  /// bytes still count against the throttle, and the copies after it wait for them), because nobody serves the
  /// partition while it runs.
  asio::awaitable<result<std::uint64_t>> copy(move_progress& p, const topic_partition& tp, const std::string& dest,
                                              std::uint64_t from, std::uint64_t until, bool sync_at_end,
                                              bool cancellable) {
    using namespace asio::experimental::awaitable_operators;
    auto read_at = [this, &tp](std::uint64_t offset) {
      return [this, &tp, offset] { return st.store.read(tp, offset, opt.batch_bytes); };
    };
    std::uint64_t at = from;
    result<storage::read_result> batch = error{errc::internal, "nothing read"};
    if (at < until) batch = co_await offload(pool, read_at(at));
    while (at < until) {
      if (!batch) co_return batch.err();
      if (batch->bytes.empty()) break;
      if (cancellable) {
        if (auto c = check_cancel(p); !c) co_return c.err();
        auto paced = co_await pace(p, batch->bytes.size(), true);
        if (!paced) co_return paced.err();
      } else {
        throttle.spend(batch->bytes.size(), throttle_now());
      }
      waiting(p, dest + ": append at " + std::to_string(at));
      request r = req("POST", "/cluster/append", tp);
      r.params["expected_offset"] = std::to_string(at);
      r.content_type = "application/octet-stream";
      r.body.assign(batch->bytes.data(), batch->bytes.size());
      const std::uint64_t next = batch->next_offset;
      response resp;
      if (next < until) {
        auto both = co_await (peers.call(dest, std::move(r)) && offload(pool, read_at(next)));
        resp = std::move(std::get<0>(both));
        batch = std::move(std::get<1>(both));
      } else {
        resp = co_await peers.call(dest, std::move(r));
      }
      if (resp.status == 412) {
        // The batch may have landed and only its answer been lost: then dest ends exactly after it.
        auto end = json_u64(resp.body, "end_offset");
        if (!end || *end != next) co_return step_error(dest, "append at " + std::to_string(at), resp);
      } else if (!resp.ok()) {
        co_return step_error(dest, "append at " + std::to_string(at), resp);
      }
      add_copied(p, next - at);
      at = next;
    }
    if (sync_at_end) {
      request r = req("POST", "/cluster/append", tp);
      r.params["expected_offset"] = std::to_string(at);
      r.params["sync"] = "1";
      r.content_type = "application/octet-stream";
      auto resp = co_await peers.call(dest, std::move(r));
      if (!resp.ok()) co_return step_error(dest, "sync", resp);
    }
    co_return at;
  }

  /// The incarnation of tp's topic now (0: unlisted, or not checked).
  std::uint64_t incarnation_now(const topic_partition& tp) const {
    return opt.incarnation_of ? opt.incarnation_of(tp.topic) : 0;
  }
  /// Whether the topic a move started on (at `incarnation`) was deleted since: its move is dropped, never decided. A
  /// catalog that does not list the topic (yet: a broker catching up with the Raft log after a start) says nothing.
  bool outlived(const topic_partition& tp, std::uint64_t incarnation) const {
    if (incarnation == 0 || !opt.incarnation_of) return false;
    const std::uint64_t now = opt.incarnation_of(tp.topic);
    return now != 0 && now != incarnation;
  }
  /// Drops the journal entry of a move whose topic was deleted, with a log line; the error the move ends with.
  status drop_outlived(const topic_partition& tp, std::uint64_t version) {
    (void)journal.remove(tp, version);
    st.log.warn("reassigner", "the move of " + name_of(tp) + " is dropped: its topic was deleted (or made again) "
                                  "while it ran, and nothing is decided for a later topic of the name");
    return {errc::not_found, "the topic of " + name_of(tp) + " was deleted while it moved"};
  }

  /// The cutover: under the partition's gate (exclusive: waits for appends in flight, stops new ones), `tp` goes
  /// from this broker at `version` to `dest` in handover at version + 1. The handover is recorded here before it is
  /// decided, so that a decision whose outcome is not known leaves the partition served by nobody here.
  status cut_over(const topic_partition& tp, const broker_id& dest, std::uint64_t version) {
    std::unique_lock gate(st.gates.gate(tp));
    const broker_id& self = peers.directory().self;
    auto now = entry_as_seen_by(st.ownership, tp, self);
    if (!serves(st.ownership, tp, self) || now.version != version)
      return {errc::conflict, "cutover refused: " + not_served_reason(st.ownership, tp, self) + " at version " +
                                  std::to_string(version) + " any more"};
    // Its log removed meanwhile (the topic was deleted): nothing is handed over, so that no ownership entry of a
    // deleted topic is made to outlive it.
    if (!st.store.end_offset(tp))
      return {errc::conflict, "cutover refused: the log of " + name_of(tp) + " is gone here (its topic was deleted)"};
    const ownership_entry handover{tp, dest, version + 1, true};
    if (auto s = st.ownership.record(handover); !s) return s;
    auto decided = st.ownership.decide(handover, {version, false});
    // Only this broker makes version + 1, so a refusal here cannot be another broker's decision: whatever it was, the
    // handover is recorded here and the outcome is resolved like an unknown one (rolled back through the table).
    if (!decided && decided.code() == errc::conflict) return {errc::unavailable, decided.message()};
    return decided;
  }

  /// Rolls back a move at `version` (its cutover's) that no confirm was ever sent for: this broker again, at
  /// version + 1. Decided like the cutover, so under Raft every broker learns it from the log.
  status roll_back(const topic_partition& tp, std::uint64_t version) {
    if (auto f = MOONMQ_FAULT("reassigner.before_rollback"); !f) return f;
    std::unique_lock gate(st.gates.gate(tp));
    const ownership_entry back{tp, peers.directory().self, version + 1, false};
    auto decided = st.ownership.decide(back, {version, true});
    if (decided) return MOONMQ_FAULT("reassigner.after_rollback");  // decided; an error: the journal entry stays
    return decided;
  }

  /// Without Raft, tells the destination (best effort) that a move at `version` was rolled back, so that a confirm for
  /// that version could never be recorded there even if one existed. Under Raft every broker learns it from the log.
  asio::awaitable<void> tell_rolled_back(const topic_partition& tp, const broker_id& dest, std::uint64_t version) {
    if (st.ownership.replicated()) co_return;
    request r = req("POST", "/cluster/owner", tp);
    r.params.clear();
    r.body = wire::write(wire::owner_change{{tp, peers.directory().self, version + 1, false}, ownership_point{version, true}});
    auto resp = co_await peers.call(dest.value(), std::move(r));
    if (!resp.ok())
      st.log.info("reassigner", "could not tell " + dest.value() + " that the move of " + name_of(tp) +
                                    " was rolled back (it learns at the next move): " + resp.body);
  }

  /// The offsets step: every group's committed offset for `tp` goes to `dest` (higher wins there). Commits here are
  /// refused since the cutover, so the snapshot is complete. The move is not confirmed until `dest` holds them: a
  /// destination that owned the partition before keeps the offsets of that time, and would answer with them, older
  /// than what the groups committed here since (a committed offset going back).
  asio::awaitable<status> push_offsets(const topic_partition& tp, const broker_id& dest,
                                       std::optional<controller_claim> claim) {
    auto groups = st.offsets.groups_for(tp);
    if (groups.empty()) co_return status{};
    request r = req("POST", "/cluster/offsets", tp);
    r.params.clear();
    r.body = wire::write(wire::offsets_push{tp, groups});
    auto resp = co_await peers.call(dest.value(), std::move(r), claim);
    if (resp.ok()) co_return status{};
    // A refusal of the request itself is no passing fault: sending it again cannot help, and the partition stays in
    // handover until an operator looks. Said loudly, once per attempt.
    if (resp.status >= 400 && resp.status < 500 && resp.status != 408 && resp.status != 429)
      st.log.error("reassigner", dest.value() + " refused the committed offsets of " + name_of(tp) + " (" +
                                     describe_answer(resp) + "): the partition stays in handover until it takes them");
    co_return status{errc::unavailable, "the committed offsets of " + std::to_string(groups.size()) +
                                            " groups were not taken by " + dest.value() + ": " +
                                            describe_answer(resp)};
  }

  enum class confirmation { confirmed, unknown };

  /// The confirm step: `dest` owns `tp` at `version`, out of handover. Under Raft the log decides it; otherwise the
  /// destination does (a compare-and-set on its table: it refuses a confirm for a version it has moved past). A
  /// refusal naming a newer entry means the move was confirmed and the partition has moved on since: this broker
  /// records what it learned.
  asio::awaitable<confirmation> confirm(const topic_partition& tp, const broker_id& dest, std::uint64_t version,
                                        std::optional<controller_claim> claim, std::string* why) {
    const ownership_entry confirmed{tp, dest, version, false};
    if (st.ownership.replicated()) {
      auto s = co_await offload(pool, [&] { return st.ownership.decide(confirmed, {version, true}); });
      auto now = st.ownership.entry(tp);
      if (s || (now && now->version > version)) co_return confirmation::confirmed;
      *why = s.message();
      co_return confirmation::unknown;
    }
    request r = req("POST", "/cluster/owner", tp);
    r.params.clear();
    r.body = wire::write(wire::owner_change{confirmed, ownership_point{version, true}});
    auto resp = co_await peers.call(dest.value(), std::move(r), claim);
    std::optional<ownership_entry> learned;
    if (resp.ok())
      learned = confirmed;
    else if (auto c = wire::read_owner_conflict(resp, tp); c && c->version >= version)
      learned = c;
    if (!learned) {
      *why = describe_answer(resp);
      co_return confirmation::unknown;
    }
    // Newer than the handover recorded at cutover, so it is recorded; an error here only leaves the older entry. An
    // entry naming this broker is not: that is a move towards this broker, whose own records decide it here.
    if (learned->owner == peers.directory().self) co_return confirmation::confirmed;
    auto recorded = co_await offload(pool, [&] { return st.ownership.record(*learned); });
    if (!recorded && recorded.code() != errc::conflict)
      st.log.error("reassigner", "could not record the confirmed owner of " + name_of(tp) + ": " + recorded.message());
    co_return confirmation::confirmed;
  }

  /// Resolves the journaled move of `tp` (REQUIRES: registered in `recovering`). Returns false while unresolved.
  asio::awaitable<bool> resolve(topic_partition tp) {
    std::optional<pending_move> found;
    for (const auto& m : journal.pending())
      if (m.partition == tp) found = m;
    if (!found) co_return true;  // resolved meanwhile
    const pending_move m = *found;
    const broker_id& self = peers.directory().self;
    const std::string name = name_of(tp) + " to " + m.dest.value();
    if (outlived(tp, m.incarnation)) {
      (void)co_await offload(pool, [&] { return drop_outlived(tp, m.version); });
      co_return true;
    }
    if (m.legacy) {
      bool done = co_await resolve_legacy(m);
      co_return done;
    }
    if (!m.drained) {
      // No confirm was ever sent for this version: the destination cannot serve it. Roll back.
      auto back = co_await offload(pool, [&] { return roll_back(tp, m.version); });
      auto now = st.ownership.entry(tp);
      if (!back && !(now && now->version > m.version)) {
        st.log.warn("reassigner", "journaled move of " + name + " is unresolved: " + back.message());
        co_return false;
      }
      st.log.warn("reassigner", "move of " + name + " was interrupted before its tail was drained; ownership " +
                                    (back ? "rolled back to " + self.value()
                                          : "has moved on since (" + now->owner.value() + ")"));
      if (back) co_await tell_rolled_back(tp, m.dest, m.version);
    } else {
      // The move goes forward: the offsets (a crash may have come before they were pushed), then the confirm. An
      // entry that says the move was confirmed (or that the partition has moved on since; under Raft the log
      // decides it) means the destination took the offsets before the confirm, and need not take them again: a
      // destination that now refuses them cannot wedge a decided move.
      const auto now = st.ownership.entry(tp);
      const bool decided = now && newer_than(*now, ownership_entry{tp, m.dest, m.version, true});
      // (No co_await inside a conditional expression: GCC 12 destroys its temporaries twice.)
      status pushed;
      if (!decided) pushed = co_await push_offsets(tp, m.dest, std::nullopt);
      // Without Raft the destination decides a confirm, and its answer may have been lost: if it holds the move
      // confirmed, the offsets went before that confirm, and a destination that now refuses them cannot hold the
      // move back (the confirm below learns the decision).
      if (!pushed && !st.ownership.replicated() && co_await confirmed_on(tp, m.dest, m.version)) pushed = status{};
      if (!pushed) {
        st.log.warn("reassigner", "journaled move of " + name + " is not confirmed yet: " + pushed.message());
        co_return false;
      }
      std::string why;
      if (co_await confirm(tp, m.dest, m.version, std::nullopt, &why) != confirmation::confirmed) {
        st.log.warn("reassigner", "journaled move of " + name + " is not confirmed yet: " + why);
        co_return false;
      }
      st.log.info("reassigner", "move of " + name + " is confirmed");
    }
    (void)co_await offload(pool, [&] { return journal.remove(tp, m.version); });
    co_return true;
  }

  /// Whether `dest` says it owns `tp`, confirmed, at `version` or later (GET /cluster/owner); false when it does not
  /// answer.
  asio::awaitable<bool> confirmed_on(const topic_partition& tp, const broker_id& dest, std::uint64_t version) {
    auto report = wire::read_owner_report(co_await peers.call(dest.value(), req("GET", "/cluster/owner", tp)), tp);
    if (!report || !report->entry) co_return false;
    const ownership_entry& there = *report->entry;
    // Confirmed there, or moved on from there since (a later version names whoever has it now).
    co_return newer_than(there, ownership_entry{tp, dest, version, true}) &&
        (there.owner == dest || there.version > version);
  }

  /// A journal entry written before ownership versions: resolved as that code did, by asking whether the destination
  /// serves the partition (confirmed) or still names this broker (rolled back here, above whatever entry is here).
  asio::awaitable<bool> resolve_legacy(const pending_move& m) {
    auto report =
        wire::read_owner_report(co_await peers.call(m.dest.value(), req("GET", "/cluster/owner", m.partition)), m.partition);
    if (!report) {
      st.log.warn("reassigner", "journaled move of " + name_of(m.partition) + " to " + m.dest.value() +
                                    " (written by an older version) is unresolved: " + m.dest.value() +
                                    " did not answer");
      co_return false;
    }
    if (!report->serves) {
      auto back = co_await offload(pool, [&] {
        std::unique_lock gate(st.gates.gate(m.partition));
        auto now = entry_as_seen_by(st.ownership, m.partition, peers.directory().self);
        return st.ownership.decide({m.partition, peers.directory().self, now.version + 1, false},
                                   {now.version, now.handover});
      });
      if (!back) co_return false;
    }
    (void)co_await offload(pool, [&] { return journal.remove(m.partition, m.version); });
    co_return true;
  }

  asio::awaitable<status> run(move_progress& p, topic_partition tp, broker_id dest,
                              std::optional<controller_claim> claim) {
    const broker_id& self = peers.directory().self;
    if (is_internal_topic(tp.topic))
      co_return status{errc::invalid_argument, "internal topic " + name_of(tp) + " never moves"};
    if (dest == self) co_return status{errc::invalid_argument, name_of(tp) + " is already on " + self.value()};
    if (!serves(st.ownership, tp, self)) co_return status{errc::not_owner, not_served_reason(st.ownership, tp, self)};
    auto count = st.store.partition_count(tp.topic);
    if (!count) co_return count.to_status();
    if (tp.partition >= *count) co_return status{errc::not_found, "unknown partition " + name_of(tp)};
    // The ownership version this broker serves the partition at: the move gives dest version + 1 (cut_over checks
    // that it is still this one).
    const std::uint64_t version = entry_as_seen_by(st.ownership, tp, self).version;
    const std::uint64_t incarnation = incarnation_now(tp);  // checked before every decision

    set_step(p, "ensure");
    {
      request r = req("POST", "/cluster/ensure", tp);
      r.params.clear();
      r.body = "{\"topic\":" + quoted(tp.topic) + ",\"partitions\":" + std::to_string(*count);
      if (opt.topic_record)
        if (auto record = opt.topic_record(tp.topic)) r.body += ",\"record\":" + *record;
      r.body += "}";
      auto resp = co_await peers.call(dest.value(), std::move(r), claim);
      if (!resp.ok()) co_return step_error(dest.value(), "ensure", resp);
    }

    if (auto c = check_cancel(p); !c) co_return c;
    set_step(p, "check");
    std::uint64_t dest_end = 0;
    {
      auto resp = co_await peers.call(dest.value(), req("GET", "/cluster/partition", tp));
      auto end = json_u64(resp.body, "end_offset");
      if (!resp.ok() || !end) co_return step_error(dest.value(), "partition state", resp);
      dest_end = *end;
    }
    if (dest_end > 0) {
      auto local = co_await offload(pool, [&] { return storage::prefix_crc32c(st.store, tp, dest_end); });
      request r = req("GET", "/cluster/partition", tp);
      r.params["upto"] = std::to_string(dest_end);
      auto resp = co_await peers.call(dest.value(), std::move(r));
      auto remote = json_u64(resp.body, "crc32c");
      if (!local || !resp.ok() || !remote || *remote != *local)
        co_return status{errc::already_exists,
                         "destination " + dest.value() + " already holds " + std::to_string(dest_end) + " bytes of " +
                             name_of(tp) + " that are not a prefix of this partition; refusing to move onto it"};
      log(p, "resuming onto an identical prefix of " + std::to_string(dest_end) + " bytes");
    }

    if (auto c = check_cancel(p); !c) co_return c;
    set_step(p, "reserve");
    {
      request r = req("POST", "/cluster/owner", tp);
      r.params.clear();
      r.body = wire::write(wire::owner_change{{tp, self, version, false}, ownership_point{version, false}});
      auto resp = co_await peers.call(dest.value(), std::move(r), claim);
      if (auto newer = wire::read_owner_conflict(resp, tp); newer && newer->version > version && newer->owner != self) {
        // The destination knows a newer owner than this broker does: step aside.
        (void)co_await offload(pool, [&] { return st.ownership.record(*newer); });
        co_return step_error(dest.value(), "reserve", resp);
      }
      if (!resp.ok()) co_return step_error(dest.value(), "reserve", resp);
    }
    if (auto f = MOONMQ_FAULT("reassigner.after_reserve"); !f) co_return f;

    if (auto c = check_cancel(p); !c) co_return c;
    set_step(p, "copy");
    auto end_now = st.store.end_offset(tp);
    if (!end_now) co_return end_now.to_status();
    {
      std::lock_guard lock(mu);
      p.bytes_copied = dest_end;
      p.bytes_total = *end_now;
    }
    {
      std::lock_guard lock(mu);
      p.resumed_from = dest_end;
      p.copy_started_at = now_seconds();
    }
    auto copied = co_await copy(p, tp, dest.value(), dest_end, *end_now, true, true);
    if (!copied) co_return copied.to_status();
    if (auto f = MOONMQ_FAULT("reassigner.after_copy"); !f) co_return f;

    if (auto c = enter_cutover(p); !c) co_return c;
    const pending_move journaled{tp, dest, version + 1, false, false, incarnation};
    if (auto s = co_await offload(pool, [&] { return journal.add(journaled); }); !s) co_return s;
    // Journaled, nothing decided: an error here leaves the entry for recovery to resolve (as a crash would).
    if (auto f = MOONMQ_FAULT("reassigner.before_cutover"); !f) co_return f;
    if (outlived(tp, incarnation)) co_return co_await offload(pool, [&] { return drop_outlived(tp, version + 1); });
    if (auto s = co_await offload(pool, [&] { return cut_over(tp, dest, version); }); !s) {
      // A cutover whose decision failed may still take effect (a replicated entry can commit after the wait for it
      // gave up): it is rolled back by a decision of its own, after it in the log. Only once that holds may the
      // journal entry go; otherwise the partition stays served by nobody here and recovery decides it later.
      if (s.code() == errc::conflict) {  // refused before anything was recorded
        (void)co_await offload(pool, [&] { return journal.remove(tp, version + 1); });
        co_return s;
      }
      if (outlived(tp, incarnation)) co_return co_await offload(pool, [&] { return drop_outlived(tp, version + 1); });
      if (co_await offload(pool, [&] { return roll_back(tp, version + 1); }))
        (void)co_await offload(pool, [&] { return journal.remove(tp, version + 1); });
      co_return s;
    }

    set_step(p, "drain");
    auto tail_end = st.store.end_offset(tp);
    {
      std::lock_guard lock(mu);
      if (tail_end) p.bytes_total = *tail_end;
    }
    // (No co_await inside a conditional expression: GCC 12 miscompiles that into a double destruction.)
    result<std::uint64_t> drained = error{errc::internal, "not drained"};
    if (auto f = MOONMQ_FAULT("reassigner.after_cutover"); !f)
      drained = f.err();  // handled as a failed drain: rolled back
    else if (tail_end)
      drained = co_await copy(p, tp, dest.value(), *copied, *tail_end, true, false);
    else
      drained = tail_end.err();
    status marked{};
    if (drained) {
      pending_move done = journaled;
      done.drained = true;
      marked = co_await offload(pool, [&] { return journal.add(done); });
      if (marked) marked = MOONMQ_FAULT("reassigner.after_drain");
    }
    if (!drained || !marked) {
      // No confirm has been sent: the destination can never serve this version, so the move is rolled back.
      const std::string why = drained ? "the journal could not record the drain: " + marked.message() : drained.message();
      st.log.error("reassigner", "move " + name_of(tp) + ": drain failed, rolling ownership back: " + why);
      if (outlived(tp, incarnation)) co_return co_await offload(pool, [&] { return drop_outlived(tp, version + 1); });
      auto back = co_await offload(pool, [&] { return roll_back(tp, version + 1); });
      if (back) {
        (void)co_await offload(pool, [&] { return journal.remove(tp, version + 1); });
        co_await tell_rolled_back(tp, dest, version + 1);
      } else
        st.log.error("reassigner", "rollback of " + name_of(tp) + " failed; kept in the journal: " + back.message());
      co_return status{errc::unavailable, "drain of " + name_of(tp) + " failed: " + why};
    }

    set_step(p, "offsets");
    status pushed = co_await push_offsets(tp, dest, claim);
    for (int attempt = 1; attempt < 3 && !pushed; ++attempt) {
      if (opt.offsets_retry.count() > 0) co_await sleep_on(*opt.rt, opt.offsets_retry * attempt);
      if (outlived(tp, incarnation)) co_return co_await offload(pool, [&] { return drop_outlived(tp, version + 1); });
      pushed = co_await push_offsets(tp, dest, claim);
    }
    if (!pushed)  // the partition stays in handover (served nowhere) until the destination takes them
      co_return status{errc::unavailable, "move " + name_of(tp) + ": " + pushed.message() +
                                              "; the move stays journaled and is confirmed once " + dest.value() +
                                              " holds them"};

    // From here the move only goes forward: a confirm may reach the destination at any time, so a rollback could
    // make two servers. An unanswered confirm is sent again by recover() until an answer decides it.
    set_step(p, "confirm");
    std::string why;
    confirmation c = confirmation::unknown;
    if (auto f = MOONMQ_FAULT("reassigner.before_confirm"); !f) {
      why = f.message();  // as if no confirm got an answer: recovery confirms it later
    } else {
      for (int attempt = 0; attempt < 3 && c != confirmation::confirmed; ++attempt) {
        if (outlived(tp, incarnation)) co_return co_await offload(pool, [&] { return drop_outlived(tp, version + 1); });
        c = co_await confirm(tp, dest, version + 1, claim, &why);
      }
    }
    if (c != confirmation::confirmed)
      co_return status{errc::unavailable, "confirm on " + dest.value() +
                                              " failed; the move stays journaled and is confirmed when " +
                                              dest.value() + " answers: " + why};
    // Confirmed, still journaled: an error leaves the entry for recovery, which finds the move decided.
    if (auto f = MOONMQ_FAULT("reassigner.after_confirm"); !f) co_return f;
    if (auto s = co_await offload(pool, [&] { return journal.remove(tp, version + 1); }); !s)
      st.log.error("reassigner", "could not clear the journal entry of " + name_of(tp) + ": " + s.message());
    co_return status{};
  }
};

reassigner::reassigner(reassigner_options options, cluster_state state, transport::peer_client& peers, move_journal& journal,
                       asio::any_io_executor blocking)
    : impl_(std::make_unique<impl>(options, state, peers, journal, blocking)) {}

reassigner::~reassigner() = default;

runtime& reassigner::rt() const { return *impl_->opt.rt; }

asio::awaitable<status> reassigner::move(topic_partition tp, broker_id dest, std::optional<controller_claim> claim) {
  auto p = impl_->begin(tp, dest);
  if (!p) {
    status refused = p.err();
    co_return refused;
  }
  status s = co_await impl_->finish_after(std::move(*p), claim);
  co_return s;
}

namespace {

/// A started move, then, if it failed with its journal entry left behind, the journal resolved in the background
/// (every 5 s until the destination answers). `alive` expires with the reassigner: a retry that wakes after it (an
/// embedding that rebuilt it, as a simulated restart does) touches nothing.
asio::awaitable<void> run_started(reassigner& r, runtime& rt, move_journal& journal, std::weak_ptr<void> alive,
                                  asio::awaitable<status> move, topic_partition tp) {
  status s = co_await std::move(move);
  if (s) co_return;
  auto journaled = [&] {
    for (const auto& m : journal.pending())
      if (m.partition == tp) return true;
    return false;
  };
  while (journaled()) {
    if (co_await r.recover() == 0) co_return;
    co_await sleep_on(rt, std::chrono::seconds(5));
    if (alive.expired()) co_return;
  }
}

}  // namespace

std::uint64_t reassigner::allocate_id() {
  std::lock_guard lock(impl_->mu);
  return impl_->next_id++;
}

void reassigner::expect_resume(const topic_partition& tp, const broker_id& dest, std::uint64_t id) {
  move_progress p;
  p.id = id;
  p.partition = tp;
  p.source = impl_->peers.directory().self.value();
  p.dest = dest.value();
  p.step = "resuming";
  p.started_at = impl_->now_seconds();
  p.last_activity_at = p.started_at;
  std::lock_guard lock(impl_->mu);
  if (!impl_->running.count(tp)) impl_->resuming[tp] = std::move(p);
}

void reassigner::forget_resuming(const topic_partition& tp) {
  std::lock_guard lock(impl_->mu);
  impl_->resuming.erase(tp);
}

void reassigner::restore_finished(std::vector<move_progress> ended) {
  std::lock_guard lock(impl_->mu);
  // Older than anything that ended since the start: in front, in their order.
  impl_->finished.insert(impl_->finished.begin(), std::make_move_iterator(ended.begin()),
                         std::make_move_iterator(ended.end()));
  while (impl_->finished.size() > max_finished) impl_->finished.pop_front();
}

result<std::uint64_t> reassigner::start(const asio::any_io_executor& ex, topic_partition tp, broker_id dest,
                                        std::optional<controller_claim> claim, std::optional<std::uint64_t> id) {
  const broker_id& self = impl_->peers.directory().self;
  if (is_internal_topic(tp.topic)) return error{errc::invalid_argument, "internal topic " + name_of(tp) + " never moves"};
  if (dest == self) return error{errc::invalid_argument, name_of(tp) + " is already on " + self.value()};
  if (!serves(impl_->st.ownership, tp, self)) return error{errc::not_owner, not_served_reason(impl_->st.ownership, tp, self)};
  auto count = impl_->st.store.partition_count(tp.topic);
  if (!count) return count.err();
  if (tp.partition < 0 || tp.partition >= *count) return error{errc::not_found, "unknown partition " + name_of(tp)};
  auto p = impl_->begin(tp, dest, id);
  if (!p) return p.err();
  const std::uint64_t started = (*p)->id;
  asio::co_spawn(ex,
                 run_started(*this, *impl_->opt.rt, impl_->journal, impl_->alive, impl_->finish_after(std::move(*p), claim),
                             std::move(tp)),
                 asio::detached);
  return started;
}

asio::awaitable<status> reassigner::execute(autobalancer::described_action a, std::optional<controller_claim> claim) {
  // Locals, not temporaries, around co_return: GCC 12 destroys temporaries of a coroutine's early return twice.
  const bool ours = a.src == impl_->peers.directory().self.value();
  if (!ours) {
    std::string why = std::string(autobalancer::action_type_name(a.type)) + " of " + a.topic + "-" +
                      std::to_string(a.partition) + " has source " + a.src + ", not this broker";
    status refused{errc::invalid_argument, why};
    co_return refused;
  }
  // Both kinds move the local partition; a SWAP's other half is its own broker's to execute.
  topic_partition tp{a.topic, a.partition};
  broker_id dest(a.dest);
  status s = co_await move(tp, dest, claim);
  co_return s;
}

asio::awaitable<std::size_t> reassigner::recover() {
  std::size_t unresolved = 0;
  auto& i = *impl_;
  for (const auto& listed : i.journal.pending()) {
    // A partition that is moving now is that move's business; one being resolved is another recover()'s.
    {
      std::lock_guard lock(i.mu);
      if (i.running.count(listed.partition) || i.recovering.count(listed.partition)) continue;
      i.recovering.insert(listed.partition);
    }
    auto outcome = co_await i.resolve(listed.partition);
    {
      std::lock_guard lock(i.mu);
      i.recovering.erase(listed.partition);
    }
    if (!outcome) ++unresolved;
  }
  co_return unresolved;
}

std::vector<move_progress> reassigner::progress() const {
  const double now = impl_->now_seconds();
  std::lock_guard lock(impl_->mu);
  std::vector<move_progress> out(impl_->finished.begin(), impl_->finished.end());
  for (const auto& [tp, p] : impl_->resuming) out.push_back(p);
  for (const auto& [tp, p] : impl_->running) {
    move_progress m = *p;
    if (m.copy_started_at > 0 && m.bytes_copied > m.resumed_from) {
      const double elapsed = std::max(1e-3, now - m.copy_started_at);
      m.rate_bytes_per_sec = static_cast<double>(m.bytes_copied - m.resumed_from) / elapsed;
      const double left = m.bytes_total > m.bytes_copied ? static_cast<double>(m.bytes_total - m.bytes_copied) : 0;
      m.eta_seconds = left / m.rate_bytes_per_sec;
    }
    const double idle = now - m.last_activity_at;
    if (idle >= impl_->opt.stall_seconds) {
      m.stalled = true;
      m.stalled_reason = "no progress for " + std::to_string(static_cast<long>(idle)) + " s in step " + m.step +
                         (m.waiting_for.empty() ? "" : "; waiting for " + m.waiting_for);
    }
    out.push_back(std::move(m));
  }
  return out;
}

bool reassigner::busy(const topic_partition& tp) const {
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->running.count(tp) || impl_->recovering.count(tp)) return true;
  }
  for (const auto& m : impl_->journal.pending())
    if (m.partition == tp) return true;
  return false;
}

bool reassigner::idle() const {
  std::lock_guard lock(impl_->mu);
  return impl_->running.empty() && impl_->recovering.empty();
}

status reassigner::cancel(std::uint64_t id) {
  std::lock_guard lock(impl_->mu);
  for (auto& [tp, p] : impl_->running) {
    if (p->id != id) continue;
    if (!before_cutover(p->step))
      return {errc::conflict, "move " + std::to_string(id) + " of " + name_of(tp) + " is past its cutover (step " +
                                  p->step + "): it can no longer be rolled back and finishes on its own"};
    p->cancel_requested = true;
    impl_->log(*p, "cancel requested");
    return {};
  }
  for (const auto& f : impl_->finished)
    if (f.id == id)
      return {errc::conflict, "move " + std::to_string(id) + " of " + name_of(f.partition) + " has already ended (" +
                                  f.step + ")"};
  return {errc::not_found, "no move " + std::to_string(id) + " on " + impl_->peers.directory().self.value()};
}

void reassigner::set_throttle(std::uint64_t bytes_per_sec) {
  impl_->throttle.set_rate(bytes_per_sec);
  impl_->st.log.info("reassigner", "copy throttle " + (bytes_per_sec ? std::to_string(bytes_per_sec) + " bytes/s"
                                                                      : std::string("off")));
}

std::uint64_t reassigner::throttle() const { return impl_->throttle.rate(); }

}  // namespace moonmq::cluster
