#include "moonmq/cluster/reassigner.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <chrono>
#include <deque>
#include <mutex>
#include <shared_mutex>

#include "moonmq/core/crc32c.hpp"
#include "moonmq/core/offload.hpp"

namespace moonmq::cluster {

using transport::request;
using transport::response;

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string name_of(const topic_partition& tp) { return tp.topic + "-" + std::to_string(tp.partition); }

std::string quoted(const std::string& s) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
  return std::string(buf.GetString(), buf.GetSize());
}

std::string partition_body(const topic_partition& tp, const std::string& extra_key, const std::string& extra_json) {
  return "{\"topic\":" + quoted(tp.topic) + ",\"partition\":" + std::to_string(tp.partition) + ",\"" + extra_key +
         "\":" + extra_json + "}";
}

/// A peer's answer as an error naming the peer and the step.
error peer_error(const std::string& peer, const std::string& step, const response& r) {
  errc code = r.status == 0 ? errc::unavailable : r.status == 409 ? errc::conflict : errc::internal;
  return error{code, step + " on " + peer + " failed (" +
                         (r.status ? "HTTP " + std::to_string(r.status) : "no answer") + "): " + r.body};
}

std::optional<std::uint64_t> json_u64(const std::string& body, const char* key) {
  rapidjson::Document d;
  d.Parse(body.c_str(), body.size());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember(key) || !d[key].IsUint64()) return std::nullopt;
  return d[key].GetUint64();
}

}  // namespace

struct reassigner::impl {
  impl(reassigner_options o, cluster_state s, peer_client& p, move_journal& j, asio::thread_pool& b)
      : opt(o), st(s), peers(p), journal(j), pool(b) {}

  reassigner_options opt;
  cluster_state st;
  peer_client& peers;
  move_journal& journal;
  asio::thread_pool& pool;

  mutable std::mutex mu;
  std::map<topic_partition, std::shared_ptr<move_progress>> running;
  std::deque<move_progress> finished;
  // Ids start from the clock so that a restarted broker does not reuse the ids of its previous life.
  std::uint64_t next_id = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());

  void log(const move_progress& p, const std::string& what) {
    st.log.info("reassigner",
                "move " + name_of(p.partition) + " " + peers.directory().self.value() + "->" + p.dest + ": " + what);
  }

  void set_step(move_progress& p, const char* step) {
    {
      std::lock_guard lock(mu);
      p.step = step;
    }
    log(p, std::string("step ") + step);
  }

  void add_copied(move_progress& p, std::uint64_t n) {
    {
      std::lock_guard lock(mu);
      p.bytes_copied += n;
    }
    st.metrics.add(metrics::move_bytes, {}, static_cast<double>(n));
  }

  /// Registers a move of `tp` (refused when one is running); the caller then runs it with `finish_after`.
  result<std::shared_ptr<move_progress>> begin(const topic_partition& tp, const broker_id& dest) {
    auto p = std::make_shared<move_progress>();
    p->partition = tp;
    p->dest = dest.value();
    p->step = "starting";
    p->started_at = now_seconds();
    std::lock_guard lock(mu);
    if (running.count(tp)) return error{errc::conflict, name_of(tp) + " is already moving"};
    p->id = next_id++;
    running[tp] = p;
    st.metrics.set(metrics::moves_in_progress, static_cast<double>(running.size()));
    return p;
  }

  /// Runs a registered move and records how it ended.
  asio::awaitable<status> finish_after(std::shared_ptr<move_progress> p, std::optional<controller_claim> claim) {
    const topic_partition tp = p->partition;
    status s = co_await run(*p, tp, broker_id(p->dest), claim);
    {
      std::lock_guard lock(mu);
      p->finished = true;
      p->succeeded = s.ok();
      p->step = s.ok() ? "done" : "failed";
      p->error = s.ok() ? "" : s.message();
      p->finished_at = now_seconds();
      finished.push_back(*p);
      while (finished.size() > 100) finished.pop_front();
      running.erase(tp);
      st.metrics.set(metrics::moves_in_progress, static_cast<double>(running.size()));
    }
    st.metrics.add(metrics::moves, {{"result", s.ok() ? "succeeded" : "failed"}}, 1);
    st.metrics.observe(metrics::move_duration, {}, p->finished_at - p->started_at);
    log(*p, s.ok() ? "done" : "failed: " + s.message());
    co_return s;
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
  asio::awaitable<result<std::uint64_t>> copy(move_progress& p, const topic_partition& tp, const std::string& dest,
                                              std::uint64_t from, std::uint64_t until, bool sync_at_end) {
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
        if (!end || *end != next) co_return peer_error(dest, "append at " + std::to_string(at), resp);
      } else if (!resp.ok()) {
        co_return peer_error(dest, "append at " + std::to_string(at), resp);
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
      if (!resp.ok()) co_return peer_error(dest, "sync", resp);
    }
    co_return at;
  }

  /// Flips ownership under the partition's gate (exclusive: waits for appends in flight, stops new ones).
  status flip(const topic_partition& tp, const broker_id& to) {
    std::unique_lock gate(st.gates.gate(tp));
    return st.ownership.transfer(tp, to);
  }

  asio::awaitable<status> run(move_progress& p, topic_partition tp, broker_id dest,
                              std::optional<controller_claim> claim) {
    const broker_id& self = peers.directory().self;
    if (is_internal_topic(tp.topic))
      co_return status{errc::invalid_argument, "internal topic " + name_of(tp) + " never moves"};
    if (dest == self) co_return status{errc::invalid_argument, name_of(tp) + " is already on " + self.value()};
    if (!serves(st.ownership, tp, self)) {
      auto o = st.ownership.owner(tp);
      co_return status{errc::not_owner, name_of(tp) + " is served by " + (o ? o->value() : std::string("?")) +
                                            ", not by " + self.value()};
    }
    auto count = st.store.partition_count(tp.topic);
    if (!count) co_return count.to_status();
    if (tp.partition >= *count) co_return status{errc::not_found, "unknown partition " + name_of(tp)};

    set_step(p, "ensure");
    {
      request r = req("POST", "/cluster/ensure", tp);
      r.params.clear();
      r.body = "{\"topic\":" + quoted(tp.topic) + ",\"partitions\":" + std::to_string(*count) + "}";
      auto resp = co_await peers.call(dest.value(), std::move(r), claim);
      if (!resp.ok()) co_return peer_error(dest.value(), "ensure", resp);
    }

    set_step(p, "check");
    std::uint64_t dest_end = 0;
    {
      auto resp = co_await peers.call(dest.value(), req("GET", "/cluster/partition", tp));
      auto end = json_u64(resp.body, "end_offset");
      if (!resp.ok() || !end) co_return peer_error(dest.value(), "partition state", resp);
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

    set_step(p, "reserve");
    {
      request r = req("POST", "/cluster/owner", tp);
      r.params.clear();
      r.body = partition_body(tp, "broker", quoted(self.value()));
      auto resp = co_await peers.call(dest.value(), std::move(r), claim);
      if (!resp.ok()) co_return peer_error(dest.value(), "reserve", resp);
    }

    set_step(p, "copy");
    auto end_now = st.store.end_offset(tp);
    if (!end_now) co_return end_now.to_status();
    {
      std::lock_guard lock(mu);
      p.bytes_copied = dest_end;
      p.bytes_total = *end_now;
    }
    auto copied = co_await copy(p, tp, dest.value(), dest_end, *end_now, true);
    if (!copied) co_return copied.to_status();

    set_step(p, "cutover");
    if (auto s = co_await offload(pool, [&] { return journal.add({tp, dest}); }); !s) co_return s;
    if (auto s = co_await offload(pool, [&] { return flip(tp, dest); }); !s) {
      // A failed flip may still take effect: a replicated table's entry can commit after the wait for it gave up.
      // Flip back explicitly (after it in the log); only once that is known to hold may the journal entry go.
      // Otherwise the entry stays and recovery resolves the move by asking dest, as after a crash.
      if (co_await offload(pool, [&] { return flip(tp, self); }))
        (void)co_await offload(pool, [&] { return journal.remove(tp); });
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
    if (tail_end)
      drained = co_await copy(p, tp, dest.value(), *copied, *tail_end, true);
    else
      drained = tail_end.err();
    if (!drained) {
      st.log.error("reassigner",
                   "move " + name_of(tp) + ": drain failed, rolling ownership back: " + drained.message());
      auto back = co_await offload(pool, [&] { return flip(tp, self); });
      if (back)
        (void)co_await offload(pool, [&] { return journal.remove(tp); });
      else
        st.log.error("reassigner", "rollback of " + name_of(tp) + " failed; kept in the journal: " + back.message());
      co_return drained.to_status();
    }

    set_step(p, "offsets");
    {
      auto groups = st.offsets.groups_for(tp);
      if (!groups.empty()) {
        std::string list = "[";
        for (std::size_t i = 0; i < groups.size(); ++i)
          list += (i ? "," : "") + std::string("{\"group\":") + quoted(groups[i].group) +
                  ",\"offset\":" + std::to_string(groups[i].offset) + "}";
        list += "]";
        request r = req("POST", "/cluster/offsets", tp);
        r.params.clear();
        r.body = partition_body(tp, "offsets", list);
        auto resp = co_await peers.call(dest.value(), std::move(r), claim);
        if (!resp.ok())
          st.log.error("reassigner", "move " + name_of(tp) + ": COMMITTED OFFSETS WERE NOT PUSHED to " + dest.value() +
                                         " (" + std::to_string(groups.size()) +
                                         " groups will restart from their last offset there): " + resp.body);
      }
    }

    set_step(p, "confirm");
    response confirmed;
    for (int attempt = 0; attempt < 3 && !confirmed.ok(); ++attempt) {
      request r = req("POST", "/cluster/owner", tp);
      r.params.clear();
      r.body = partition_body(tp, "broker", quoted(dest.value()));
      confirmed = co_await peers.call(dest.value(), std::move(r), claim);
    }
    if (!confirmed.ok())
      co_return status{errc::unavailable, "confirm on " + dest.value() +
                                              " failed; the move stays journaled and is "
                                              "resolved when " +
                                              dest.value() + " answers: " + confirmed.body};
    if (auto s = co_await offload(pool, [&] { return journal.remove(tp); }); !s)
      st.log.error("reassigner", "could not clear the journal entry of " + name_of(tp) + ": " + s.message());
    co_return status{};
  }
};

reassigner::reassigner(reassigner_options options, cluster_state state, peer_client& peers, move_journal& journal,
                       asio::thread_pool& blocking)
    : impl_(std::make_unique<impl>(options, state, peers, journal, blocking)) {}

reassigner::~reassigner() = default;

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
/// (every 5 s until the destination answers).
asio::awaitable<void> run_started(reassigner& r, move_journal& journal,
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
    asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::seconds(5));
    co_await t.async_wait(asio::use_awaitable);
  }
}

}  // namespace

result<std::uint64_t> reassigner::start(const asio::any_io_executor& ex, topic_partition tp, broker_id dest,
                                        std::optional<controller_claim> claim) {
  const broker_id& self = impl_->peers.directory().self;
  if (is_internal_topic(tp.topic)) return error{errc::invalid_argument, "internal topic " + name_of(tp) + " never moves"};
  if (dest == self) return error{errc::invalid_argument, name_of(tp) + " is already on " + self.value()};
  if (!serves(impl_->st.ownership, tp, self)) {
    auto o = impl_->st.ownership.owner(tp);
    return error{errc::not_owner,
                 name_of(tp) + " is served by " + (o ? o->value() : std::string("?")) + ", not by " + self.value()};
  }
  auto p = impl_->begin(tp, dest);
  if (!p) return p.err();
  const std::uint64_t id = (*p)->id;
  asio::co_spawn(ex, run_started(*this, impl_->journal, impl_->finish_after(std::move(*p), claim), std::move(tp)),
                 asio::detached);
  return id;
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
  const broker_id& self = impl_->peers.directory().self;
  for (const auto& m : impl_->journal.pending()) {
    auto resp = co_await impl_->peers.call(m.dest.value(), impl_->req("GET", "/cluster/owner", m.partition));
    rapidjson::Document d;
    d.Parse(resp.body.c_str(), resp.body.size());
    if (!resp.ok() || d.HasParseError() || !d.IsObject() || !d.HasMember("serves") || !d["serves"].IsBool()) {
      ++unresolved;
      impl_->st.log.warn("reassigner", "journaled move of " + name_of(m.partition) + " to " + m.dest.value() +
                                           " is unresolved: " + m.dest.value() + " did not answer");
      continue;
    }
    if (!d["serves"].GetBool()) {
      // The destination never served it: take it back, whole, here.
      if (auto s = co_await offload(impl_->pool, [&] { return impl_->flip(m.partition, self); }); !s) {
        ++unresolved;
        continue;
      }
      impl_->st.log.warn("reassigner", "move of " + name_of(m.partition) + " to " + m.dest.value() +
                                           " was interrupted before confirm; ownership rolled back to " + self.value());
    } else {
      impl_->st.log.info("reassigner", "move of " + name_of(m.partition) + " to " + m.dest.value() +
                                           " was confirmed before the restart");
    }
    (void)co_await offload(impl_->pool, [&] { return impl_->journal.remove(m.partition); });
  }
  co_return unresolved;
}

std::vector<move_progress> reassigner::progress() const {
  std::lock_guard lock(impl_->mu);
  std::vector<move_progress> out(impl_->finished.begin(), impl_->finished.end());
  for (const auto& [tp, p] : impl_->running) out.push_back(*p);
  return out;
}

}  // namespace moonmq::cluster
