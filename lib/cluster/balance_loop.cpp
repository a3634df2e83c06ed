#include "moonmq/cluster/balance_loop.hpp"

#include "moonmq/autobalancer/snapshot_json.hpp"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

#include "json/parse.hpp"
#include "json/writer.hpp"
#include "moonmq/autobalancer/model/cluster_model.hpp"
#include "moonmq/cluster/cluster_metrics.hpp"
#include "moonmq/cluster/peer_fanout.hpp"
#include "moonmq/cluster/counter_rate.hpp"
#include "moonmq/cluster/local_loads.hpp"
#include "moonmq/core/gather.hpp"
#include "moonmq/core/offload.hpp"
#include "moonmq/core/runtime_sleep.hpp"
#include "wire_json.hpp"

namespace moonmq::cluster {

using autobalancer::action_type;
using autobalancer::described_action;
using autobalancer::resource;
using transport::request;
using transport::response;

namespace {

/// Real time in seconds, finer than a millisecond: only to measure how long a pass took (a figure shown to people),
/// never for what the loop decides (that is the runtime's).
double measured_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string describe_text(const described_action& a) {
  std::string s = fmt::format("{} {}-{} {}->{}", autobalancer::action_type_name(a.type), a.topic, a.partition, a.src,
                              a.dest);
  if (a.type == action_type::swap) s += fmt::format(" with {}-{}", a.swap_topic, a.swap_partition);
  return s;
}

/// One partition move a plan asks for (a SWAP asks for two).
struct wanted_move {
  topic_partition partition;
  std::string src;
  std::string dest;
  const char* type;
};

std::vector<wanted_move> moves_of(const described_action& a) {
  const char* type = autobalancer::action_type_name(a.type);
  std::vector<wanted_move> out{{{a.topic, a.partition}, a.src, a.dest, type}};
  if (a.type == action_type::swap) out.push_back({{a.swap_topic, a.swap_partition}, a.dest, a.src, type});
  return out;
}

constexpr int max_unanswered_passes = 10;
constexpr int max_backoff_intervals = 10;

}  // namespace

struct balance_loop::impl {
  impl(balance_loop_options o, cluster_state s, transport::peer_client& p, reassigner& r, asio::any_io_executor b,
       autobalancer::anomaly_detector d)
      : opt(std::move(o)), st(s), peers(p), mover(r), pool(b), detector(std::move(d)), model(opt.config) {
    if (!opt.rt) throw std::invalid_argument("balance_loop_options::rt is required");
  }

  /// The loop's clock in seconds (rates and back-off are kept in seconds).
  double seconds_now() const { return static_cast<double>(opt.rt->steady_ms()) / 1000.0; }
  /// Wall seconds, for the times the status reports.
  double unix_now() const { return static_cast<double>(opt.rt->wall_ms()) / 1000.0; }

  struct tracked {
    followed_move move;
    int unanswered = 0;  // passes in which the source did not answer about it
  };
  struct backoff {
    double until = 0;
    int failures = 0;
  };

  balance_loop_options opt;
  cluster_state st;
  transport::peer_client& peers;
  reassigner& mover;
  asio::any_io_executor pool;
  autobalancer::anomaly_detector detector;
  autobalancer::cluster_model model;
  counter_rate<std::pair<std::string, topic_partition>> produced_rate, consumed_rate;
  std::map<topic_partition, std::string> known;  // partitions in the model -> their owner
  std::map<topic_partition, backoff> backoffs;
  /// Consecutive passes each partition was reported with a transaction open; pinned for up to
  /// max_transaction_passes of them.
  std::map<topic_partition, int> open_streak;
  static constexpr int max_transaction_passes = 3;
  std::vector<tracked> inflight;
  /// The last plan had moves left for later (MaxMovesPerBroker): the loop watches the moves in flight and runs the
  /// next pass as soon as one ends, not at the end of the interval.
  bool deferred = false;
  static constexpr auto watch_period = std::chrono::seconds(1);
  std::optional<controller_claim> claim;
  bool superseded = false;
  bool standby = false;  // with Raft: not the leader, so nothing to do this pass
  std::string superseded_reason;
  std::uint64_t passes = 0;

  std::atomic<bool> stopping{false};
  std::atomic<bool> paused{false};
  std::set<std::string> draining;  ///< under mu
  std::shared_ptr<const autobalancer::snapshot> last_snapshot;  ///< under mu
  std::optional<asio::any_io_executor> executor;
  cancellable_sleep* sleeping = nullptr;

  mutable std::mutex mu;
  balance_status last;

  double interval() const { return static_cast<double>(opt.config.interval_seconds); }
  const std::string& self() const { return opt.self.value(); }

  request claim_announcement() const {
    request r;  // POST, JSON: the defaults
    r.path = "/cluster/controller/claim";
    r.body = json::object([&](json::writer& w) {
      json::put(w, "epoch", claim->claim_epoch.value());
      json::put(w, "controller", claim->controller.value());
    });
    return r;
  }

  /// Whether a peer refused a request because a newer controller claim fenced it (409 `stale_epoch`). Other 409s
  /// (a partition already moving, an ownership conflict) are about the request, not about who the controller is.
  static bool refused_by_fence(const response& r) {
    if (r.status != 409) return false;
    rapidjson::Document d;
    return json::parse_object(r.body, d) && d.HasMember("error") && d["error"] == "stale_epoch";
  }

  void supersede(const std::string& why) {
    if (superseded) return;
    superseded = true;
    superseded_reason = why;
    if (st.fence.by_consensus())
      st.log.warn("balance_loop", "a newer Raft term was seen; this pass stops: " + why);
    else
      st.log.error("balance_loop", "superseded, this broker stops acting as controller until it restarts: " + why);
    st.metrics.set(metrics::ab_is_controller, 0);
  }

  /// Step 1: claim once, announce every pass. With Raft the claim is the leader's term, asked for every pass, and
  /// nothing is announced: the leader's heartbeats carry the term to every broker.
  asio::awaitable<moonmq::status> assert_controllership() {
    if (st.fence.by_consensus()) {
      superseded = false;
      auto e = co_await offload(pool, [this] { return st.fence.claim(); });
      standby = !e;
      if (standby) {
        claim.reset();
        co_return moonmq::status{};
      }
      if (!claim || claim->claim_epoch != *e) {
        claim = controller_claim{*e, opt.self};
        st.log.info("balance_loop", fmt::format("acting as controller: Raft leader of term {}", e->value()));
        st.metrics.set(metrics::ab_controller_epoch, static_cast<double>(e->value()));
      }
      co_return moonmq::status{};
    }
    if (!claim) {
      auto e = co_await offload(pool, [this] { return st.fence.claim(); });  // a durable write
      if (!e) co_return e.err();
      claim = controller_claim{*e, opt.self};
      st.log.info("balance_loop", fmt::format("claimed controller epoch {}", e->value()));
      st.metrics.set(metrics::ab_controller_epoch, static_cast<double>(e->value()));
    }
    if (st.fence.superseded()) {
      auto h = st.fence.highest();
      supersede(fmt::format("{} claimed epoch {} (ours is {})", h.controller.value(), h.claim_epoch.value(),
                            claim->claim_epoch.value()));
      co_return moonmq::status{};
    }
    std::vector<asio::awaitable<response>> calls;
    for (const auto& p : opt.peers) calls.push_back(peers.call(p, claim_announcement()));
    auto answers = co_await gather(std::move(calls));
    for (std::size_t i = 0; i < answers.size(); ++i)
      if (refused_by_fence(answers[i]))
        supersede(opt.peers[i] + " has seen a newer controller claim: " + read_peer_error(answers[i]).message);
    co_return moonmq::status{};
  }

  /// Step 2: the model from every broker's load report.
  asio::awaitable<std::set<std::string>> feed() {
    std::vector<asio::awaitable<response>> calls;
    for (const auto& p : opt.peers) calls.push_back(peers.call(p, transport::get_request("/cluster/loads")));
    auto answers = co_await gather(std::move(calls));
    const double now = seconds_now();

    std::set<std::string> inactive;
    std::map<topic_partition, std::pair<std::string, partition_load>> reported;
    auto offer = [&](const std::string& broker, const partition_load& l) {
      auto [it, fresh] = reported.try_emplace(l.partition, broker, l);
      // Two brokers with a log of the same name (a topic created on both): the larger one is the partition.
      if (!fresh && l.size_bytes > it->second.second.size_bytes) it->second = {broker, l};
    };
    model.set_broker(self(), true);
    // What each broker's disk holds beyond its partitions (copies left by moves) takes room under its disk capacity.
    model.set_held_disk(self(), unserved_bytes(st.store, st.ownership, opt.self));
    for (const auto& l : collect_local_loads(st.store, st.counters, st.ownership, opt.self, &st.producers))
      offer(self(), l);
    for (std::size_t i = 0; i < answers.size(); ++i) {
      auto report = answers[i].ok() ? wire::read_load_report(answers[i].body) : std::nullopt;
      model.set_broker(opt.peers[i], report.has_value());
      if (!report) {
        inactive.insert(opt.peers[i]);
        continue;
      }
      model.set_held_disk(opt.peers[i], report->held_bytes);
      for (const auto& l : report->partitions) offer(opt.peers[i], l);
    }

    for (const auto& [tp, entry] : reported) {
      const auto& [owner, l] = entry;
      auto k = known.find(tp);
      if (k != known.end() && k->second != owner) {  // moved: the old owner's counters mean nothing now
        produced_rate.forget({k->second, tp});
        consumed_rate.forget({k->second, tp});
      }
      known[tp] = owner;
      // A partition with a transaction open is left where it is for a few passes (a move would carry the
      // transaction safely, but its markers would chase it); one that stays busy is moved anyway.
      if (l.open_transactions)
        ++open_streak[tp];
      else
        open_streak.erase(tp);
      model.set_owner(tp, owner);
      model.set_disk(tp, l.size_bytes);
      if (auto r = produced_rate.update({owner, tp}, l.produced_bytes, now)) model.record_nw_in(tp, *r);
      if (auto r = consumed_rate.update({owner, tp}, l.consumed_bytes, now)) model.record_nw_out(tp, *r);
    }
    // Gone from every report although its owner answered (and not in the middle of a move): it no longer exists.
    for (auto it = known.begin(); it != known.end();) {
      const bool keep = reported.count(it->first) || inactive.count(it->second) || moving(it->first);
      if (keep) {
        ++it;
        continue;
      }
      model.remove_partition(it->first);
      open_streak.erase(it->first);
      produced_rate.forget({it->second, it->first});
      consumed_rate.forget({it->second, it->first});
      it = known.erase(it);
    }
    co_return inactive;
  }

  /// The loop's running move of `tp`, if any.
  const tracked* running(const topic_partition& tp) const {
    auto it = std::find_if(inflight.begin(), inflight.end(),
                           [&](const tracked& t) { return t.move.progress.partition == tp; });
    return it == inflight.end() ? nullptr : &*it;
  }
  bool moving(const topic_partition& tp) const { return running(tp) != nullptr; }

  void fail_later(const topic_partition& tp, const char* type, const std::string& why) {
    backoff& b = backoffs[tp];
    ++b.failures;
    const double intervals = std::min<double>(std::pow(2.0, b.failures - 1), max_backoff_intervals);
    b.until = seconds_now() + intervals * interval();
    st.metrics.add(metrics::ab_actions, {{"type", type}, {"result", "failed"}}, 1);
    st.log.warn("balance_loop", fmt::format("move of {} failed ({}); retried no sooner than {:.0f} s from now",
                                            name_of(tp), why, intervals * interval()));
  }

  /// Step 3: the moves of earlier passes, followed to their end. `passing`: called by a pass, which counts a source
  /// that does not answer (the watch between passes does not: its calls are not passes).
  asio::awaitable<void> follow(bool passing = true) {
    if (inflight.empty()) co_return;
    std::vector<std::string> sources;
    for (const auto& t : inflight)
      if (t.move.src != self() && std::find(sources.begin(), sources.end(), t.move.src) == sources.end())
        sources.push_back(t.move.src);
    std::vector<asio::awaitable<response>> calls;
    for (const auto& s : sources) calls.push_back(peers.call(s, transport::get_request("/cluster/moves")));
    auto answers = co_await gather(std::move(calls));
    std::map<std::string, std::vector<move_progress>> reports;
    reports[self()] = mover.progress();
    for (std::size_t i = 0; i < sources.size(); ++i)
      if (auto list = answers[i].ok() ? wire::read_moves(answers[i].body) : std::nullopt) reports[sources[i]] = *list;

    std::vector<tracked> still;
    for (auto& t : inflight) {
      followed_move& m = t.move;
      const topic_partition tp = m.progress.partition;
      auto rep = reports.find(m.src);
      if (rep == reports.end()) {
        if (!passing || ++t.unanswered < max_unanswered_passes) {
          still.push_back(std::move(t));
        } else {
          fail_later(tp, m.action_type.c_str(),
                     fmt::format("{} did not answer about it for {} passes", m.src, max_unanswered_passes));
        }
        continue;
      }
      auto found = std::find_if(rep->second.begin(), rep->second.end(),
                                [&](const move_progress& p) { return p.id == m.progress.id; });
      if (found == rep->second.end()) {
        fail_later(tp, m.action_type.c_str(), m.src + " no longer knows the move (it restarted?)");
        continue;
      }
      m.progress = *found;
      t.unanswered = 0;
      if (!found->finished) {
        still.push_back(std::move(t));
        continue;
      }
      if (found->succeeded) {
        backoffs.erase(tp);
        st.metrics.add(metrics::ab_actions, {{"type", m.action_type}, {"result", "succeeded"}}, 1);
        st.log.info("balance_loop", fmt::format("moved {} {}->{} ({} bytes)", name_of(tp), m.src, m.progress.dest,
                                                found->bytes_copied));
      } else {
        fail_later(tp, m.action_type.c_str(), found->error);
      }
    }
    inflight = std::move(still);
  }

  /// Starts one move on its source; returns its id.
  asio::awaitable<result<std::uint64_t>> start(const wanted_move& w) {
    if (w.src == self()) {
      auto ex = co_await asio::this_coro::executor;
      auto id = mover.start(ex, w.partition, broker_id(w.dest), claim);
      co_return id;
    }
    request r;  // POST, JSON: the defaults
    r.path = "/cluster/reassign";
    r.body = wire::move_request_body({w.partition, w.dest});
    response resp = co_await peers.call(w.src, std::move(r), claim);
    if (refused_by_fence(resp)) {
      supersede(w.src + " refused a move with 409: " + resp.body);
      result<std::uint64_t> refused = error{errc::conflict, "superseded"};
      co_return refused;
    }
    auto id = wire::read_move_started(resp);
    if (!id)
      id = error{errc::unavailable, fmt::format("{} answered {} {}", w.src,
                                                resp.status ? std::to_string(resp.status) : std::string("nothing"),
                                                resp.body)};
    co_return id;
  }

  /// Step 5.
  asio::awaitable<void> execute(const std::vector<described_action>& plan) {
    std::map<std::string, std::uint32_t> busy;
    for (const auto& t : inflight) {
      ++busy[t.move.src];
      ++busy[t.move.progress.dest];
    }
    const std::uint32_t limit = opt.config.max_moves_per_broker;
    for (const auto& a : plan) {
      for (const auto& w : moves_of(a)) {
        if (superseded) co_return;
        if (busy[w.src] >= limit || busy[w.dest] >= limit) {
          st.metrics.add(metrics::ab_actions, {{"type", w.type}, {"result", "deferred"}}, 1);
          deferred = true;
          continue;
        }
        auto id = co_await start(w);
        if (!id) {
          if (!superseded) fail_later(w.partition, w.type, id.message());
          continue;
        }
        ++busy[w.src];
        ++busy[w.dest];
        move_progress p;
        p.id = *id;
        p.partition = w.partition;
        p.dest = w.dest;
        p.step = "starting";
        inflight.push_back({followed_move{w.src, p, w.type}, 0});
        st.metrics.add(metrics::ab_actions, {{"type", w.type}, {"result", "started"}}, 1);
        st.log.info("balance_loop", fmt::format("started {} of {} {}->{}", w.type, name_of(w.partition), w.src, w.dest));
      }
    }
  }

  /// Per-broker figures for the status and the metrics.
  std::vector<broker_view> views_of(const autobalancer::snapshot& snap) {
    std::vector<broker_view> out;
    for (autobalancer::broker_index b = 0; b < snap.broker_count(); ++b) {
      broker_view v{snap.broker_id(b), snap.active(b), {}, snap.broker_partition_count(b)};
      for (std::size_t r = 0; r < autobalancer::resource_count; ++r)
        v.load.v[r] = snap.broker_load(b, static_cast<resource>(r));
      out.push_back(std::move(v));
    }
    std::sort(out.begin(), out.end(), [](const broker_view& x, const broker_view& y) { return x.id < y.id; });
    return out;
  }

  void report_loads(const std::vector<broker_view>& views) {
    st.metrics.clear(metrics::ab_broker_load);
    std::size_t active = 0;
    std::array<double, autobalancer::resource_count + 1> sum{}, max{};
    for (const auto& v : views) {
      std::array<double, autobalancer::resource_count + 1> f{v.load.v[0], v.load.v[1], v.load.v[2],
                                                             static_cast<double>(v.partitions)};
      for (std::size_t r = 0; r < f.size(); ++r)
        st.metrics.set(metrics::ab_broker_load, {{"broker", v.id}, {"resource", resource_label(r)}}, f[r]);
      if (!v.active) continue;
      ++active;
      for (std::size_t r = 0; r < f.size(); ++r) {
        sum[r] += f[r];
        max[r] = std::max(max[r], f[r]);
      }
    }
    st.metrics.set(metrics::ab_brokers, {{"state", "active"}}, static_cast<double>(active));
    st.metrics.set(metrics::ab_brokers, {{"state", "inactive"}}, static_cast<double>(views.size() - active));
    for (std::size_t r = 0; r < sum.size(); ++r) {
      const double mean = active ? sum[r] / static_cast<double>(active) : 0;
      st.metrics.set(metrics::ab_imbalance, {{"resource", resource_label(r)}}, mean > 0 ? max[r] / mean : 1.0);
    }
  }

  static std::string resource_label(std::size_t r) {
    return r < autobalancer::resource_count ? autobalancer::resource_name(static_cast<resource>(r)) : "partitions";
  }

  asio::awaitable<balance_status> pass() {
    const double started = measured_seconds();
    ++passes;
    deferred = false;  // set again by execute() when this pass leaves moves for later
    std::string outcome = "ok", failure;
    double detect_seconds = 0;
    bool satisfied = false;
    std::vector<described_action> described;
    std::vector<autobalancer::shortfall> shortfalls;
    std::vector<broker_view> views;

    if (!superseded) {
      if (auto s = co_await assert_controllership(); !s) {
        outcome = "error";
        failure = "cannot claim a controller epoch: " + s.message();
        st.log.error("balance_loop", failure);
      }
    }
    if (superseded) outcome = "superseded";
    if (outcome == "ok" && standby) outcome = "standby";
    if (outcome == "ok") {
      std::set<std::string> inactive = co_await feed();
      co_await follow();
      // Freezing and planning are CPU work that grows with the cluster (over a second at a million partitions):
      // they run on the blocking pool. Only this coroutine touches the model, and it waits here.
      autobalancer::snapshot snap;
      const double now = seconds_now();
      std::set<std::string> drained;
      {
        std::lock_guard lock(mu);
        drained = draining;
      }
      co_await offload(pool, [&] {
        snap = model.freeze();
        views = views_of(snap);  // the loads as measured, before running moves are placed where they go
        for (const auto& b : drained) snap.exclude_broker(b);
        for (autobalancer::partition_index p = 0; p < snap.partition_count(); ++p) {
          topic_partition tp{snap.topic(p), snap.partition_number(p)};
          // A running move's partition is planned as where it will be: counted on its source, it would make the
          // goals move more off the source for load already leaving it (docs/autobalancer.md, "Settling").
          if (const tracked* t = running(tp)) {
            const auto dest = snap.find_broker(t->move.progress.dest);
            if (dest != autobalancer::no_index)
              snap.place_moving(p, dest);
            else
              snap.pin(p);
            continue;
          }
          auto b = backoffs.find(tp);
          auto busy = open_streak.find(tp);
          const bool in_transaction = busy != open_streak.end() && busy->second <= max_transaction_passes;
          if (in_transaction || (b != backoffs.end() && b->second.until > now)) snap.pin(p);
        }
        const double d0 = measured_seconds();
        autobalancer::plan plan = detector.detect(snap);
        satisfied = detector.satisfied(snap);
        detect_seconds = measured_seconds() - d0;
        for (std::size_t i = 0; i < plan.actions.size(); ++i) {
          described.push_back(autobalancer::describe(snap, plan.actions[i]));
          described.back().chosen_by = plan.chosen_by[i];
        }
        if (!satisfied) {  // why, once this plan is carried out
          autobalancer::snapshot after = snap;
          autobalancer::apply_plan(after, plan);
          shortfalls = detector.shortfalls(after, plan.partition_moves() >= opt.config.max_actions_per_detect);
        }
        return true;
      });
      st.metrics.observe(metrics::ab_detect_duration, detect_seconds);
      report_loads(views);
      st.metrics.set(metrics::ab_plan_actions, static_cast<double>(described.size()));
      std::string line = fmt::format("pass {}: {} partitions on {} brokers ({} unreachable), plan of {} actions{}, "
                                     "{} moves in progress{}",
                                     passes, snap.partition_count(), snap.broker_count(), inactive.size(),
                                     described.size(), opt.config.dry_run ? " (dry run)" : "", inflight.size(),
                                     satisfied ? ", all goals met" : "");
      st.log.info("balance_loop", line);
      {
        // Kept (moved, not copied) for GET /v1/autobalancer/snapshot: what this pass saw.
        std::lock_guard lock(mu);
        last_snapshot = std::make_shared<const autobalancer::snapshot>(std::move(snap));
      }
      if (opt.config.dry_run) {
        for (const auto& a : described) {
          st.log.info("balance_loop", "dry run, would execute " + describe_text(a));
          st.metrics.add(metrics::ab_actions, {{"type", autobalancer::action_type_name(a.type)}, {"result", "dry_run"}},
                         1);
        }
      } else {
        co_await execute(described);
        if (superseded) outcome = "superseded";
      }
    }

    st.metrics.add(metrics::ab_passes, {{"result", outcome}}, 1);
    st.metrics.set(metrics::ab_is_controller, outcome == "ok" && !superseded ? 1 : 0);
    const double ended = unix_now();
    st.metrics.set(metrics::ab_last_pass, ended);

    std::lock_guard lock(mu);
    last.enabled = true;
    last.dry_run = opt.config.dry_run;
    last.claim = claim;
    last.superseded = superseded;
    last.superseded_reason = superseded_reason;
    last.passes = passes;
    last.last_result = outcome;
    last.last_error = failure;
    last.last_pass_unix_seconds = ended;
    last.last_pass_duration_seconds = measured_seconds() - started;
    if (outcome == "ok") {
      last.last_detect_seconds = detect_seconds;
      last.satisfied = satisfied;
      last.last_plan = std::move(described);
      last.out_of_band = std::move(shortfalls);
      last.brokers = std::move(views);
    }
    last.moves.clear();
    for (const auto& t : inflight) last.moves.push_back(t.move);
    co_return last;
  }
};

balance_loop::balance_loop() = default;
balance_loop::~balance_loop() = default;

result<std::unique_ptr<balance_loop>> balance_loop::create(balance_loop_options options, cluster_state state,
                                                           transport::peer_client& peers, reassigner& moves,
                                                           asio::any_io_executor blocking) {
  auto detector = autobalancer::anomaly_detector::create(options.config, options.registry);
  if (!detector) return error{detector.code(), "Server.Autobalance." + detector.message()};
  std::unique_ptr<balance_loop> loop(new balance_loop());
  loop->impl_ = std::make_unique<impl>(std::move(options), state, peers, moves, blocking, std::move(*detector));
  state.metrics.set(metrics::ab_enabled, 1);
  state.metrics.set(metrics::ab_dry_run, loop->impl_->opt.config.dry_run ? 1 : 0);
  state.metrics.set(metrics::ab_is_controller, 0);
  state.metrics.set(metrics::ab_controller_epoch, 0);
  {
    std::lock_guard lock(loop->impl_->mu);
    loop->impl_->last.enabled = true;
    loop->impl_->last.dry_run = loop->impl_->opt.config.dry_run;
  }
  return loop;
}

asio::awaitable<balance_status> balance_loop::run_pass() { return impl_->pass(); }

asio::awaitable<void> balance_loop::run() {
  auto ex = co_await asio::this_coro::executor;
  {
    std::lock_guard lock(impl_->mu);
    impl_->executor = ex;
  }
  while (!impl_->stopping) {
    if (!impl_->paused) (void)co_await impl_->pass();
    runtime& rt = *impl_->opt.rt;
    const time_ms deadline = rt.steady_ms() + static_cast<time_ms>(impl_->opt.config.interval_seconds) * 1000;
    while (!impl_->stopping) {
      const std::chrono::milliseconds left(deadline - rt.steady_ms());
      if (left <= std::chrono::milliseconds::zero()) break;
      // With moves waiting for a slot, look at the moves in flight every watch_period and start the next pass as
      // soon as one has ended.
      const bool watch = impl_->deferred && !impl_->inflight.empty() && !impl_->paused && !impl_->superseded;
      cancellable_sleep sleep(
          rt, ex, watch ? std::min(left, std::chrono::duration_cast<std::chrono::milliseconds>(impl::watch_period)) : left);
      impl_->sleeping = &sleep;
      const bool slept = co_await sleep.wait();
      impl_->sleeping = nullptr;
      if (!slept) break;  // stopped, or resumed by an operator: the next pass now
      if (!watch) continue;
      const std::size_t before = impl_->inflight.size();
      co_await impl_->follow(false);
      if (impl_->inflight.size() < before) break;
    }
  }
}

void balance_loop::stop() {
  impl_->stopping = true;
  std::lock_guard lock(impl_->mu);
  if (impl_->executor)
    asio::post(*impl_->executor, [i = impl_.get()] {
      if (i->sleeping) i->sleeping->cancel();
    });
}

void balance_loop::set_paused(bool paused) {
  impl_->paused = paused;
  if (!paused) {  // the next pass now, not at the end of the interval
    std::lock_guard lock(impl_->mu);
    if (impl_->executor)
      asio::post(*impl_->executor, [i = impl_.get()] {
        if (i->sleeping) i->sleeping->cancel();
      });
  }
  impl_->st.log.info("balance_loop", paused ? "paused by an operator: no pass runs until resumed"
                                            : "resumed by an operator");
}

std::optional<std::string> balance_loop::snapshot_document() const {
  std::shared_ptr<const autobalancer::snapshot> snap;
  autobalancer::autobalance_config config = impl_->opt.config;
  {
    std::lock_guard lock(impl_->mu);
    snap = impl_->last_snapshot;
    for (const auto& b : impl_->draining) config.excluded_brokers.push_back(b);
  }
  if (!snap) return std::nullopt;
  return autobalancer::render_planner_input(*snap, &config);
}

void balance_loop::set_draining(std::set<std::string> brokers) {
  std::lock_guard lock(impl_->mu);
  impl_->draining = std::move(brokers);
}

balance_status balance_loop::status() const {
  balance_status s;
  {
    std::lock_guard lock(impl_->mu);
    s = impl_->last;
  }
  s.paused = impl_->paused;
  // Moves this broker runs itself are reported as they are now; those on peers as of the last pass.
  auto here = impl_->mover.progress();
  for (auto& m : s.moves) {
    if (m.src != impl_->self()) continue;
    for (const auto& p : here)
      if (p.id == m.progress.id) m.progress = p;
  }
  return s;
}

}  // namespace moonmq::cluster
