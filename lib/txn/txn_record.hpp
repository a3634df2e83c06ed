// The transaction coordinator's record of one transactional id, as JSON: the value of its keyed log
// (txn-state.log) and the body of a describe answer share the partitions and offsets part. Internal to lib/.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "json/writer.hpp"
#include "moonmq/core/result.hpp"
#include "moonmq/txn/coordinator.hpp"

namespace moonmq::txn {

/// Writes "partitions" (topic, partition, owner, marker_pending) and "offsets" (group, topic, partition, offset,
/// owner) of `t` into the object `w` is writing.
void write_holdings(json::writer& w, const transaction& t);

/// The describe answer's fields of `t` (its age measured at `now`).
void write_txn(json::writer& w, const transaction& t, std::int64_t now);

/// The log record of `t`, and back. A record that is not one (any damage) is errc::corrupt naming `where`.
std::string render_transaction(const transaction& t);
result<transaction> parse_transaction(const std::string& text, const std::string& where);

}  // namespace moonmq::txn
