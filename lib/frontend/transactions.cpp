#include "moonmq/frontend/transactions.hpp"

#include <random>

namespace moonmq::frontend {

std::uint64_t fresh_producer_id() {
  std::random_device rd;
  std::uint64_t id = 0;
  while (id == 0) id = ((static_cast<std::uint64_t>(rd()) << 32) | rd()) & 0x7fffffffffffffffULL;
  return id;
}

outcome<txn::producer_identity> transactions_frontend::init(const std::optional<std::string>& transactional_id,
                                                           const txn::init_options& options) {
  if (!transactional_id) return txn::producer_identity{fresh_producer_id(), 0};
  return p_.txns->init(*transactional_id, options);
}

outcome<done> transactions_frontend::declare(const std::string& transactional_id, std::uint64_t producer_id,
                                             std::uint32_t epoch, const std::vector<topic_partition>& partitions) {
  std::map<std::string, std::set<std::int32_t>> by_topic;
  for (const auto& tp : partitions) by_topic[tp.topic].insert(tp.partition);
  if (by_topic.size() > max_declared_topics)
    return error{errc::invalid_argument,
                 "partitions: at most " + std::to_string(max_declared_topics) + " topics in one declaration"};
  std::vector<std::pair<topic_partition, broker_id>> owned;
  for (const auto& [topic, numbers] : by_topic) {
    auto owners = p_.owners_of(topic, numbers);
    if (!owners) return owners.err();
    for (const auto& [p, owner] : *owners) owned.emplace_back(topic_partition{topic, p}, owner);
  }
  if (auto s = p_.txns->join_all(transactional_id, producer_id, epoch, owned); !s)
    return s.err();
  return done{};
}

outcome<done> transactions_frontend::add_offsets(const std::string& transactional_id, std::uint64_t producer_id,
                                                 std::uint32_t epoch, const std::string& group,
                                                 const std::vector<std::pair<topic_partition, std::uint64_t>>& offsets) {
  txn::offsets_call c{transactional_id, producer_id, epoch, group, {}};
  for (const auto& [tp, offset] : offsets) c.offsets.push_back({{group, tp, offset}, p_.owner_of(tp)});
  return p_.txns->add_offsets(c);
}

}  // namespace moonmq::frontend
