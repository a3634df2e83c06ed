// A durable map from keys to their latest values, kept as an append-only log: each put appends one record frame
// (key, value) and, when asked, syncs it; opening replays the log (the last put of a key wins). Cheaper than
// rewriting a whole document per change: one small write and at most one fdatasync.
//
// `memory_keyed_log` is the in-memory twin; `open_file_keyed_log()` (file_keyed_log.hpp) the file, with the recovery
// rules of partition logs (a torn last frame is truncated, damage before it refuses to open) and compaction when the
// log has grown well past one record per key.
// Thread safety: implementations allow concurrent calls.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "moonmq/core/result.hpp"

namespace moonmq::storage {

class keyed_log {
 public:
  virtual ~keyed_log() = default;
  /// Every key's latest value.
  virtual std::map<std::string, std::string> entries() const = 0;
  /// Records `value` for `key`; with `sync`, durable before it returns (otherwise at the next sync()).
  virtual status put(const std::string& key, const std::string& value, bool sync) = 0;
  /// Makes every put so far durable.
  virtual status sync() = 0;
  virtual std::string name() const = 0;
};

class memory_keyed_log final : public keyed_log {
 public:
  explicit memory_keyed_log(std::string name = "memory") : name_(std::move(name)) {}
  std::map<std::string, std::string> entries() const override {
    std::lock_guard lock(mu_);
    return entries_;
  }
  status put(const std::string& key, const std::string& value, bool) override {
    std::lock_guard lock(mu_);
    entries_[key] = value;
    return {};
  }
  status sync() override { return {}; }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> entries_;
};

}  // namespace moonmq::storage
