// The bodies of the topic admin routes, each written and read side by side: the client API's answers
// (POST /v1/topics, .../partitions, DELETE, .../adopt, GET /v1/topics) and the cluster routes between brokers
// (/cluster/admin/topics/{change,holds,claim}; learn and catalog carry cluster/topic_json.hpp's record and catalog).
// A refusal is `{"error","message"}` with the HTTP status of its code, except two names kept from before this module:
// `topic_exists` (409, errc::already_exists) and `not_coordinator` (421, a change sent to a broker that does not
// decide the topic). Internal to lib/ and daemon/.
#pragma once

#include <string>
#include <string_view>

#include "cluster/topic_json.hpp"
#include "moonmq/frontend/topic_admin.hpp"
#include "moonmq/transport/message.hpp"

namespace moonmq::frontend::wire {

/// A refusal as the topic routes answer it.
transport::response topic_refusal_response(const refusal& r);
/// A topic route's error answer read back (the inverse of topic_refusal_response; status 0: no answer).
refusal read_topic_refusal(const transport::response& r);

/// `{"name","partitions","version","created","owners",["deleted"],["not_yet_told"]}`; for a topic the catalog does
/// not list, `{"name","partitions","catalog":false}`.
std::string topic_decision_body(const topic_decision& d);
result<topic_decision> read_topic_decision(std::string_view body);

/// GET /v1/topics: `{"topics":[...]}`, an unlisted topic with `"catalog":false,"broker"`.
std::string topic_list_body(const std::vector<topic_listing>& topics, const broker_id& self);

/// POST /cluster/admin/topics/change: `{"op","name","partitions","placement","brokers"}`.
std::string topic_change_request_body(const topic_admin_request& r);
result<topic_admin_request> read_topic_change_request(std::string_view body);

/// GET /cluster/admin/topics/holds?name=&partitions=: `{"holds","served",["no_room":{"error","message"}]}`.
std::string topic_holding_body(const topic_holding& h);
/// A peer's answer; `answered` false (with why) when it is none or not this document.
topic_holding read_topic_holding(const broker_id& peer, const transport::response& r);

/// POST /cluster/admin/topics/claim: `{"name","created","partitions","disowned":[partitions]}`.
std::string topic_claim_body(const topic_claim& c);
result<topic_claim> read_topic_claim(std::string_view body);

}  // namespace moonmq::frontend::wire
