#include "moonmq/frontend/fetch.hpp"

#include <algorithm>

#include "moonmq/frontend/frontend_metrics.hpp"
#include "moonmq/txn/txn_metrics.hpp"

namespace moonmq::frontend {

refusal not_served(const cluster::ownership_table& ownership, const topic_partition& tp, const broker_id& self) {
  auto e = cluster::entry_as_seen_by(ownership, tp, self);
  if (e.owner == self)
    return {{errc::unavailable, ownership.ready()
                                    ? name_of(tp) + " is being handed over to this broker; retry"
                                    : "this broker is catching up with the cluster's ownership log; retry"},
            {},
            {}};
  return {{errc::not_owner, name_of(tp) + " is served by " + e.owner.value()}, e.owner, {}};
}

outcome<fetched> fetch_frontend::fetch(const fetch_request& req) const {
  const auto& tp = req.tp;
  if (req.never_wait && !p_.store->partition_count(tp.topic))
    return error{errc::would_block, "topic '" + tp.topic + "' is not held here"};
  if (!p_.store->partition_count(tp.topic) && p_.placement) {
    // A topic this broker has never had: the broker that serves it, if one does.
    auto owner = p_.placement->owner_of(tp);
    if (owner && *owner != p_.self)
      return refusal{{errc::not_owner, name_of(tp) + " is served by " + owner->value()}, owner, {}};
    if (!owner)
      if (auto silent = unplaced_while_silent(p_.placement, tp.topic, tp.partition, name_of(tp))) return *silent;
  }
  if (!cluster::serves(*p_.ownership, tp, p_.self)) return not_served(*p_.ownership, tp, p_.self);
  auto end = p_.store->end_offset(tp);
  if (!end) return end.err();
  if (req.offset > *end)
    return refusal{{errc::offset_out_of_range, name_of(tp) + ": offset " + std::to_string(req.offset) +
                                                   " is past the end offset " + std::to_string(*end)},
                   {},
                   *end};
  auto start = req.never_wait ? p_.store->next_record_cached(tp, req.offset) : p_.store->next_record(tp, req.offset);
  if (!start) return start.err();
  fetched out;
  out.offset = *start;
  std::optional<cluster::producer_states::committed_view> stable;
  if (req.read_committed) {
    auto c = p_.producers->committed(tp, out.offset, req.never_wait);
    if (!c) return c.err();
    stable = std::move(*c);
    out.last_stable_offset = stable->last_stable_offset;
    if (p_.metrics)
      p_.metrics->set(txn::metrics::lso_lag, {{"topic", tp.topic}, {"partition", std::to_string(tp.partition)}},
                      static_cast<double>(*end - std::min(*end, stable->last_stable_offset)));
  }
  auto r = req.never_wait ? p_.store->read_cached(tp, out.offset, req.max_bytes)
                          : p_.store->read(tp, out.offset, req.max_bytes);
  if (!r) return r.err();
  out.read = std::move(*r);
  out.end_offset = out.read.end_offset;
  out.next_offset = out.read.next_offset;
  if (stable) out.next_offset = std::min(out.next_offset, std::max(out.offset, stable->last_stable_offset));
  storage::for_each_frame(out.read.bytes.view(), out.offset, [&](const storage::record_view& v) {
    if (stable && v.offset >= stable->last_stable_offset) return;  // and so are all after it
    if (v.attributes & storage::attr_control) {
      if (req.with_control) out.records.push_back(v);
      return;
    }
    if (stable && !stable->visible(v)) return;
    out.data_bytes += (v.key ? v.key->size() : 0) + v.value.size();
    ++out.data_records;
    out.records.push_back(v);
  });
  if (!req.never_wait) count(tp, out);
  return out;
}

void fetch_frontend::count(const topic_partition& tp, const fetched& f) const {
  if (p_.counters) p_.counters->count_consume(tp, f.read.bytes.size());
  if (p_.metrics) {
    p_.metrics->add(metrics::fetched_records, {{"topic", tp.topic}}, static_cast<double>(f.data_records));
    p_.metrics->add(metrics::fetched_bytes, {{"topic", tp.topic}}, static_cast<double>(f.data_bytes));
  }
}

}  // namespace moonmq::frontend
