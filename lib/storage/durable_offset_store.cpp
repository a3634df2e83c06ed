#include "moonmq/storage/durable_offset_store.hpp"

#include <fcntl.h>

#include <charconv>
#include <cstdio>
#include <mutex>

#include "json/state_document.hpp"
#include "moonmq/core/topic_name.hpp"
#include "moonmq/core/utf8.hpp"
#include "moonmq/storage/file_state_file.hpp"
#include "moonmq/storage/record.hpp"
#include "storage/posix_file.hpp"

namespace moonmq::storage {

namespace {

/// One commit as a record frame: key "group\0topic\0partition", value the offset, both as text.
std::string commit_frame(const std::string& group, const topic_partition& tp, std::uint64_t offset) {
  record r;
  r.key = group + '\0' + tp.topic + '\0' + std::to_string(tp.partition);
  r.value = std::to_string(offset);
  return encode_frame(r);
}

struct decoded_commit {
  std::string group;
  topic_partition tp;
  std::uint64_t offset = 0;
};

std::optional<decoded_commit> read_commit(const record_view& v) {
  if (!v.key) return std::nullopt;
  const std::string_view k = *v.key;
  const auto a = k.find('\0');
  const auto b = a == std::string_view::npos ? a : k.find('\0', a + 1);
  if (b == std::string_view::npos || a == 0) return std::nullopt;
  decoded_commit c;
  c.group = std::string(k.substr(0, a));
  c.tp.topic = std::string(k.substr(a + 1, b - a - 1));
  const std::string_view p = k.substr(b + 1);
  auto [pe, pec] = std::from_chars(p.data(), p.data() + p.size(), c.tp.partition);
  auto [oe, oec] = std::from_chars(v.value.data(), v.value.data() + v.value.size(), c.offset);
  if (pec != std::errc() || pe != p.data() + p.size() || c.tp.partition < 0 || oec != std::errc() ||
      oe != v.value.data() + v.value.size())
    return std::nullopt;
  return c;
}

/// What may be stored: a group id of 1 to 255 bytes of UTF-8 without control characters (so never the NUL that
/// separates the fields of a commit's key), a valid topic name and a partition >= 0.
status valid_key(const std::string& group, const topic_partition& tp) {
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
    auto f = posix::open_file(path_, O_RDWR | O_CREAT, 0644);
    if (!f) return f.err();
    file_ = std::move(*f);
    auto text = posix::read_file(path_);
    if (!text) return text.err();
    auto scan = scan_frames(*text);
    std::size_t good = scan.whole;
    if (scan.end == frame_scan::ending::corrupt &&
        !is_torn_last_write(std::string_view(*text).substr(good), good, text->size(),
                            [&](std::uint64_t at) { return all_zero_from(*text, at); }))
      return {errc::corrupt, path_ + ": damaged commit at byte " + std::to_string(good) + " (" + scan.what +
                                 "); refusing to read committed offsets from it"};
    for (const auto& v : decode_frames(std::string_view(*text).substr(0, good), 0)) {
      auto c = read_commit(v);
      if (!c) return {errc::corrupt, path_ + ": unreadable commit at byte " + std::to_string(v.offset)};
      table_.set(c->group, c->tp, c->offset);
    }
    if (good < text->size()) {
      if (auto s = posix::truncate_file(file_.get(), good, path_); !s) return s;
      if (auto s = posix::sync_data(file_.get(), path_); !s) return s;
      log_->warn("offsets", path_ + ": truncated a torn last commit (" + std::to_string(text->size() - good) +
                                " bytes after byte " + std::to_string(good) + ")");
    }
    end_ = good;
    for (const auto& [k, v] : table_.entries())
      live_bytes_ += commit_frame(std::get<0>(k), {std::get<1>(k), std::get<2>(k)}, v).size();
    return migrate_json();
  }

  std::optional<std::uint64_t> committed(const std::string& group, const topic_partition& tp) const override {
    std::lock_guard lock(mu_);
    return table_.get(group, tp);
  }

  status commit(const std::string& group, const topic_partition& tp, std::uint64_t offset) override {
    if (auto s = valid_key(group, tp); !s) return s;
    std::lock_guard lock(mu_);
    return append_locked(group, tp, offset);
  }

  result<bool> commit_if_higher(const std::string& group, const topic_partition& tp, std::uint64_t offset) override {
    if (auto s = valid_key(group, tp); !s) return s.err();
    std::lock_guard lock(mu_);
    if (!table_.would_raise(group, tp, offset)) return false;
    if (auto s = append_locked(group, tp, offset); !s) return s.err();
    return true;
  }

  std::vector<group_offset> groups_for(const topic_partition& tp) const override {
    std::lock_guard lock(mu_);
    return table_.groups_for(tp);
  }

 private:
  /// Appends one commit and syncs it; the table changes only once it is durable. Compacts when the log has grown
  /// well past what it holds. REQUIRES: mu_ held.
  status append_locked(const std::string& group, const topic_partition& tp, std::uint64_t offset) {
    const std::string frame = commit_frame(group, tp, offset);
    auto s = posix::pwrite_all(file_.get(), frame.data(), frame.size(), end_, path_);
    if (s) s = posix::sync_data(file_.get(), path_);
    if (!s) {
      (void)posix::truncate_file(file_.get(), end_, path_);  // nothing half-applied
      return s;
    }
    end_ += frame.size();
    if (!table_.get(group, tp)) live_bytes_ += frame.size();  // roughly what the compacted log would hold
    table_.set(group, tp, offset);
    if (end_ > compact_at_ && end_ > 4 * live_bytes_) {
      if (auto c = compact_locked(); !c) log_->error("offsets", "compaction of " + path_ + " failed: " + c.message());
    }
    return {};
  }

  /// Rewrites the log as one commit per (group, partition): a new file, synced, renamed over the old one, and the
  /// directory synced. A crash at any point leaves the old log or the new one, whole. REQUIRES: mu_ held.
  status compact_locked() {
    std::string all;
    for (const auto& [k, v] : table_.entries())
      all += commit_frame(std::get<0>(k), {std::get<1>(k), std::get<2>(k)}, v);
    const std::string tmp = path_ + ".compacting";
    auto f = posix::open_file(tmp, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (!f) return f.err();
    if (auto s = posix::pwrite_all(f->get(), all.data(), all.size(), 0, tmp); !s) return s;
    if (auto s = posix::sync_data(f->get(), tmp); !s) return s;
    if (std::rename(tmp.c_str(), path_.c_str()) != 0) return posix::os_error("cannot rename " + tmp + " to", path_);
    // From the rename on, the path names the new file: commits go there, whether or not the directory syncs.
    file_ = std::move(*f);
    end_ = all.size();
    live_bytes_ = all.size();
    return posix::sync_directory(dir_);
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
    if (auto s = compact_locked(); !s) return s;
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
  posix::fd file_;
  std::uint64_t end_ = 0;
  std::uint64_t live_bytes_ = 0;  ///< about what one commit per (group, partition) takes
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
