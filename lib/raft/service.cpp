#include "moonmq/raft/service.hpp"

#include <fmt/format.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_future.hpp>
#include <atomic>
#include <deque>
#include <map>
#include <random>
#include <mutex>

#include "message_json.hpp"
#include "moonmq/core/offload.hpp"
#include "moonmq/core/runtime_sleep.hpp"
#include "moonmq/raft/raft_metrics.hpp"
#include "moonmq/core/fault_points.hpp"

namespace moonmq::raft {

using transport::error_response;
using transport::request;
using transport::response;

namespace {

constexpr std::size_t max_queued_per_peer = 128;
constexpr std::size_t applied_terms_kept = 4096;

int ticks(std::chrono::milliseconds d, std::chrono::milliseconds tick) {
  return std::max<int>(1, static_cast<int>(d.count() / std::max<long>(1, tick.count())));
}

}  // namespace

struct service::impl {
  impl(service_options o, storage& d, state_machine& m, transport::peer_client& p, asio::io_context& i,
       asio::thread_pool& b, logger& l, metrics_sink& ms)
      : opt(std::move(o)), disk(d), machine(m), peers(p), io(i), pool(b), log(l), metrics(ms) {}

  service_options opt;
  storage& disk;
  state_machine& machine;
  transport::peer_client& peers;
  asio::io_context& io;
  asio::thread_pool& pool;
  logger& log;
  metrics_sink& metrics;
  std::unique_ptr<node> n;

  // io thread only
  bool pumping = false;
  bool failed = false;
  index_t applied = 0;
  bool caught_up_told = false;
  std::map<index_t, term_t> applied_terms;
  std::map<std::string, std::deque<message>> outbox;
  std::map<std::string, bool> sending;
  std::vector<cancellable_sleep*> waiters;  ///< woken at every apply
  std::uint64_t elections_seen = 0;

  std::atomic<bool> stopped{false};
  mutable std::mutex mu;
  raft_status published;

  node_config node_config_of() const {
    node_config c;
    c.id = opt.self;
    c.peers = opt.peers;
    c.heartbeat_ticks = ticks(opt.heartbeat, opt.tick);
    c.election_ticks_min = ticks(opt.election_min, opt.tick);
    c.election_ticks_max = std::max(c.election_ticks_min + 1, ticks(opt.election_max, opt.tick));
    c.seed = opt.seed ? opt.seed : (static_cast<std::uint64_t>(std::random_device{}()) << 32) | std::random_device{}();
    return c;
  }

  void publish() {
    raft_status s{n->current_role(),        n->term(),  n->leader(), n->commit_index(), applied, n->log().last_index(),
                  n->log().snapshot_index(), caught_up_told};
    {
      std::lock_guard lock(mu);
      published = s;
    }
    metrics.set(metrics::term, static_cast<double>(s.term));
    metrics.set(metrics::is_leader, n->is_leader() ? 1 : 0);
    metrics.set(metrics::commit_index, static_cast<double>(s.commit));
    metrics.set(metrics::applied_index, static_cast<double>(s.applied));
    if (n->elections_won() > elections_seen) {
      metrics.add(metrics::elections, {}, static_cast<double>(n->elections_won() - elections_seen));
      elections_seen = n->elections_won();
      log.info("raft", fmt::format("{} leads term {}", opt.self, n->term()));
    }
  }

  /// Applies one ready batch's state-machine part (io thread).
  void apply(ready& r) {
    if (r.apply_snapshot) {
      machine.restore(r.apply_snapshot->data);
      applied = r.apply_snapshot->index;
    }
    for (const entry& e : r.committed) {
      machine.apply(e);
      applied = e.index;
      applied_terms[e.index] = e.term;
    }
    while (applied_terms.size() > applied_terms_kept) applied_terms.erase(applied_terms.begin());
    if (!caught_up_told && n->caught_up()) {
      caught_up_told = true;
      machine.caught_up();
      log.info("raft", fmt::format("caught up with the cluster at index {}: serving from now on", applied));
    }
    for (auto* w : waiters) w->cancel();
    if (n->log().size() > opt.max_log_entries && applied > n->log().snapshot_index()) {
      n->compact(applied, machine.snapshot());
      log.info("raft", fmt::format("log compacted up to index {}", applied));
    }
  }

  void kick() {
    if (pumping || failed || stopped) return;
    pumping = true;
    asio::co_spawn(io, pump(), asio::detached);
  }

  asio::awaitable<void> pump() {
    while (!stopped && n->has_ready()) {
      ready r = n->take_ready();
      const bool durable_part = r.hard || r.snap || r.truncate_from || !r.entries.empty();
      if (durable_part) {
        const auto t0 = std::chrono::steady_clock::now();
        moonmq::status saved = co_await offload(pool, [this, &r] { return disk.save(r); });
        if (!r.entries.empty())
          metrics.observe(metrics::append_latency, {},
                          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        if (!saved) {
          // Nothing of this batch may go out: its votes and acknowledgements are not durable.
          failed = true;
          log.error("raft", "cannot persist Raft state, this broker stops taking part: " + saved.message());
          break;
        }
      }
      if (durable_part) (void)MOONMQ_FAULT("raft.after_save");  // crash or pause: saved, nothing sent yet
      for (auto& m : r.messages) enqueue(std::move(m));
      apply(r);
    }
    publish();
    pumping = false;
  }

  void enqueue(message m) {
    auto& q = outbox[m.to];
    // A newer append to a peer covers every queued one: the leader builds each from what the peer has acknowledged,
    // so it carries the same entries and more, and a later commit index. Only the newest needs to travel.
    if (m.type == message_type::append || m.type == message_type::snapshot)
      std::erase_if(q, [&](const message& old) { return old.type == m.type; });
    q.push_back(std::move(m));
    while (q.size() > max_queued_per_peer) q.pop_front();
    const std::string peer = q.back().to;
    if (!sending[peer]) {
      sending[peer] = true;
      asio::co_spawn(io, drain(peer), asio::detached);
    }
  }

  asio::awaitable<void> drain(std::string peer) {
    while (!stopped && !outbox[peer].empty()) {
      message m = std::move(outbox[peer].front());
      outbox[peer].pop_front();
      request req;  // POST, JSON: the defaults
      req.path = wire::route_of(m.type);
      req.body = wire::encode(m);
      if (auto f = MOONMQ_FAULT("raft.before_send"); !f) continue;  // error: this message is lost
      (void)co_await peers.call(peer, std::move(req));
    }
    sending[peer] = false;
  }

  asio::awaitable<void> tick_loop() {
    while (!stopped) {
      co_await sleep_on(*opt.rt, opt.tick);
      if (stopped) break;
      n->tick();
      kick();
      if (!pumping) publish();
    }
  }

  /// Waits on the io thread until `index` is applied here or the deadline passes.
  asio::awaitable<bool> wait_applied(index_t index, time_ms deadline) {
    if (applied >= index) co_return true;
    // One timer for the whole wait; every apply wakes it to look again.
    cancellable_sleep sleep(*opt.rt, io.get_executor(), std::chrono::milliseconds(deadline - opt.rt->steady_ms()));
    waiters.push_back(&sleep);
    while (applied < index && !stopped && !sleep.due()) (void)co_await sleep.wait();
    std::erase(waiters, &sleep);
    co_return applied >= index;
  }

  /// On the leader: append and wait for it to be applied here (io thread).
  asio::awaitable<result<index_t>> propose_here(entry_kind kind, std::string data) {
    auto i = n->propose(kind, std::move(data));
    if (!i) co_return i;
    const term_t term = n->term();
    kick();
    const time_ms deadline = opt.rt->steady_ms() + opt.propose_timeout.count();
    if (!co_await wait_applied(*i, deadline)) {
      result<index_t> late = error{
          errc::unavailable, fmt::format("entry {} did not commit within {} ms", *i, opt.propose_timeout.count())};
      co_return late;
    }
    auto t = applied_terms.find(*i);
    if (t != applied_terms.end() && t->second != term) {
      result<index_t> lost = error{errc::conflict, "leadership changed before the entry committed; propose again"};
      co_return lost;
    }
    co_return i;
  }

  asio::awaitable<result<index_t>> propose(entry_kind kind, std::string data) {
    if (n->is_leader()) {
      auto r = co_await propose_here(kind, std::move(data));
      co_return r;
    }
    const std::string leader = n->leader();
    if (leader.empty()) {
      result<index_t> none = error{errc::unavailable, "no Raft leader is known yet; retry"};
      co_return none;
    }
    request req;  // POST, JSON: the defaults
    req.path = "/cluster/raft/propose";
    req.body = wire::encode(wire::proposal{kind, std::move(data)});
    response resp = co_await peers.call(leader, std::move(req));
    auto appended =
        resp.status == 200 ? wire::decode_appended(resp.body) : result<index_t>(errc::unavailable, resp.body);
    if (!appended) {
      result<index_t> refused = error{resp.status == 0 ? errc::unavailable : errc::internal,
                                      "the Raft leader " + leader + " did not take the entry: " + appended.message()};
      co_return refused;
    }
    const index_t index = *appended;
    if (!co_await wait_applied(index, opt.rt->steady_ms() + opt.propose_timeout.count())) {
      result<index_t> late = error{errc::unavailable, fmt::format("entry {} committed on the leader but is not "
                                                                  "applied here yet",
                                                                  index)};
      co_return late;
    }
    result<index_t> ok = index;
    co_return ok;
  }

  response handle(const request& req) {
    if (req.method != "POST") return error_response(405, "method_not_allowed", "Raft routes take POST");
    if (req.path == "/cluster/raft/propose") return handle_propose(req);
    auto m = wire::decode(req.body);
    if (!m) return error_response(400, "invalid_argument", m.message());
    if (std::string(wire::route_of(m->type)) != req.path)
      return error_response(400, "invalid_argument",
                            std::string(message_type_name(m->type)) + " does not go to " + req.path);
    if (m->to != opt.self) return error_response(400, "invalid_argument", "message for " + m->to + ", not " + opt.self);
    // The message's sender is the broker the request says it comes from, and a member: a peer's token does not let
    // it speak for another broker.
    auto from = req.headers.find(transport::header_from);
    if (from == req.headers.end() || from->second != m->from)
      return error_response(401, "unauthorized",
                            "a Raft message from " + m->from + " sent as X-Cluster-From " +
                                (from == req.headers.end() ? std::string("(none)") : from->second));
    if (std::find(opt.peers.begin(), opt.peers.end(), m->from) == opt.peers.end())
      return error_response(400, "invalid_argument", m->from + " is not a member of this Raft group");
    asio::post(io, [this, msg = std::move(*m)] {
      if (stopped) return;
      n->step(msg);
      kick();
    });
    return {204, "", "application/json"};
  }

  response handle_propose(const request& req) {
    auto p = wire::decode_proposal(req.body);
    if (!p) return error_response(400, "invalid_argument", p.message());
    auto r = run_on_io(leader_propose(p->kind, std::move(p->data)));
    if (!r) return error_response(transport::http_status_of(r.code()), errc_name(r.code()), r.message());
    return {200, wire::encode_appended(*r), "application/json"};
  }

  asio::awaitable<result<index_t>> leader_propose(entry_kind kind, std::string data) {
    if (!n->is_leader()) {
      result<index_t> no = error{errc::not_owner, "not the Raft leader"};
      co_return no;
    }
    auto r = co_await propose_here(kind, std::move(data));
    co_return r;
  }

  template <typename T>
  T run_on_io(asio::awaitable<T> work) {
    return std::move(*asio::co_spawn(io, as_optional(std::move(work)), asio::use_future).get());
  }
};

service::service() = default;
service::~service() { stop(); }

result<std::unique_ptr<service>> service::open(service_options options, storage& disk, state_machine& machine,
                                               transport::peer_client& peers, asio::io_context& io,
                                               asio::thread_pool& blocking, logger& log, metrics_sink& metrics) {
  if (!options.rt) return error{errc::invalid_argument, "raft::service_options::rt is required"};
  auto restored = disk.load();
  if (!restored) return restored.err();
  std::unique_ptr<service> s(new service());
  s->impl_ = std::make_unique<impl>(std::move(options), disk, machine, peers, io, blocking, log, metrics);
  auto& i = *s->impl_;
  i.n = std::make_unique<node>(i.node_config_of(), std::move(*restored));
  metrics.add(metrics::elections, {}, 0);
  // Bring the state machine up to the durable commit index before anything is served.
  ready r = i.n->take_ready();
  i.apply(r);
  i.publish();
  log.info("raft", fmt::format("Raft on: term {}, log {}..{}, applied {}", i.n->term(), i.n->log().first_index(),
                               i.n->log().last_index(), i.applied));
  return s;
}

void service::start() { asio::co_spawn(impl_->io, impl_->tick_loop(), asio::detached); }

void service::stop() {
  if (!impl_ || impl_->stopped.exchange(true)) return;
}

transport::response service::handle(const transport::request& req) { return impl_->handle(req); }

asio::awaitable<result<index_t>> service::propose(entry_kind kind, std::string data) {
  return impl_->propose(kind, std::move(data));
}

result<index_t> service::propose_blocking(entry_kind kind, std::string data) {
  return impl_->run_on_io(impl_->propose(kind, std::move(data)));
}

raft_status service::status() const {
  std::lock_guard lock(impl_->mu);
  return impl_->published;
}

}  // namespace moonmq::raft
