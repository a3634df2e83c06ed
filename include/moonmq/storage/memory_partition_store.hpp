// An in-memory partition_store: the twin of the file-backed log for fast, deterministic tests and simulations.
// Same contract, same frame format and validation; nothing survives the object.
// Thread safety: all methods may be called concurrently.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>

#include "moonmq/core/topic_name.hpp"
#include "moonmq/storage/partition_store.hpp"

namespace moonmq::storage {

class memory_partition_store final : public partition_store {
 public:
  result<std::int32_t> ensure_topic(const std::string& topic, std::int32_t partitions) override {
    if (auto s = validate_topic_name(topic); !s) return s.err();
    if (partitions < 1) return error{errc::invalid_argument, "partition count must be at least 1"};
    std::unique_lock lock(mu_);
    auto& parts = topics_[topic];
    while (static_cast<std::int32_t>(parts.size()) < partitions) parts.push_back(std::make_unique<partition>());
    return static_cast<std::int32_t>(parts.size());
  }

  status remove_topic(const std::string& topic) override {
    std::unique_lock lock(mu_);
    auto it = topics_.find(topic);
    if (it == topics_.end()) return {errc::not_found, "unknown topic '" + topic + "'"};
    // The partitions live on in retired_: a reader that found one before the removal still holds a valid object.
    for (auto& p : it->second) retired_.push_back(std::move(p));
    topics_.erase(it);
    return {};
  }

  result<std::int32_t> partition_count(const std::string& topic) const override {
    std::shared_lock lock(mu_);
    auto it = topics_.find(topic);
    if (it == topics_.end()) return error{errc::not_found, "unknown topic '" + topic + "'"};
    return static_cast<std::int32_t>(it->second.size());
  }

  std::vector<std::string> topics() const override {
    std::shared_lock lock(mu_);
    std::vector<std::string> out;
    for (const auto& [t, p] : topics_) out.push_back(t);
    return out;
  }

  std::vector<topic_partition> list_partitions() const override {
    std::shared_lock lock(mu_);
    std::vector<topic_partition> out;
    for (const auto& [t, parts] : topics_)
      for (std::size_t i = 0; i < parts.size(); ++i) out.push_back({t, static_cast<std::int32_t>(i)});
    return out;
  }

  result<std::uint64_t> end_offset(const topic_partition& tp) const override {
    auto p = find(tp);
    if (!p) return p.err();
    std::lock_guard lock((*p)->mu);
    return static_cast<std::uint64_t>((*p)->log.size());
  }

  result<std::uint64_t> size_bytes(const topic_partition& tp) const override { return end_offset(tp); }

  result<read_result> read(const topic_partition& tp, std::uint64_t from, std::size_t max_bytes) const override {
    auto p = find(tp);
    if (!p) return p.err();
    std::lock_guard lock((*p)->mu);
    const std::string& log = (*p)->log;
    read_result r;
    r.end_offset = log.size();
    r.next_offset = from;
    if (from > log.size())
      return error{errc::invalid_argument, name(tp) + ": offset " + std::to_string(from) + " is past the end offset " +
                                               std::to_string(log.size())};
    if (from < log.size() && !std::binary_search((*p)->starts.begin(), (*p)->starts.end(), from))
      return error{errc::invalid_argument, name(tp) + ": offset " + std::to_string(from) + " is not a record boundary"};
    std::string_view rest(log.data() + from, log.size() - from);
    std::size_t take = frames_within(rest, max_bytes);
    if (take == 0 && !rest.empty()) take = rest.size();  // let the scan below name what is wrong
    auto scan = scan_frames(rest.substr(0, take));
    if (scan.end != frame_scan::ending::clean)
      return error{errc::corrupt, name(tp) + ": damaged record at offset " + std::to_string(from + scan.whole) + " (" +
                                      (scan.what.empty() ? "incomplete frame" : scan.what) + ")"};
    r.bytes = byte_buffer::copy_of(rest.substr(0, take));
    r.next_offset = from + take;
    return r;
  }

  /// Memory holds everything: these never wait.
  result<read_result> read_cached(const topic_partition& tp, std::uint64_t from, std::size_t max_bytes) const override {
    return read(tp, from, max_bytes);
  }
  result<std::uint64_t> next_record_cached(const topic_partition& tp, std::uint64_t offset) const override {
    return next_record(tp, offset);
  }

  result<std::uint64_t> next_record(const topic_partition& tp, std::uint64_t offset) const override {
    auto p = find(tp);
    if (!p) return p.err();
    std::lock_guard lock((*p)->mu);
    const std::uint64_t end = (*p)->log.size();
    if (offset > end)
      return error{errc::invalid_argument, name(tp) + ": offset " + std::to_string(offset) + " is past the end offset " +
                                               std::to_string(end)};
    auto it = std::lower_bound((*p)->starts.begin(), (*p)->starts.end(), offset);
    return it == (*p)->starts.end() ? end : static_cast<std::uint64_t>(*it);
  }

  result<std::vector<std::uint64_t>> append(const topic_partition& tp, const std::vector<record>& records) override {
    auto p = find(tp);
    if (!p) return p.err();
    std::lock_guard lock((*p)->mu);
    std::vector<std::uint64_t> offsets;
    for (const auto& rec : records) {
      offsets.push_back((*p)->log.size());
      (*p)->starts.push_back((*p)->log.size());
      encode_frame(rec, (*p)->log);
    }
    return offsets;
  }

  result<std::vector<std::uint64_t>> append_encoded(const topic_partition& tp,
                                                    const encoded_records& records) override {
    auto p = find(tp);
    if (!p) return p.err();
    std::lock_guard lock((*p)->mu);
    std::vector<std::uint64_t> offsets;
    offsets.reserve(records.size());
    const std::uint64_t end = (*p)->log.size();
    for (auto start : records.starts) {
      offsets.push_back(end + start);
      (*p)->starts.push_back(end + start);
    }
    (*p)->log.append(records.bytes);
    return offsets;
  }

  status append_at(const topic_partition& tp, std::uint64_t expected, std::string_view frames,
                   std::uint64_t* actual_end = nullptr) override {
    auto p = find(tp);
    if (!p) return p.err();
    std::vector<std::size_t> starts;
    auto scan = scan_frames(frames, [&](std::size_t at) { starts.push_back(at); });
    if (scan.end != frame_scan::ending::clean)
      return {errc::invalid_argument, name(tp) + ": migration batch is not whole valid frames (" +
                                          (scan.what.empty() ? "incomplete frame" : scan.what) + " at batch byte " +
                                          std::to_string(scan.whole) + ")"};
    std::lock_guard lock((*p)->mu);
    std::uint64_t end = (*p)->log.size();
    if (actual_end) *actual_end = end;
    if (end != expected)
      return {errc::conflict, name(tp) + ": expected end offset " + std::to_string(expected) + ", actual end offset " +
                                  std::to_string(end)};
    for (auto st : starts) (*p)->starts.push_back(end + st);
    (*p)->log.append(frames);
    if (actual_end) *actual_end = (*p)->log.size();
    return {};
  }

  status sync(const topic_partition& tp) override { return find(tp).to_status(); }

  status discard(const topic_partition& tp) override {
    auto p = find(tp);
    if (!p) return p.err();
    std::lock_guard lock((*p)->mu);
    (*p)->log.clear();
    (*p)->log.shrink_to_fit();
    (*p)->starts.clear();
    return {};
  }

 private:
  struct partition {
    mutable std::mutex mu;
    std::string log;
    std::vector<std::uint64_t> starts;  // every frame's offset, ascending
  };

  static std::string name(const topic_partition& tp) { return tp.topic + "-" + std::to_string(tp.partition); }

  result<partition*> find(const topic_partition& tp) const {
    std::shared_lock lock(mu_);
    auto it = topics_.find(tp.topic);
    if (it == topics_.end()) return error{errc::not_found, "unknown topic '" + tp.topic + "'"};
    if (tp.partition < 0 || tp.partition >= static_cast<std::int32_t>(it->second.size()))
      return error{errc::not_found, "unknown partition " + name(tp)};
    return it->second[static_cast<std::size_t>(tp.partition)].get();
  }

  mutable std::shared_mutex mu_;
  std::map<std::string, std::vector<std::unique_ptr<partition>>> topics_;
  std::vector<std::unique_ptr<partition>> retired_;  ///< partitions of removed topics (see remove_topic)
};

}  // namespace moonmq::storage
