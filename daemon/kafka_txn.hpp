// The Kafka listener's producer ids and transactions: InitProducerId (idempotent and transactional),
// FindCoordinator for a transactional id, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn, on the
// transaction coordinators the HTTP API uses (frontend::transactions_frontend). A Kafka client's session keeps its
// epoch across its transactions (txn::coordinator); every call may arrive at any broker and runs on the id's
// coordinator. What a client sees is in docs/kafka.md, "Transactions".
// Thread safety: every method may be called concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "moonmq/frontend/transactions.hpp"
#include "moonmq/kafka/group_messages.hpp"
#include "moonmq/kafka/txn_messages.hpp"

namespace moonmq::daemon {

struct kafka_txn_parts {
  frontend::transactions_frontend* txns = nullptr;
  /// A broker's Kafka node id and advertised address (nullopt: not known).
  std::function<std::optional<kafka::find_coordinator_response>(const broker_id&)> locate;
  /// The longest transaction timeout a producer may ask for (Server.Transactions.TimeoutMs).
  std::int64_t max_timeout_ms = 60'000;
  /// A group member's generation, checked as a heartbeat would (0: current; else its Kafka code).
  std::function<std::int16_t(const std::string& group, const std::string& member, std::int32_t generation)>
      check_member;
};

class kafka_txn {
 public:
  explicit kafka_txn(kafka_txn_parts parts) : p_(std::move(parts)) {}

  /// `authorized`: the connection's role may produce; without it each answer is an authorization failure.
  kafka::init_producer_id_response init_producer_id(const kafka::init_producer_id_request& req, std::int16_t version,
                                                    bool authorized);
  kafka::find_coordinator_response find_coordinator(const kafka::find_coordinator_request& req, bool authorized);
  kafka::add_partitions_to_txn_response add_partitions(const kafka::add_partitions_to_txn_request& req,
                                                       bool authorized);
  kafka::txn_error_response add_offsets(const kafka::add_offsets_to_txn_request& req, bool authorized);
  kafka::txn_offset_commit_response commit_offsets(const kafka::txn_offset_commit_request& req, std::int16_t version,
                                                   bool authorized);
  kafka::txn_error_response end(const kafka::end_txn_request& req, bool authorized);

 private:
  kafka_txn_parts p_;
};

}  // namespace moonmq::daemon
