#include "moonmq/storage/file_keyed_log.hpp"

#include <fcntl.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>

#include "moonmq/storage/record.hpp"
#include "storage/posix_file.hpp"

namespace moonmq::storage {

namespace {

std::string frame_of(const std::string& key, const std::string& value) {
  record r;
  r.key = key;
  r.value = value;
  return encode_frame(r);
}

std::string directory_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

class file_keyed_log final : public keyed_log {
 public:
  file_keyed_log(std::string path, std::shared_ptr<logger> log, std::size_t compact_at)
      : path_(std::move(path)), log_(std::move(log)), compact_at_(compact_at) {}

  status open() {
    const bool fresh = !posix::exists(path_);
    auto f = posix::open_file(path_, O_RDWR | O_CREAT, 0644);
    if (!f) return f.err();
    file_ = std::move(*f);
    if (fresh)  // the new file's name is durable before anything synced into it is relied on
      if (auto s = posix::sync_directory(directory_of(path_)); !s) return s;
    auto text = posix::read_file(path_);
    if (!text) return text.err();
    auto scan = scan_frames(*text);
    const std::size_t good = scan.whole;
    if (scan.end == frame_scan::ending::corrupt &&
        !is_torn_last_write(std::string_view(*text).substr(good), good, text->size(),
                            [&](std::uint64_t at) { return all_zero_from(*text, at); }))
      return {errc::corrupt, path_ + ": damaged record at byte " + std::to_string(good) + " (" + scan.what +
                                 "); refusing to read it"};
    for (const auto& v : decode_frames(std::string_view(*text).substr(0, good), 0)) {
      if (!v.key) return {errc::corrupt, path_ + ": a record without a key at byte " + std::to_string(v.offset)};
      entries_[std::string(*v.key)] = std::string(v.value);
    }
    if (good < text->size()) {
      if (auto s = posix::truncate_file(file_.get(), good, path_); !s) return s;
      if (auto s = posix::sync_data(file_.get(), path_); !s) return s;
      log_->warn("state", path_ + ": truncated a torn last record (" + std::to_string(text->size() - good) +
                              " bytes after byte " + std::to_string(good) + ")");
    }
    end_ = good;
    for (const auto& [k, v] : entries_) live_bytes_ += frame_of(k, v).size();
    return {};
  }

  std::map<std::string, std::string> entries() const override {
    std::lock_guard lock(mu_);
    return entries_;
  }

  status put(const std::string& key, const std::string& value, bool sync) override {
    const std::string frame = frame_of(key, value);
    std::unique_lock lock(mu_);
    if (!failed_) return failed_;
    if (auto s = posix::pwrite_all(file_.get(), frame.data(), frame.size(), end_, path_); !s) {
      (void)posix::truncate_file(file_.get(), end_, path_);  // nothing half-applied
      return s;
    }
    end_ += frame.size();
    const std::uint64_t mine = ++written_;
    auto [it, fresh] = entries_.try_emplace(key, value);
    if (fresh) {
      live_bytes_ += frame.size();
    } else {
      const std::size_t before = frame_of(key, it->second).size();
      live_bytes_ = live_bytes_ - std::min<std::uint64_t>(live_bytes_, before) + frame.size();
      it->second = value;
    }
    // Not while a sync runs outside the lock on the file compaction would replace.
    if (end_ > compact_at_ && end_ > 4 * live_bytes_ && end_ >= retry_compaction_at_ && !syncing_)
      if (auto c = compact_locked(); !c) {
        // Not again on every put: once the log has grown by another compact_at.
        retry_compaction_at_ = end_ + compact_at_;
        (void)std::remove((path_ + ".compacting").c_str());
        log_->error("state", "compaction of " + path_ + " failed: " + c.message());
      }
    return sync ? synced_through(lock, mine) : status{};
  }

  status sync() override {
    std::unique_lock lock(mu_);
    return synced_through(lock, written_);
  }

  std::string name() const override { return path_; }

 private:
  /// Returns once the puts up to the `mine`th are durable. Group commit: one caller at a time runs fdatasync,
  /// outside the lock, for every put written so far; callers that arrive meanwhile wait for it and, if their put
  /// came after it began, run the next one (which covers all of theirs). A failed fdatasync fails the log for good:
  /// what reached the disk is no longer known, so every later put and sync answers that error until the process
  /// restarts and recovery reads the file again. REQUIRES: `lock` holds mu_.
  status synced_through(std::unique_lock<std::mutex>& lock, std::uint64_t mine) {
    for (;;) {
      if (!failed_) return failed_;
      if (synced_ >= mine) return {};
      if (syncing_) {
        synced_cv_.wait(lock);
        continue;
      }
      syncing_ = true;
      const std::uint64_t covers = written_;
      const int fd = file_.get();
      lock.unlock();
      auto s = posix::sync_data(fd, path_);
      lock.lock();
      syncing_ = false;
      if (s) {
        synced_ = std::max(synced_, covers);
      } else {
        failed_ = s;
        log_->error("state", path_ + ": fdatasync failed, every later change is refused until a restart: " +
                                 s.message());
      }
      synced_cv_.notify_all();
    }
  }

  /// One record per key into a new file, synced, renamed over the log, directory synced. A crash at any point
  /// leaves the old log or the new one, whole. REQUIRES: mu_ held.
  status compact_locked() {
    std::string all;
    for (const auto& [k, v] : entries_) all += frame_of(k, v);
    const std::string tmp = path_ + ".compacting";
    auto f = posix::open_file(tmp, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (!f) return f.err();
    if (auto s = posix::pwrite_all(f->get(), all.data(), all.size(), 0, tmp); !s) return s;
    if (auto s = posix::sync_data(f->get(), tmp); !s) return s;
    if (std::rename(tmp.c_str(), path_.c_str()) != 0) return posix::os_error("cannot rename " + tmp + " to", path_);
    file_ = std::move(*f);
    end_ = all.size();
    live_bytes_ = all.size();
    // Until the directory is synced the rename may not survive a crash, and with it every record in the new file:
    // a failure there fails the log as a failed fdatasync does.
    if (auto d = posix::sync_directory(directory_of(path_)); !d) {
      failed_ = d;
      return d;
    }
    synced_ = written_;
    return {};
  }

  std::string path_;
  std::shared_ptr<logger> log_;
  std::size_t compact_at_;
  mutable std::mutex mu_;
  posix::fd file_;
  std::uint64_t end_ = 0;
  std::uint64_t live_bytes_ = 0;
  std::uint64_t written_ = 0;  ///< puts written so far
  std::uint64_t synced_ = 0;   ///< puts known durable
  bool syncing_ = false;       ///< an fdatasync runs outside the lock
  std::condition_variable synced_cv_;
  status failed_;              ///< the error of a failed fdatasync, for good
  std::uint64_t retry_compaction_at_ = 0;  ///< after a failed compaction, the size to try again at
  std::map<std::string, std::string> entries_;
};

}  // namespace

result<std::unique_ptr<keyed_log>> open_file_keyed_log(const std::string& path, std::shared_ptr<logger> log,
                                                       std::size_t compact_at) {
  auto l = std::make_unique<file_keyed_log>(path, std::move(log), compact_at);
  if (auto s = l->open(); !s) return s.err();
  return std::unique_ptr<keyed_log>(std::move(l));
}

}  // namespace moonmq::storage
