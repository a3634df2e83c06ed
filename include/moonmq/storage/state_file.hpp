// A small durable document (the ownership table, the controller epoch, committed offsets, topic metadata): read it
// whole, replace it whole, atomically. The file implementation (lib/) writes a temporary file, fsyncs it, renames it
// over the old one and fsyncs the directory, so a crash at any point leaves either the old or the new document.
// Thread safety: implementations serialize their own calls.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "moonmq/core/result.hpp"

namespace moonmq::storage {

class state_file {
 public:
  virtual ~state_file() = default;
  /// The document, or nullopt when it does not exist yet.
  virtual result<std::optional<std::string>> read() const = 0;
  /// Replaces the document; when this returns ok the new content is durable.
  virtual status replace(std::string_view content) = 0;
  /// The file's name, for messages.
  virtual std::string name() const = 0;
};

/// The in-memory twin. `fail_next_replace()` makes the next replace fail without changing the document, to test
/// that callers do not acknowledge what was not persisted.
class memory_state_file final : public state_file {
 public:
  explicit memory_state_file(std::string name = "memory") : name_(std::move(name)) {}

  result<std::optional<std::string>> read() const override {
    std::lock_guard lock(mu_);
    return content_;
  }
  status replace(std::string_view content) override {
    std::lock_guard lock(mu_);
    if (fail_next_) {
      fail_next_ = false;
      return {errc::io_error, name_ + ": injected write failure"};
    }
    content_ = std::string(content);
    ++writes_;
    return {};
  }
  std::string name() const override { return name_; }

  void fail_next_replace() {
    std::lock_guard lock(mu_);
    fail_next_ = true;
  }
  /// Sets the stored document directly (e.g. garbage, to test detection).
  void set(std::optional<std::string> content) {
    std::lock_guard lock(mu_);
    content_ = std::move(content);
  }
  std::size_t writes() const {
    std::lock_guard lock(mu_);
    return writes_;
  }

 private:
  mutable std::mutex mu_;
  std::string name_;
  std::optional<std::string> content_;
  bool fail_next_ = false;
  std::size_t writes_ = 0;
};

}  // namespace moonmq::storage
