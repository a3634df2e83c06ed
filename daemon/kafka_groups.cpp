#include "kafka_groups.hpp"

#include <algorithm>
#include <variant>

#include "moonmq/core/utf8.hpp"

namespace moonmq::daemon {

namespace ec = kafka::error_code;

namespace {

/// Kafka's code for a coordinator's refusal of a membership call.
std::int16_t member_code(const refusal& r) {
  switch (r.code()) {
    case errc::not_found:
      return ec::unknown_member_id;
    case errc::conflict:
      return ec::illegal_generation;
    case errc::not_owner:
      return ec::not_coordinator;
    case errc::unavailable:
      return ec::coordinator_not_available;
    case errc::invalid_argument:
      return ec::inconsistent_group_protocol;
    case errc::resource_exhausted:
      return ec::group_max_size_reached;
    default:
      return ec::unknown_server_error;
  }
}

bool valid_group(const std::string& id) { return valid_client_name(id); }

/// A member id a client may send back: one this broker could have given (anything else is no member of any group).
bool plausible_member(const std::string& id) { return valid_client_name(id, 64); }

}  // namespace

kafka::find_coordinator_response kafka_groups::find_coordinator(const kafka::find_coordinator_request& req,
                                                                 bool authorized) {
  kafka::find_coordinator_response out;
  if (!authorized) {
    out.error = req.key_type == 1 ? std::int16_t{53} : ec::group_authorization_failed;
    return out;
  }
  if (req.key_type != 0) {
    // Transactions over Kafka are not answered yet (docs/kafka.md): no coordinator is offered for them.
    out.error = ec::coordinator_not_available;
    out.message = "transactions are not answered on the Kafka listener yet";
    return out;
  }
  if (!valid_group(req.key)) {
    out.error = ec::invalid_group_id;
    return out;
  }
  const broker_id coordinator = p_.routes->coordinator_of(req.key);
  auto at = p_.locate(coordinator);
  if (!at) {
    out.error = ec::coordinator_not_available;
    out.message = "the coordinator of this group, " + coordinator.value() + ", has no known Kafka address";
    return out;
  }
  return *at;
}

kafka::join_group_response kafka_groups::join(const kafka::join_group_request& req, std::int16_t version,
                                              bool authorized) {
  kafka::join_group_response out;
  out.member_id = req.member_id;
  if (!authorized) {
    out.error = ec::group_authorization_failed;
    return out;
  }
  if (!valid_group(req.group_id)) {
    out.error = ec::invalid_group_id;
    return out;
  }
  if (req.session_timeout_ms < min_session_timeout_ms || req.session_timeout_ms > max_session_timeout_ms) {
    out.error = ec::invalid_session_timeout;
    return out;
  }
  // Consumer groups only, and an eager protocol whenever the member offers one (the assignment is the broker's, so
  // which one matters only for what the client does before it joins: an eager member gives up what it held).
  const kafka::join_group_request::protocol* chosen = nullptr;
  for (const auto& p : req.protocols)
    if (p.name != "cooperative-sticky") {
      chosen = &p;
      break;
    }
  const bool cooperative = !chosen && !req.protocols.empty();
  if (cooperative) chosen = &req.protocols.front();
  std::optional<kafka::subscription> sub;
  if (chosen) sub = kafka::decode_subscription(chosen->metadata);
  if (req.protocol_type != "consumer" || !chosen || !sub || sub->topics.empty()) {
    out.error = ec::inconsistent_group_protocol;
    return out;
  }
  groups::classic_call call;
  call.what = groups::classic_call::step::join;
  call.group = req.group_id;
  if (!req.member_id.empty() && !plausible_member(req.member_id)) {
    out.error = ec::unknown_member_id;
    return out;
  }
  call.join.member_id = req.member_id;
  call.join.broker = p_.routes->self();  // where the member's connection lives (it may be handed any partition)
  call.join.topics = {sub->topics.begin(), sub->topics.end()};
  call.join.session_timeout_ms = req.session_timeout_ms;
  call.join.cooperative = cooperative;
  for (const auto& [topic, partition] : sub->owned) call.join.owned.push_back({topic, partition});
  auto joined = p_.routes->classic(call);
  if (!joined) {
    out.error = member_code(joined.refused());
    return out;
  }
  out.member_id = joined->member_id;
  out.generation_id = static_cast<std::int32_t>(joined->generation);
  out.protocol_name = chosen->name;
  out.leader = broker_assigns;
  // KIP-394: from v4 a member without an id is given one and asked to join with it (it already is a member: a
  // client that never comes back is removed at its session timeout).
  if (req.member_id.empty() && version >= 4) out.error = ec::member_id_required;
  return out;
}

std::variant<groups::classic_answer, std::int16_t> kafka_groups::member_step(groups::classic_call::step what,
                                                                            const std::string& group_id,
                                                                            const std::string& member_id,
                                                                            std::int32_t generation, bool authorized) {
  if (!authorized) return ec::group_authorization_failed;
  if (!valid_group(group_id)) return ec::invalid_group_id;
  if (!plausible_member(member_id)) return ec::unknown_member_id;
  if (generation < 0) return ec::illegal_generation;
  groups::classic_call call;
  call.what = what;
  call.group = group_id;
  call.join.member_id = member_id;
  call.generation = static_cast<std::uint64_t>(generation);
  auto answer = p_.routes->classic(call);
  if (!answer) return member_code(answer.refused());
  return std::move(*answer);
}

kafka::sync_group_response kafka_groups::sync(const kafka::sync_group_request& req, bool authorized) {
  kafka::sync_group_response out;
  auto synced =
      member_step(groups::classic_call::step::sync, req.group_id, req.member_id, req.generation_id, authorized);
  if (auto* refused = std::get_if<std::int16_t>(&synced)) {
    out.error = *refused;
    return out;
  }
  std::vector<std::pair<std::string, std::int32_t>> assigned;
  for (const auto& tp : std::get<groups::classic_answer>(synced).assignment) assigned.emplace_back(tp.topic, tp.partition);
  out.assignment = kafka::encode_assignment(assigned);
  return out;
}

kafka::heartbeat_response kafka_groups::heartbeat(const kafka::heartbeat_request& req, bool authorized) {
  kafka::heartbeat_response out;
  auto beat =
      member_step(groups::classic_call::step::heartbeat, req.group_id, req.member_id, req.generation_id, authorized);
  if (auto* refused = std::get_if<std::int16_t>(&beat))
    out.error = *refused;
  else if (std::get<groups::classic_answer>(beat).rejoin)
    out.error = ec::rebalance_in_progress;
  return out;
}

std::int16_t kafka_groups::check_member(const std::string& group_id, const std::string& member_id,
                                        std::int32_t generation) {
  auto beat = member_step(groups::classic_call::step::heartbeat, group_id, member_id, generation, true);
  if (auto* refused = std::get_if<std::int16_t>(&beat))
    return *refused == ec::rebalance_in_progress ? ec::none : *refused;
  return ec::none;
}

kafka::leave_group_response kafka_groups::leave(const kafka::leave_group_request& req, bool authorized) {
  kafka::leave_group_response out;
  if (!authorized) {
    out.error = ec::group_authorization_failed;
    return out;
  }
  if (!valid_group(req.group_id)) {
    out.error = ec::invalid_group_id;
    return out;
  }
  for (const auto& id : req.member_ids) {
    std::int16_t code = ec::unknown_member_id;
    if (plausible_member(id)) {
      auto left = p_.routes->leave(req.group_id, id);
      code = left ? ec::none : member_code(left.refused());
    }
    out.members.emplace_back(id, code);
  }
  // Before v3 one member leaves, and its outcome is the answer's.
  if (out.members.size() == 1) out.error = out.members.front().second;
  return out;
}

kafka::offset_commit_response kafka_groups::commit(const kafka::offset_commit_request& req, bool authorized) {
  kafka::offset_commit_response out;
  std::int16_t all = ec::none;  // a refusal of the whole request, given to each partition
  if (!authorized) all = ec::group_authorization_failed;
  else if (!valid_group(req.group_id)) all = ec::invalid_group_id;
  const bool member = req.generation_id >= 0 || !req.member_id.empty();
  if (all == ec::none && member) {
    // The member and its generation first, as Kafka checks them: an unknown member or an old generation is refused
    // whole. (Each partition is then fenced again at its owner, under the commit gate.)
    groups::classic_call call;
    call.what = groups::classic_call::step::heartbeat;
    call.group = req.group_id;
    call.join.member_id = req.member_id;
    call.generation = static_cast<std::uint64_t>(std::max(req.generation_id, 0));
    if (!plausible_member(req.member_id)) all = ec::unknown_member_id;
    else if (auto beat = p_.routes->classic(call); !beat) all = member_code(beat.refused());
  }
  for (const auto& t : req.topics) {
    auto& rt = out.topics.emplace_back();
    rt.name = t.name;
    for (const auto& part : t.partitions) {
      std::int16_t code = all;
      if (code == ec::none && part.metadata && part.metadata->size() > storage::max_commit_metadata)
        code = ec::offset_metadata_too_large;
      if (code == ec::none && part.offset < 0) code = ec::offset_out_of_range;
      if (code == ec::none) {
        frontend::commit_request c{req.group_id, {t.name, part.index}, static_cast<std::uint64_t>(part.offset),
                                   member ? req.member_id : std::string(),
                                   member ? static_cast<std::uint64_t>(req.generation_id) : 0,
                                   part.metadata.value_or("")};
        auto done = p_.offsets->commit_at_owner(c);
        if (!done) {
          const auto& r = done.refused();
          switch (r.code()) {
            case errc::conflict:
              code = member ? ec::illegal_generation : ec::unknown_member_id;
              break;
            case errc::unavailable:
              // A coordinator that did not answer, or a partition between owners: both pass, so the client retries.
              code = r.by_coordinator ? ec::coordinator_not_available : ec::coordinator_load_in_progress;
              break;
            case errc::not_owner:
              code = ec::coordinator_load_in_progress;
              break;
            case errc::not_found:
              code = ec::unknown_topic_or_partition;
              break;
            case errc::offset_out_of_range:
              code = ec::offset_out_of_range;
              break;
            case errc::invalid_argument:  // metadata that is not UTF-8
              code = ec::invalid_request;
              break;
            default:
              code = ec::unknown_server_error;
          }
        }
      }
      rt.partitions.emplace_back(part.index, code);
    }
  }
  return out;
}

kafka::offset_fetch_response kafka_groups::fetch_offsets(const kafka::offset_fetch_request& req, std::int16_t version,
                                                         bool authorized) {
  kafka::offset_fetch_response out;
  std::int16_t all = ec::none;
  if (!authorized) all = ec::group_authorization_failed;
  else if (!valid_group(req.group_id)) all = ec::invalid_group_id;
  if (all != ec::none && version >= 2) {
    out.error = all;
    return out;
  }
  if (!req.topics) {
    // Every partition the group committed, each from the broker that serves it.
    auto all = p_.offsets->all_committed(req.group_id);
    if (!all) {
      out.error = ec::coordinator_load_in_progress;  // a broker did not answer: to be retried, never a partial list
      return out;
    }
    for (const auto& [tp, offset] : *all) {
      if (out.topics.empty() || out.topics.back().name != tp.topic) out.topics.emplace_back().name = tp.topic;
      auto& rp = out.topics.back().partitions.emplace_back();
      rp.index = tp.partition;
      rp.offset = static_cast<std::int64_t>(offset.offset);
      rp.metadata = offset.metadata;
    }
    return out;
  }
  for (const auto& t : *req.topics) {
    auto& rt = out.topics.emplace_back();
    rt.name = t.name;
    for (const auto index : t.partitions) {
      auto& rp = rt.partitions.emplace_back();
      rp.index = index;
      rp.metadata = "";
      if (all != ec::none) {
        rp.error = all;
        continue;
      }
      auto got = p_.offsets->committed_at_owner(req.group_id, {t.name, index});
      if (got) {
        rp.offset = *got ? static_cast<std::int64_t>((*got)->offset) : -1;
        if (*got) rp.metadata = (*got)->metadata;
        continue;
      }
      if (got.code() == errc::not_found) {
        rp.error = ec::unknown_topic_or_partition;
        continue;
      }
      // Not readable now (a partition between owners, an owner that did not answer): the whole request is to be
      // retried, never read as "nothing committed" (which would send the consumer to its reset policy).
      rp.error = ec::coordinator_load_in_progress;
      if (version >= 2) out.error = ec::coordinator_load_in_progress;
    }
  }
  return out;
}

}  // namespace moonmq::daemon
