#include "moonmq/frontend/fetch.hpp"

#include <algorithm>

#include "moonmq/frontend/frontend_metrics.hpp"
#include "moonmq/txn/txn_metrics.hpp"

namespace moonmq::frontend {

namespace {

/// Where `records` (in log order) end inside a stored batch: the index of that batch's first record among them;
/// records.size() when they do not.
std::size_t cut_batch_start(const std::vector<storage::record_view>& records) {
  const auto& last = records.back();
  if (!last.batch || last.batch->index + 1 >= last.batch->count) return records.size();
  const std::uint64_t batch_start = last.offset - last.batch->distance;
  std::size_t i = records.size() - 1;
  while (i > 0 && records[i - 1].batch && records[i - 1].offset - records[i - 1].batch->distance == batch_start) --i;
  return i;
}

/// About how many bytes of frames are left of the stored batch that `records` end inside: its records still to come
/// at the average size of those read, and one more record's worth (a read returns whole frames only).
std::size_t batch_rest_bytes(const std::vector<storage::record_view>& records) {
  const auto& last = records.back();
  const std::uint64_t each = (std::uint64_t{last.batch->distance} + last.frame_size) / (last.batch->index + 1u) + 1;
  return static_cast<std::size_t>(each * (last.batch->count - last.batch->index));
}

}  // namespace

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
  auto take = [&](const storage::read_result& read, std::uint64_t from) {
    // Room for as many records as frames the size of the first would fill (a 1 MB read of 1 KiB records grew the
    // vector eleven times), up to 64k of them (a small first record ahead of large ones is no reason for more).
    const auto bytes = read.bytes.view();
    if (bytes.size() >= storage::frame_header_size)
      out.records.reserve(out.records.size() +
                          std::min<std::size_t>(bytes.size() / (storage::frame_header_size +
                                                                storage::detail::get_u32(bytes.data())) + 1,
                                                std::size_t{1} << 16));
    storage::for_each_frame(read.bytes.view(), from, [&](const storage::record_view& v) {
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
  };
  take(out.read, out.offset);
  // A read that ends inside a stored batch: without it, or, when that batch is all there is, with the rest of it (a
  // batch is appended whole, so its records are all below the last stable offset or all past it).
  for (std::size_t read_bytes = out.read.bytes.size(); req.whole_batch_bytes != 0 && !out.records.empty();) {
    const auto tail = cut_batch_start(out.records);
    if (tail == out.records.size()) break;
    if (tail > 0) {
      for (auto v = out.records.begin() + static_cast<std::ptrdiff_t>(tail); v != out.records.end(); ++v) {
        if (v->attributes & storage::attr_control) continue;
        out.data_bytes -= (v->key ? v->key->size() : 0) + v->value.size();
        --out.data_records;
      }
      out.next_offset = out.records[tail].offset;
      out.records.resize(tail);
      break;
    }
    const auto wanted = batch_rest_bytes(out.records);
    if (out.next_offset >= out.end_offset || read_bytes + wanted > req.whole_batch_bytes) {
      out.batch_cut = true;
      break;
    }
    const std::uint64_t from = out.next_offset;
    auto rest = req.never_wait ? p_.store->read_cached(tp, from, wanted) : p_.store->read(tp, from, wanted);
    if (!rest) return rest.err();
    if (rest->bytes.empty()) {
      out.batch_cut = true;
      break;
    }
    read_bytes += rest->bytes.size();
    out.next_offset = rest->next_offset;
    out.end_offset = rest->end_offset;
    out.more.push_back(std::move(*rest));
    take(out.more.back(), from);
  }
  if (stable) out.next_offset = std::min(out.next_offset, std::max(out.offset, stable->last_stable_offset));
  if (!req.never_wait) count(tp, out);
  return out;
}

void fetch_frontend::count(const topic_partition& tp, const fetched& f) const {
  if (p_.counters) {
    std::size_t bytes = f.read.bytes.size();
    for (const auto& more : f.more) bytes += more.bytes.size();
    p_.counters->count_consume(tp, bytes);
  }
  if (p_.metrics) {
    p_.metrics->add(metrics::fetched_records, {{"topic", tp.topic}}, static_cast<double>(f.data_records));
    p_.metrics->add(metrics::fetched_bytes, {{"topic", tp.topic}}, static_cast<double>(f.data_bytes));
  }
}

}  // namespace moonmq::frontend
