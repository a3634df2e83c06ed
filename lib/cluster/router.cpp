#include "moonmq/cluster/router.hpp"

#include "moonmq/cluster/peer_fanout.hpp"
#include "moonmq/cluster/cluster_metrics.hpp"

#include <rapidjson/document.h>
#include <asio/use_awaitable.hpp>

#include <chrono>
#include <optional>
#include <shared_mutex>

#include "json/parse.hpp"
#include "moonmq/core/runtime_sleep.hpp"

namespace moonmq::cluster {

namespace {
constexpr int max_hints = 2;
}  // namespace

std::variant<result<produce_result>, broker_id> router::try_local(const topic_partition& tp,
                                                                  const std::vector<storage::record>& records,
                                                                  const append_options& how) {
  std::optional<storage::encoded_records> encoded;  // only for an append here: a forward encodes its own
  return try_local_with(
      tp, [&]() -> const storage::encoded_records& { return encoded.emplace(storage::encode_records(records)); }, how);
}

std::variant<result<produce_result>, broker_id> router::try_local(const topic_partition& tp,
                                                                  const storage::encoded_records& records,
                                                                  const append_options& how) {
  return try_local_with(tp, [&]() -> const storage::encoded_records& { return records; }, how);
}

template <typename Encoded>
std::variant<result<produce_result>, broker_id> router::try_local_with(const topic_partition& tp,
                                                                       const Encoded& encoded,
                                                                       const append_options& how) {
  const broker_id& self = peers_.directory().self;
  std::shared_lock gate(st_.gates.gate(tp), std::defer_lock);
  if (!how.never_wait)
    gate.lock();
  else if (!gate.try_lock())
    return result<produce_result>(error{errc::would_block, name_of(tp) + ": a cutover is under way"});
  // Not served here: the owner to forward to, or this broker itself while it waits to serve (a handover to it, or
  // catching up after a start), which the forward loop waits out.
  if (!serves(st_.ownership, tp, self)) return owner_as_seen_by(st_.ownership, tp, self);
  const storage::encoded_records& records = encoded();
  auto offsets = st_.producers.append(tp, records, how);
  if (!offsets) return result<produce_result>(offsets.err());
  st_.counters.count_produce(tp, records.bytes.size());
  return result<produce_result>(produce_result{std::move(*offsets), self});
}

/// One forwarding attempt's outcome: finished (with a result), wait for a handover, or try another owner.
struct router::forward_state {
  topic_partition tp;
  const std::vector<storage::record>* records;
  broker_id owner;
  std::string frames;
  time_ms deadline = 0;  ///< steady, on the router's runtime
  int hints = 0;

  transport::request request() const {
    transport::request req;
    req.path = "/cluster/append";
    req.params = {{"topic", tp.topic}, {"partition", std::to_string(tp.partition)}, {"mode", "produce"}};
    req.content_type = "application/octet-stream";
    req.body = frames;
    return req;
  }
};

router::forward_state router::begin_forward(topic_partition tp, const std::vector<storage::record>& records,
                                            broker_id owner) const {
  forward_state f{std::move(tp), &records, std::move(owner), {}, 0, 0};
  for (const auto& r : records) storage::encode_frame(r, f.frames);
  f.deadline = rt_.steady_ms() + peers_.directory().timeout.count();
  return f;
}

router::step router::interpret(forward_state& f, const transport::response& resp) {
  const broker_id& self = peers_.directory().self;
  const std::string name = f.tp.topic + "-" + std::to_string(f.tp.partition);
  rapidjson::Document d;
  const bool object = json::parse_object(resp.body, d);
  if (resp.ok() && object && d.HasMember("offsets") && d["offsets"].IsArray()) {
    produce_result out{{}, f.owner};
    for (const auto& o : d["offsets"].GetArray())
      if (o.IsUint64()) out.offsets.push_back(o.GetUint64());
    if (out.offsets.size() != f.records->size())
      return step::finish(
          error{errc::internal, "owner " + f.owner.value() + " acknowledged a different number of records"});
    st_.metrics.add(metrics::forwarded_records, {}, static_cast<double>(out.offsets.size()));
    return step::finish(std::move(out));
  }
  if (resp.status == 503 && object && d.HasMember("error") && d["error"] == "handover") return wait_for_handover(f);
  if (resp.status == 421 && object && d.HasMember("owner") && d["owner"].IsString()) {
    broker_id hinted(d["owner"].GetString());
    // A handover in progress (or just rolled back): wait, then look again from the start.
    if (hinted == self || hinted.value().empty()) return wait_for_handover(f);
    if (++f.hints > max_hints)
      return step::finish(error{errc::not_owner, "ownership of " + name + " forms a chain longer than " +
                                                     std::to_string(max_hints) + " hops; stopped at " +
                                                     f.owner.value()});
    f.owner = hinted;
    return step::again();
  }
  if (resp.status == 0)
    return step::finish(
        error{errc::unavailable, "owner " + f.owner.value() + " did not answer: " + read_peer_error(resp).message});
  // The owner's verdict on a producer's batch (fenced, out of order, a limit): the client's to act on, as if local.
  if (resp.status == 409 || resp.status == 429) return step::finish(transport::error_of(resp));
  // The owner does not know the topic or partition: it has not yet applied (Raft) or learned its creation or growth,
  // which this broker has. Retriable: it will (or, for a topic deleted meanwhile, this broker learns that too).
  if (resp.status == 404)
    return step::finish(error{errc::unavailable, "owner " + f.owner.value() + " does not know " + name +
                                                     " yet (the topic's change has not reached it): try again"});
  return step::finish(error{transport::error_of(resp).code, "owner " + f.owner.value() + " refused the records (HTTP " +
                                                                std::to_string(resp.status) + "): " + resp.body});
}

router::step router::wait_for_handover(const forward_state& f) const {
  if (rt_.steady_ms() + opt_.handover_pause.count() > f.deadline)
    return step::finish(error{errc::unavailable, f.tp.topic + "-" + std::to_string(f.tp.partition) +
                                                     " is being handed over to " + f.owner.value() + "; retry"});
  return step::wait();
}

/// After a handover pause: appended here if ownership came back, otherwise the owner to try next.
std::optional<result<produce_result>> router::recheck(forward_state& f) {
  auto local = try_local(f.tp, *f.records);
  if (auto* done = std::get_if<result<produce_result>>(&local)) return std::move(*done);
  f.owner = std::get<broker_id>(local);
  return std::nullopt;
}

asio::awaitable<result<produce_result>> router::forward(topic_partition tp, std::vector<storage::record> records,
                                                        broker_id owner) {
  forward_state f = begin_forward(std::move(tp), records, std::move(owner));
  for (;;) {
    step s = wait_for_handover(f);
    if (f.owner != peers_.directory().self) {
      auto resp = co_await peers_.call(f.owner.value(), f.request());
      s = interpret(f, resp);
    }
    if (s.kind == step::done) co_return std::move(*s.out);
    if (s.kind == step::pause) {
      co_await sleep_on(rt_, opt_.handover_pause);
      if (auto here = recheck(f)) co_return std::move(*here);
    }
  }
}

std::optional<result<produce_result>> router::forward_blocking(topic_partition tp,
                                                               const std::vector<storage::record>& records,
                                                               broker_id owner) {
  forward_state f = begin_forward(std::move(tp), records, std::move(owner));
  for (;;) {
    step s = wait_for_handover(f);
    if (f.owner != peers_.directory().self) {
      auto resp = peers_.call_now(f.owner.value(), f.request());
      if (!resp) return std::nullopt;  // this transport cannot block: use forward()
      s = interpret(f, *resp);
    }
    if (s.kind == step::done) return std::move(*s.out);
    if (s.kind == step::pause) {
      rt_.block_for(opt_.handover_pause);
      if (auto here = recheck(f)) return std::move(*here);
    }
  }
}

asio::awaitable<result<produce_result>> router::produce(topic_partition tp, std::vector<storage::record> records) {
  auto local = try_local(tp, records);
  if (auto* done = std::get_if<result<produce_result>>(&local)) co_return std::move(*done);
  co_return co_await forward(std::move(tp), std::move(records), std::get<broker_id>(local));
}

}  // namespace moonmq::cluster
