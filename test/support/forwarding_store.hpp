// A partition store that passes every call to an in-memory store it owns: the base of a test double that hooks one
// call (to run something after it, or to hold it while the test looks) and leaves the rest as they are.
#pragma once

#include <string>
#include <vector>

#include "moonmq/storage/memory_partition_store.hpp"

namespace moonmq::test {

struct forwarding_store : storage::partition_store {
  storage::memory_partition_store inner;

  result<std::int32_t> ensure_topic(const std::string& topic, std::int32_t partitions) override {
    return inner.ensure_topic(topic, partitions);
  }
  status room_for(const std::string& topic, std::int32_t partitions) const override {
    return inner.room_for(topic, partitions);
  }
  status remove_topic(const std::string& topic) override { return inner.remove_topic(topic); }
  result<std::int32_t> partition_count(const std::string& topic) const override { return inner.partition_count(topic); }
  std::vector<std::string> topics() const override { return inner.topics(); }
  std::vector<topic_partition> list_partitions() const override { return inner.list_partitions(); }
  result<std::uint64_t> end_offset(const topic_partition& tp) const override { return inner.end_offset(tp); }
  result<std::uint64_t> size_bytes(const topic_partition& tp) const override { return inner.size_bytes(tp); }
  result<storage::read_result> read(const topic_partition& tp, std::uint64_t from,
                                    std::size_t max_bytes) const override {
    return inner.read(tp, from, max_bytes);
  }
  result<std::uint64_t> next_record(const topic_partition& tp, std::uint64_t offset) const override {
    return inner.next_record(tp, offset);
  }
  result<storage::read_result> read_cached(const topic_partition& tp, std::uint64_t from,
                                           std::size_t max_bytes) const override {
    return inner.read_cached(tp, from, max_bytes);
  }
  result<std::uint64_t> next_record_cached(const topic_partition& tp, std::uint64_t offset) const override {
    return inner.next_record_cached(tp, offset);
  }
  result<std::vector<std::uint64_t>> append(const topic_partition& tp,
                                            const std::vector<storage::record>& records) override {
    return inner.append(tp, records);
  }
  status append_at(const topic_partition& tp, std::uint64_t expected_offset, std::string_view frames,
                   std::uint64_t* actual_end) override {
    return inner.append_at(tp, expected_offset, frames, actual_end);
  }
  status sync(const topic_partition& tp) override { return inner.sync(tp); }
  status discard(const topic_partition& tp) override { return inner.discard(tp); }
};

}  // namespace moonmq::test
