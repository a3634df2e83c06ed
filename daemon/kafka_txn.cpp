#include "kafka_txn.hpp"

#include <map>
#include <set>
#include <variant>

#include "moonmq/core/topic_name.hpp"
#include "moonmq/core/utf8.hpp"

namespace moonmq::daemon {

namespace ec = kafka::error_code;

namespace {

/// Kafka's code for a coordinator's refusal of a producer's call. `fenced`: the code a fenced producer gets in this
/// API version (PRODUCER_FENCED where it exists, INVALID_PRODUCER_EPOCH before).
std::int16_t txn_code(const refusal& r, std::int16_t fenced) {
  if (r.by_coordinator) return ec::coordinator_not_available;
  switch (r.code()) {
    case errc::producer_fenced:
      return fenced;
    case errc::not_found:  // the transactional id has no session on its coordinator
      return ec::invalid_producer_id_mapping;
    case errc::invalid_argument:  // an epoch the coordinator never gave
      return ec::invalid_producer_epoch;
    case errc::unavailable:  // the previous transaction is still being completed
      return ec::concurrent_transactions;
    case errc::conflict:  // ending the other way what was ended, or ending what is being ended
      return ec::invalid_txn_state;
    case errc::not_owner:
      return ec::not_coordinator;
    default:
      return ec::unknown_server_error;
  }
}

/// The producer's identity as the coordinator knows it, or nullopt when the request's cannot be one it gave.
std::optional<std::pair<std::uint64_t, std::uint32_t>> identity(const kafka::txn_producer& p) {
  if (p.producer_id < 0 || p.producer_epoch < 0) return std::nullopt;
  return std::pair{static_cast<std::uint64_t>(p.producer_id), static_cast<std::uint32_t>(p.producer_epoch)};
}

/// The session a producer's request names, or the Kafka code that refuses it before the coordinator is asked (the
/// connection's role, an id or epoch the coordinator cannot have given).
std::variant<std::pair<std::uint64_t, std::uint32_t>, std::int16_t> checked(const kafka::txn_producer& p,
                                                                           bool authorized) {
  if (!authorized) return ec::transactional_id_authorization_failed;
  const auto who = identity(p);
  if (!who || !valid_client_name(p.transactional_id)) return ec::invalid_producer_id_mapping;
  return *who;
}

}  // namespace

kafka::init_producer_id_response kafka_txn::init_producer_id(const kafka::init_producer_id_request& req,
                                                             std::int16_t version, bool authorized) {
  kafka::init_producer_id_response out;
  const std::int16_t fenced = version >= 4 ? ec::producer_fenced : ec::invalid_producer_epoch;
  if (!authorized) {
    out.error = req.transactional_id ? ec::transactional_id_authorization_failed : ec::cluster_authorization_failed;
    return out;
  }
  txn::init_options o;
  if (req.transactional_id) {
    if (!valid_client_name(*req.transactional_id)) {
      out.error = ec::invalid_request;
      return out;
    }
    if (req.transaction_timeout_ms <= 0 || req.transaction_timeout_ms > p_.max_timeout_ms) {
      out.error = ec::invalid_transaction_timeout;
      return out;
    }
    o.session.keeps_epoch = true;
    o.session.timeout_ms = req.transaction_timeout_ms;
    // KIP-360: a producer that has a session asks for its own epoch's bump.
    if (req.producer_id >= 0 && req.producer_epoch >= 0)
      o.expected = txn::producer_identity{static_cast<std::uint64_t>(req.producer_id),
                                          static_cast<std::uint32_t>(req.producer_epoch)};
  }
  auto id = p_.txns->init(req.transactional_id, o);
  if (!id) {
    out.error = txn_code(id.refused(), fenced);
    return out;
  }
  out.producer_id = static_cast<std::int64_t>(id->producer_id);
  out.producer_epoch = static_cast<std::int16_t>(id->epoch);
  return out;
}

kafka::find_coordinator_response kafka_txn::find_coordinator(const kafka::find_coordinator_request& req,
                                                             bool authorized) {
  kafka::find_coordinator_response out;
  if (!authorized) {
    out.error = ec::transactional_id_authorization_failed;
    return out;
  }
  if (!valid_client_name(req.key)) {
    out.error = ec::invalid_request;
    return out;
  }
  const broker_id coordinator = p_.txns->coordinator_of(req.key);
  auto at = p_.locate(coordinator);
  if (!at) {
    out.error = ec::coordinator_not_available;
    out.message = "the coordinator of this transactional id, " + coordinator.value() + ", has no known Kafka address";
    return out;
  }
  return *at;
}

kafka::add_partitions_to_txn_response kafka_txn::add_partitions(const kafka::add_partitions_to_txn_request& req,
                                                                bool authorized) {
  kafka::add_partitions_to_txn_response out;
  auto answer_all = [&](std::int16_t code) {
    for (const auto& t : req.topics) {
      out.topics.push_back({t.name, {}});
      for (auto p : t.partitions) out.topics.back().partitions.push_back({p, code});
    }
    return out;
  };
  const auto session = checked(req.producer, authorized);
  if (const auto* refused = std::get_if<std::int16_t>(&session)) return answer_all(*refused);
  const auto* who = &std::get<0>(session);
  // Kafka's rule: a partition that cannot be added fails the request; the others are not attempted.
  std::vector<topic_partition> asked;
  std::set<std::pair<std::string, std::int32_t>> unknown;
  for (const auto& t : req.topics)
    for (auto p : t.partitions) {
      if (p < 0 || !validate_topic_name(t.name))
        unknown.insert({t.name, p});
      else
        asked.push_back({t.name, p});
    }
  if (unknown.empty() && !asked.empty()) {
    // The partitions, a declaration at a time (each names at most transactions_frontend::max_declared_topics
    // topics; Kafka has no such bound, so a larger request is split here).
    std::map<std::string, std::vector<topic_partition>> by_topic;
    for (const auto& tp : asked) by_topic[tp.topic].push_back(tp);
    std::vector<std::vector<topic_partition>> declarations(1);
    std::size_t topics = 0;
    for (const auto& [topic, tps] : by_topic) {
      if (topics++ == frontend::transactions_frontend::max_declared_topics) {
        declarations.emplace_back();
        topics = 1;
      }
      declarations.back().insert(declarations.back().end(), tps.begin(), tps.end());
    }
    for (const auto& some : declarations) {
      auto declared = p_.txns->declare(req.producer.transactional_id, who->first, who->second, some);
      if (declared) continue;
      // "no broker has T-n": the session is fine, a partition is not (its topic's partitions are marked below).
      const bool no_partition = declared.code() == errc::not_found && !declared.refused().by_coordinator &&
                                declared.message().rfind("no transactional id", 0) != 0;
      if (!no_partition) return answer_all(txn_code(declared.refused(), ec::invalid_producer_epoch));
      for (const auto& tp : some) {
        auto one = p_.txns->declare(req.producer.transactional_id, who->first, who->second, {tp});
        if (!one && one.code() == errc::not_found) unknown.insert({tp.topic, tp.partition});
      }
      if (unknown.empty()) return answer_all(txn_code(declared.refused(), ec::invalid_producer_epoch));
    }
    if (unknown.empty()) return answer_all(ec::none);
  }
  for (const auto& t : req.topics) {
    out.topics.push_back({t.name, {}});
    for (auto p : t.partitions)
      out.topics.back().partitions.push_back(
          {p, unknown.count({t.name, p}) ? ec::unknown_topic_or_partition : ec::operation_not_attempted});
  }
  return out;
}

kafka::txn_error_response kafka_txn::add_offsets(const kafka::add_offsets_to_txn_request& req, bool authorized) {
  kafka::txn_error_response out;
  const auto session = checked(req.producer, authorized);
  if (const auto* refused = std::get_if<std::int16_t>(&session)) {
    out.error = *refused;
    return out;
  }
  const auto* who = &std::get<0>(session);
  if (!valid_client_name(req.group_id)) {
    out.error = ec::invalid_group_id;
    return out;
  }
  // The offsets themselves come with TxnOffsetCommit: here the session is checked and the transaction opened.
  auto added = p_.txns->add_offsets(req.producer.transactional_id, who->first, who->second, req.group_id, {});
  if (!added) out.error = txn_code(added.refused(), ec::invalid_producer_epoch);
  return out;
}

kafka::txn_offset_commit_response kafka_txn::commit_offsets(const kafka::txn_offset_commit_request& req,
                                                            std::int16_t version, bool authorized) {
  kafka::txn_offset_commit_response out;
  auto answer_all = [&](std::int16_t code) {
    for (const auto& t : req.topics) {
      out.topics.push_back({t.name, {}});
      for (const auto& p : t.partitions) out.topics.back().partitions.push_back({p.index, code});
    }
    return out;
  };
  (void)version;  // v3 adds the member's generation; a fenced producer is INVALID_PRODUCER_EPOCH in every version
  const std::int16_t fenced = ec::invalid_producer_epoch;
  const auto session = checked(req.producer, authorized);
  if (const auto* refused = std::get_if<std::int16_t>(&session)) return answer_all(*refused);
  const auto* who = &std::get<0>(session);
  if (!valid_client_name(req.group_id)) return answer_all(ec::invalid_group_id);
  // KIP-447: a member that names itself must be the group's current member at that generation, so that a consumer
  // that lost its partitions in a rebalance cannot commit their offsets in a transaction.
  if (!req.member_id.empty() && req.generation_id >= 0 && p_.check_member)
    if (auto code = p_.check_member(req.group_id, req.member_id, req.generation_id); code != ec::none)
      return answer_all(code);
  std::vector<std::pair<topic_partition, std::uint64_t>> offsets;
  for (const auto& t : req.topics)
    for (const auto& p : t.partitions) {
      if (p.index < 0 || p.offset < 0 || !validate_topic_name(t.name)) return answer_all(ec::invalid_request);
      offsets.push_back({{t.name, p.index}, static_cast<std::uint64_t>(p.offset)});
    }
  auto added = p_.txns->add_offsets(req.producer.transactional_id, who->first, who->second, req.group_id, offsets);
  return answer_all(added ? ec::none : txn_code(added.refused(), fenced));
}

kafka::txn_error_response kafka_txn::end(const kafka::end_txn_request& req, bool authorized) {
  kafka::txn_error_response out;
  const auto session = checked(req.producer, authorized);
  if (const auto* refused = std::get_if<std::int16_t>(&session)) {
    out.error = *refused;
    return out;
  }
  const auto* who = &std::get<0>(session);
  // Answered once the decision is durable: the markers follow (the producer's next call waits for them), as
  // Kafka's coordinator does.
  auto ended = p_.txns->end({req.producer.transactional_id, who->first, who->second, req.committed, false});
  if (!ended) out.error = txn_code(ended.refused(), ec::invalid_producer_epoch);
  return out;
}

}  // namespace moonmq::daemon
