#include "moonmq/cluster/router.hpp"

#include <rapidjson/document.h>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include <chrono>
#include <shared_mutex>

namespace moonmq::cluster {

namespace {
constexpr int max_hints = 2;
constexpr auto handover_pause = std::chrono::milliseconds(20);
}  // namespace

std::variant<result<produce_result>, broker_id> router::try_local(const topic_partition& tp,
                                                                  const std::vector<storage::record>& records) {
  const broker_id& self = peers_.directory().self;
  std::shared_lock gate(st_.gates.gate(tp));
  auto owner = st_.ownership.owner(tp);
  if (owner && *owner != self) return *owner;
  auto offsets = st_.store.append(tp, records);
  if (!offsets) return result<produce_result>(offsets.err());
  std::uint64_t bytes = 0;
  for (const auto& r : records) bytes += storage::frame_size(r);
  st_.counters.count_produce(tp, bytes);
  return result<produce_result>(produce_result{std::move(*offsets), self});
}

asio::awaitable<result<produce_result>> router::forward(topic_partition tp, std::vector<storage::record> records,
                                                        broker_id owner) {
  const broker_id& self = peers_.directory().self;
  std::string frames;
  for (const auto& r : records) storage::encode_frame(r, frames);
  const auto deadline = std::chrono::steady_clock::now() + peers_.directory().timeout;
  int hints = 0;
  for (;;) {
    transport::request req;
    req.path = "/cluster/append";
    req.params = {{"topic", tp.topic}, {"partition", std::to_string(tp.partition)}, {"mode", "produce"}};
    req.content_type = "application/octet-stream";
    req.body = frames;
    auto resp = co_await peers_.call(owner.value(), std::move(req));
    rapidjson::Document d;
    d.Parse(resp.body.c_str(), resp.body.size());
    const bool json = !d.HasParseError() && d.IsObject();
    if (resp.ok() && json && d.HasMember("offsets") && d["offsets"].IsArray()) {
      produce_result out{{}, owner};
      for (const auto& o : d["offsets"].GetArray())
        if (o.IsUint64()) out.offsets.push_back(o.GetUint64());
      if (out.offsets.size() != records.size())
        co_return error{errc::internal, "owner " + owner.value() + " acknowledged a different number of records"};
      co_return out;
    }
    if (resp.status == 421 && json && d.HasMember("owner") && d["owner"].IsString()) {
      broker_id hinted(d["owner"].GetString());
      if (hinted == self || hinted.value().empty()) {
        // A handover in progress (or just rolled back): wait, then look again from the start.
        if (std::chrono::steady_clock::now() + handover_pause > deadline)
          co_return error{errc::unavailable, tp.topic + "-" + std::to_string(tp.partition) +
                                                 " is being handed over to " + owner.value() + "; retry"};
        asio::steady_timer t(co_await asio::this_coro::executor, handover_pause);
        co_await t.async_wait(asio::use_awaitable);
        auto local = try_local(tp, records);
        if (auto* done = std::get_if<result<produce_result>>(&local)) co_return std::move(*done);
        owner = std::get<broker_id>(local);
        continue;
      }
      if (++hints > max_hints)
        co_return error{errc::not_owner, "ownership of " + tp.topic + "-" + std::to_string(tp.partition) +
                                             " forms a chain longer than " + std::to_string(max_hints) +
                                             " hops; stopped at " + owner.value()};
      owner = hinted;
      continue;
    }
    if (resp.status == 0)
      co_return error{errc::unavailable, "owner " + owner.value() + " did not answer: " + resp.body};
    co_return error{
        resp.status == 400 ? errc::invalid_argument : errc::internal,
        "owner " + owner.value() + " refused the records (HTTP " + std::to_string(resp.status) + "): " + resp.body};
  }
}

asio::awaitable<result<produce_result>> router::produce(topic_partition tp, std::vector<storage::record> records) {
  auto local = try_local(tp, records);
  if (auto* done = std::get_if<result<produce_result>>(&local)) co_return std::move(*done);
  co_return co_await forward(std::move(tp), std::move(records), std::get<broker_id>(local));
}

}  // namespace moonmq::cluster
