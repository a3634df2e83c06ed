#include "moonmq/frontend/produce.hpp"

#include <asio/co_spawn.hpp>
#include <asio/use_future.hpp>

#include "moonmq/core/fnv1a.hpp"
#include "moonmq/core/offload.hpp"
#include "moonmq/frontend/frontend_metrics.hpp"
#include "moonmq/txn/txn_metrics.hpp"
#include "moonmq/txn/txn_service.hpp"

namespace moonmq::frontend {

outcome<produce_frontend::plan> produce_frontend::prepare(produce_request& req) {
  const bool encoded = !req.encoded.empty();
  if (req.records.empty() && !encoded) return error{errc::invalid_argument, "records: expected at least one"};
  if (encoded && (!req.records.empty() || req.forward || !req.partition))
    return error{errc::invalid_argument, "encoded records go alone, to a named partition, appended where they arrive"};
  const bool transactional = !req.transactional_id.empty();
  if (transactional && !req.producer)
    return error{errc::invalid_argument, "a transactional produce names its producer (id, epoch, sequence)"};
  if (transactional && !p_.txns)
    return error{errc::unavailable, "transactions are not available on this broker"};
  plan at;
  bool agrees = true;  // the frames are stamped by the producer the request names, transactional as it says
  storage::for_each_frame(req.encoded.bytes, 0, [&](const storage::record_view& v) {
    if (v.offset == 0)  // the first frame
      agrees = v.producer.has_value() == req.producer.has_value() && (!v.producer || *v.producer == *req.producer) &&
               static_cast<bool>(v.attributes & storage::attr_transactional) == transactional;
    at.bytes += (v.key ? v.key->size() : 0) + v.value.size();
  });
  if (!agrees) return error{errc::invalid_argument, "the encoded records' producer stamps do not match the request"};
  for (std::size_t i = 0; i < req.records.size(); ++i) {
    auto& rec = req.records[i];
    at.bytes += (rec.key ? rec.key->size() : 0) + rec.value.size();
    if (req.producer) {
      rec.producer = *req.producer;
      rec.producer->sequence += static_cast<std::uint32_t>(i);
    }
    if (transactional) rec.attributes |= storage::attr_transactional;
  }
  const std::string& topic = req.topic;
  auto count = p_.store->partition_count(topic);
  std::map<std::int32_t, broker_id> owners;  // of a topic this broker does not have, as the brokers say
  if (!count && req.never_wait) return error{errc::would_block, "topic '" + topic + "' is not held here"};
  if (!count) {
    // Not a topic here, but a partition the ownership table places on a peer (with Raft, every broker knows every
    // move): route it there.
    auto owner = req.partition && *req.partition >= 0 ? p_.ownership->owner({topic, *req.partition}) : std::nullopt;
    if (owner && *owner != p_.self) {
      count = *req.partition + 1;
      at.elsewhere = owner;
    } else if (p_.placement && !(owners = p_.placement->topic_owners(topic)).empty()) {
      // Without Raft nothing here knows: the brokers say which of them serve the topic's partitions (a partition
      // past those the directory holds may be new: it looks again before calling it missing).
      count = owners.rbegin()->first + 1;
      if (req.partition && *req.partition >= *count)
        if (auto more = p_.placement->owner_of({topic, *req.partition})) {
          owners[*req.partition] = *more;
          count = *req.partition + 1;
        }
    } else if (auto silent = unplaced_while_silent(p_.placement, topic, req.partition, "topic '" + topic + "'")) {
      return *silent;
    } else {
      return count.err();
    }
  }
  if (req.partition && (*req.partition < 0 || *req.partition >= *count))
    return error{errc::not_found, "topic '" + topic + "' has no partition " + std::to_string(*req.partition)};
  const auto n = static_cast<std::uint32_t>(*count);
  const std::int32_t partition =
      req.partition ? *req.partition
                    : static_cast<std::int32_t>(req.records[0].key ? fnv1a(*req.records[0].key) % n
                                                                   : round_robin_++ % n);
  at.tp = {topic, partition};
  if (!owners.empty()) {
    auto it = owners.find(partition);
    auto owner = it != owners.end() ? std::optional<broker_id>(it->second) : p_.placement->owner_of(at.tp);
    if (!owner) return error{errc::unavailable, "no reachable broker serves " + name_of(at.tp) + "; retry"};
    at.elsewhere = *owner;
  }
  at.joined_owner = at.elsewhere ? *at.elsewhere : cluster::owner_as_seen_by(*p_.ownership, at.tp, p_.self);
  if (transactional && req.join_on_open) {
    if (req.forward) return error{errc::invalid_argument, "join_on_open is for a produce appended where it arrives"};
    at.joined_owner = p_.self;  // joined in produce(), if at all, for an append here
  } else if (transactional) {
    auto joined = p_.txns->join(req.transactional_id, req.producer->id, req.producer->epoch, at.tp, at.joined_owner);
    if (!joined) {
      if (joined.code() == errc::producer_fenced && p_.metrics) p_.metrics->add(txn::metrics::producer_fenced, 1);
      return joined.err();
    }
    at.joined_owner = *joined;
  }
  return at;
}

outcome<produced> produce_frontend::finish(const produce_request& req, const plan& at,
                                           result<cluster::produce_result> done) {
  const bool transactional = !req.transactional_id.empty();
  if (!done) {
    if (done.code() == errc::producer_fenced && p_.metrics) p_.metrics->add(txn::metrics::producer_fenced, 1);
    if (transactional && (done.code() == errc::conflict || done.code() == errc::producer_fenced))
      p_.txns->forget_join(req.transactional_id, req.producer->id, req.producer->epoch, at.tp);
    return done.err();
  }
  if (transactional && done->broker != at.joined_owner) {
    // The coordinator was told of another owner (this broker's view was stale, and the forward followed the owner's
    // hints, or the partition moved since it was declared): the coordinator sends its markers straight to the broker
    // that took the records, which a broker on the way may not be alive to point to.
    if (auto s = p_.txns->join_again(req.transactional_id, req.producer->id, req.producer->epoch, at.tp, done->broker);
        !s) {
      p_.txns->forget_join(req.transactional_id, req.producer->id, req.producer->epoch, at.tp);
      return s.err();  // a retry is deduplicated and asks again
    }
  }
  if (at.elsewhere && done->broker != *at.elsewhere && p_.placement) p_.placement->learn(at.tp, done->broker);
  if (p_.metrics) {
    p_.metrics->add(metrics::produced_records, {{"topic", at.tp.topic}}, static_cast<double>(done->offsets.size()));
    p_.metrics->add(metrics::produced_bytes, {{"topic", at.tp.topic}}, static_cast<double>(at.bytes));
  }
  return produced{at.tp.partition, std::move(done->offsets), std::move(done->broker)};
}

outcome<produced> produce_frontend::served_elsewhere(const topic_partition& tp, const broker_id& owner) {
  if (p_.placement) p_.placement->learn(tp, owner);
  return error{errc::not_owner, name_of(tp) + " is served by " + owner.value()};
}

outcome<produced> produce_frontend::produce(produce_request req) {
  if (req.never_wait && (req.forward || !req.transactional_id.empty()))
    return error{errc::would_block, "a forwarded or transactional produce may wait"};
  auto at = prepare(req);
  if (!at) return at.refused();
  if (!req.forward && at->elsewhere) return served_elsewhere(at->tp, *at->elsewhere);
  // A topic this broker does not have goes straight to its owner (trying it here would only find no topic).
  const bool join_on_open = req.join_on_open && !req.transactional_id.empty();
  const cluster::append_options how{
      .must_be_open = join_on_open, .sequences_run_on = join_on_open, .never_wait = req.never_wait};
  auto append_here = [&](const cluster::append_options& with) {
    return req.encoded.empty() ? p_.router->try_local(at->tp, req.records, with)
                               : p_.router->try_local(at->tp, req.encoded, with);
  };
  auto local = at->elsewhere ? decltype(append_here(how))(*at->elsewhere) : append_here(how);
  if (auto* here = std::get_if<result<cluster::produce_result>>(&local);
      join_on_open && here && !*here && here->code() == errc::not_found) {
    // The batch opens the transaction here: the coordinator records the partition first (asked afresh: what this
    // broker remembers joining may be an earlier transaction of the same epoch).
    auto joined = p_.txns->join(req.transactional_id, req.producer->id, req.producer->epoch, at->tp, p_.self, false);
    if (!joined) {
      if (joined.code() == errc::producer_fenced && p_.metrics) p_.metrics->add(txn::metrics::producer_fenced, 1);
      return joined.err();
    }
    at->joined_owner = *joined;
    local = append_here({false, true});
  }
  if (auto* here = std::get_if<result<cluster::produce_result>>(&local)) return finish(req, *at, std::move(*here));
  // On this thread, straight to the owner: no hop to the reactor and back for every forwarded produce.
  const broker_id owner = std::get<broker_id>(local);
  if (!req.forward) return served_elsewhere(at->tp, owner);
  if (auto now = p_.router->forward_blocking(at->tp, req.records, owner)) return finish(req, *at, std::move(*now));
  auto later = asio::co_spawn(p_.reactor, as_optional(p_.router->forward(at->tp, std::move(req.records), owner)),
                              asio::use_future);
  return finish(req, *at, std::move(*later.get()));
}

asio::awaitable<outcome<produced>> produce_frontend::produce_async(produce_request req) {
  if (req.join_on_open || !req.encoded.empty())
    co_return error{errc::invalid_argument, "join_on_open and encoded records are for produce()"};
  auto at = prepare(req);
  if (!at) co_return at.refused();
  if (!req.forward && at->elsewhere) co_return served_elsewhere(at->tp, *at->elsewhere);
  if (at->elsewhere)
    co_return finish(req, *at, co_await p_.router->forward(at->tp, std::move(req.records), *at->elsewhere));
  co_return finish(req, *at, co_await p_.router->produce(at->tp, std::move(req.records)));
}

result<std::map<std::int32_t, broker_id>> produce_frontend::owners(const std::string& topic,
                                                                   const std::set<std::int32_t>& partitions) const {
  std::map<std::int32_t, broker_id> out;
  std::set<std::int32_t> unknown;
  auto count = p_.store->partition_count(topic);
  for (std::int32_t p : partitions) {
    const topic_partition tp{topic, p};
    if (count && p < *count)
      out.emplace(p, cluster::owner_as_seen_by(*p_.ownership, tp, p_.self));
    else if (auto owner = p_.ownership->owner(tp))
      out.emplace(p, *owner);
    else
      unknown.insert(p);
  }
  if (unknown.empty()) return out;
  const auto served = p_.placement ? p_.placement->topic_owners(topic) : std::map<std::int32_t, broker_id>{};
  for (std::int32_t p : unknown) {
    auto it = served.find(p);
    auto owner = it != served.end() ? std::optional<broker_id>(it->second)
                 : p_.placement     ? p_.placement->owner_of({topic, p})
                                    : std::nullopt;
    if (owner) {
      out.emplace(p, *owner);
      continue;
    }
    const std::string name = name_of({topic, p});
    if (auto silent = unplaced_while_silent(p_.placement, topic, p, name)) return *silent;
    return error{errc::not_found, "no broker has " + name};
  }
  return out;
}

}  // namespace moonmq::frontend
