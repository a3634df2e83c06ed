#include "moonmq/storage/durable_offset_store.hpp"

#include <charconv>
#include <cstdio>
#include <mutex>

#include "json/state_document.hpp"
#include "moonmq/core/topic_name.hpp"
#include "moonmq/core/utf8.hpp"
#include "moonmq/storage/file_keyed_log.hpp"
#include "moonmq/storage/file_state_file.hpp"
#include "storage/posix_file.hpp"

namespace moonmq::storage {

namespace {

/// One commit as a keyed log record: key "group\0topic\0partition", value the offset as text, followed by a newline and
/// the commit's metadata when it has some; an empty value is a commit forgotten with its topic (versions before it
/// refuse to open such a log).
std::string commit_value(std::uint64_t offset, std::string_view metadata) {
  std::string v = std::to_string(offset);
  if (!metadata.empty()) {
    v += '\n';
    v.append(metadata);
  }
  return v;
}

std::string commit_key(const std::string& group, const topic_partition& tp) {
  return group + '\0' + tp.topic + '\0' + std::to_string(tp.partition);
}

struct decoded_commit {
  std::string group;
  topic_partition tp;
  std::uint64_t offset = 0;
  std::string metadata;
};

std::optional<decoded_commit> read_commit(std::string_view k, std::string_view value) {
  const auto a = k.find('\0');
  const auto b = a == std::string_view::npos ? a : k.find('\0', a + 1);
  if (b == std::string_view::npos || a == 0) return std::nullopt;
  decoded_commit c;
  c.group = std::string(k.substr(0, a));
  c.tp.topic = std::string(k.substr(a + 1, b - a - 1));
  const std::string_view p = k.substr(b + 1);
  auto [pe, pec] = std::from_chars(p.data(), p.data() + p.size(), c.tp.partition);
  const auto newline = value.find('\n');
  const std::string_view number = value.substr(0, newline);
  if (newline != std::string_view::npos) c.metadata = std::string(value.substr(newline + 1));
  auto [oe, oec] = std::from_chars(number.data(), number.data() + number.size(), c.offset);
  if (pec != std::errc() || pe != p.data() + p.size() || c.tp.partition < 0 || oec != std::errc() ||
      oe != number.data() + number.size())
    return std::nullopt;
  return c;
}

/// What may be stored: a group id of 1 to 255 bytes of UTF-8 without control characters (so never the NUL that
/// separates the fields of a commit's key), a valid topic name and a partition >= 0.
status valid_key(const std::string& group, const topic_partition& tp, std::string_view metadata = {}) {
  if (metadata.size() > max_commit_metadata)
    return {errc::invalid_argument, "commit metadata is longer than " + std::to_string(max_commit_metadata) + " bytes"};
  if (!valid_client_name(group))
    return {errc::invalid_argument, "group id must be 1 to 255 bytes of UTF-8 without control characters"};
  if (auto s = validate_topic_name(tp.topic); !s) return s;
  if (tp.partition < 0) return {errc::invalid_argument, "partition must be >= 0"};
  return {};
}

class durable_offset_store final : public offset_store {
 public:
  durable_offset_store(std::string dir, std::shared_ptr<logger> log, std::size_t compact_at)
      : dir_(std::move(dir)), path_(dir_ + "/committed-offsets.log"), log_(std::move(log)), compact_at_(compact_at) {}

  status open() {
    auto l = open_file_keyed_log(path_, log_, compact_at_);
    if (!l) return l.err();
    file_ = std::move(*l);
    for (const auto& [key, value] : file_->entries()) {
      if (value.empty()) continue;  // forgotten (forget_topic)
      auto c = read_commit(key, value);
      if (!c) return {errc::corrupt, path_ + ": unreadable commit of key '" + key + "'"};
      table_.set(c->group, c->tp, c->offset, c->metadata);
    }
    return migrate_json();
  }

  std::optional<std::uint64_t> committed(const std::string& group, const topic_partition& tp) const override {
    std::lock_guard lock(mu_);
    return table_.get(group, tp);
  }

  std::optional<committed_offset> committed_with_metadata(const std::string& group,
                                                          const topic_partition& tp) const override {
    std::lock_guard lock(mu_);
    return table_.get_with_metadata(group, tp);
  }

  status commit(const std::string& group, const topic_partition& tp, std::uint64_t offset,
                std::string_view metadata = {}) override {
    if (auto s = valid_key(group, tp, metadata); !s) return s;
    std::lock_guard lock(mu_);
    return append_locked(group, tp, offset, metadata);
  }

  result<bool> commit_if_higher(const std::string& group, const topic_partition& tp, std::uint64_t offset,
                                std::string_view metadata = {}) override {
    if (auto s = valid_key(group, tp, metadata); !s) return s.err();
    std::lock_guard lock(mu_);
    if (!table_.would_raise(group, tp, offset)) return false;
    if (auto s = append_locked(group, tp, offset, metadata); !s) return s.err();
    return true;
  }

  std::vector<group_offset> groups_for(const topic_partition& tp) const override {
    std::lock_guard lock(mu_);
    return table_.groups_for(tp);
  }

  std::vector<std::pair<topic_partition, committed_offset>> of_group(const std::string& group) const override {
    std::lock_guard lock(mu_);
    return table_.of_group(group);
  }

  /// Each of the topic's commits is overwritten with an empty value (read as none at the next open), synced once.
  status forget_topic(const std::string& topic) override {
    std::lock_guard lock(mu_);
    const auto keys = table_.keys_of(topic);
    if (keys.empty()) return {};
    for (const auto& k : keys)
      if (auto s = file_->put(commit_key(std::get<0>(k), {std::get<1>(k), std::get<2>(k)}), "", false); !s) return s;
    if (auto s = file_->sync(); !s) return s;
    for (const auto& k : keys) table_.erase(k);
    return {};
  }

 private:
  /// Appends one commit to the keyed log and syncs it (the log compacts itself); the table changes only once it is
  /// durable. REQUIRES: mu_ held.
  status append_locked(const std::string& group, const topic_partition& tp, std::uint64_t offset,
                       std::string_view metadata) {
    if (auto s = file_->put(commit_key(group, tp), commit_value(offset, metadata), true); !s) return s;
    table_.set(group, tp, offset, metadata);
    return {};
  }

  /// A `committed-offsets.json` left by an older version: its commits are carried into the log, then it goes.
  status migrate_json() {
    const std::string old = dir_ + "/committed-offsets.json";
    if (!posix::exists(old)) return {};
    auto file = make_file_state_file(old);
    rapidjson::Document d;
    auto present = json::read_state_document(*file, d);
    if (!present) return present.to_status();
    if (*present) {
      json::object_reader top(d, old);
      std::uint32_t version = 0;
      top.get("version", version, true);
      const auto* list = top.member("offsets");
      if (top.ok() && version != 1) top.fail("version", "unsupported version " + std::to_string(version));
      if (top.ok() && (!list || !list->IsArray())) top.fail("offsets", "expected an array");
      if (auto s = top.finish(); !s) return {errc::corrupt, s.message()};
      for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
        json::object_reader r((*list)[i], old + ": offsets[" + std::to_string(i) + "]");
        std::string group, topic;
        std::int64_t partition = 0, offset = 0;
        r.get("group", group, true);
        r.get("topic", topic, true);
        r.get("partition", partition, true);
        r.get("offset", offset, true);
        if (r.ok() && (partition < 0 || partition > INT32_MAX || offset < 0 || group.empty()))
          r.fail_here("negative partition or offset, or no group");
        if (r.ok() && !valid_key(group, {topic, static_cast<std::int32_t>(partition)})) {
          log_->warn("offsets", old + ": skipped the offsets of group '" + group + "' (" + topic +
                                    "): not a group id or topic this version keeps");
          continue;
        }
        if (auto s = r.finish(); !s) return {errc::corrupt, s.message()};
        table_.set(group, {topic, static_cast<std::int32_t>(partition)}, static_cast<std::uint64_t>(offset));
      }
    }
    for (const auto& [k, v] : table_.entries())
      if (auto s = file_->put(commit_key(std::get<0>(k), {std::get<1>(k), std::get<2>(k)}), std::to_string(v), false); !s)
        return s;
    if (auto s = file_->sync(); !s) return s;
    // Kept beside the log, renamed: a downgrade can still find the offsets it wrote.
    if (std::rename(old.c_str(), (old + ".migrated").c_str()) != 0) return posix::os_error("cannot rename", old);
    log_->info("offsets", "carried the committed offsets of " + old + " into " + path_ + " (the old file is now " +
                              old + ".migrated)");
    return posix::sync_directory(dir_);
  }

  std::string dir_;
  std::string path_;
  std::shared_ptr<logger> log_;
  std::size_t compact_at_;
  mutable std::mutex mu_;
  std::unique_ptr<keyed_log> file_;
  offset_table table_;
};

}  // namespace

result<std::unique_ptr<offset_store>> open_durable_offset_store(const std::string& dir, std::shared_ptr<logger> log,
                                                                std::size_t compact_at_bytes) {
  if (auto s = posix::make_directories(dir); !s) return s.err();
  auto store = std::make_unique<durable_offset_store>(dir, std::move(log), compact_at_bytes);
  if (auto s = store->open(); !s) return s.err();
  return std::unique_ptr<offset_store>(std::move(store));
}

}  // namespace moonmq::storage
