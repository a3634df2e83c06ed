// The history checker: reads what clients did and saw against a cluster (one JSON object per line) and reports,
// Jepsen-style, every anomaly it proves, each naming the record and the observations that contradict each other.
//
// History lines ("op" says which; values are unique per write, which the workload guarantees):
//   {"op":"produce","topic","partition","value","outcome":"ok|fail|info","offset"?,"txn"?}
//       ok: acknowledged at `offset`; fail: certainly not written; info: unknown (timeout, crash). `txn` names the
//       transaction instance the write belongs to (any string unique per transaction, e.g. "tid:epoch").
//   {"op":"txn","txn","outcome":"commit|abort|info"}
//   {"op":"read","topic","partition","isolation":"committed|uncommitted","final"?,"records":[{"offset","value"}]}
//       a read of consecutive records; `final`: part of the drain after the cluster healed (a partition's final
//       reads together cover it from its start to its end)
//   {"op":"offset_commit","group","topic","partition","offset","outcome":"ok|fail|info"}
//   {"op":"offset_read","group","topic","partition","offset"}
//
// Anomalies:
//   inconsistent_offset  one offset of a partition observed holding two values (an acknowledgement or a read each)
//   duplicate            one written value observed at two offsets
//   aborted_read         a committed read returned a record of an aborted transaction (G1a)
//   torn_transaction     the final committed reads show some but not all acknowledged records of a transaction
//   lost_write           an acknowledged record missing from a read that returned records before and after its offset
//   unseen_after_drain   an acknowledged record (not aborted) absent from its partition's final reads
//   offset_backwards     a group's committed offset read lower than an earlier read or acknowledged commit
//   failed_write_visible a read returned a record every attempt of which was refused (outcome fail)
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "moonmq/core/result.hpp"

namespace moonmq::check {

struct anomaly {
  std::string type;
  std::string record;                     ///< the value, or group/topic-partition for offsets
  std::vector<std::string> observations;  ///< JSON objects: {"op": line number, ...what was seen}
};

struct report {
  std::size_t ops = 0;
  std::size_t acknowledged = 0;  ///< produce ops answered ok
  std::vector<anomaly> anomalies;

  std::map<std::string, std::size_t> counts() const;
  /// {"ops", "acknowledged", "counts": {type: n}, "anomalies": [{"type", "record", "observations": [...]}]}
  std::string to_json() const;
};

/// Checks a history (JSON lines; blank lines ignored). A malformed line is invalid_argument naming its number.
result<report> check_history(std::string_view jsonl);

}  // namespace moonmq::check
