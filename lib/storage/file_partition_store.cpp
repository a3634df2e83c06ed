#include "moonmq/storage/file_partition_store.hpp"

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "json/object_reader.hpp"
#include "moonmq/storage/file_state_file.hpp"
#include "storage/descriptor_cache.hpp"
#include "storage/posix_file.hpp"
#include "moonmq/core/fault_points.hpp"

namespace moonmq::storage {

result<fsync_policy> parse_fsync_policy(std::string_view s) {
  if (s == "always") return fsync_policy::always;
  if (s == "interval") return fsync_policy::interval;
  if (s == "never") return fsync_policy::never;
  return error{errc::invalid_argument,
               "expected \"always\", \"interval\" or \"never\", got \"" + std::string(s) + "\""};
}

const char* fsync_policy_name(fsync_policy p) {
  switch (p) {
    case fsync_policy::always:
      return "always";
    case fsync_policy::interval:
      return "interval";
    case fsync_policy::never:
      return "never";
  }
  return "?";
}

namespace {

/// A frame start is remembered at least every this many bytes, so that a read can check that its offset is a
/// record boundary by walking at most this far.
constexpr std::uint64_t index_interval = 64 * 1024;
constexpr std::size_t recovery_chunk = 4u << 20;

class partition_log {
 public:
  partition_log(std::string path, descriptor_cache& files) : path_(std::move(path)), files_(files) {}

  const std::string& path() const { return path_; }
  std::uint64_t end() const { return end_.load(std::memory_order_acquire); }

  /// Scans the file, truncates a torn tail, and fills the frame index.
  /// Whether the log holds only zero bytes from `at` to `size` (a read error counts as "no": recovery then refuses).
  bool zero_to_end(std::uint64_t at, std::uint64_t size) const {
    auto file = files_.acquire(path_);
    if (!file) return false;
    std::string chunk;
    while (at < size) {
      chunk.resize(static_cast<std::size_t>(std::min<std::uint64_t>(64u << 10, size - at)));
      auto got = posix::pread_full((*file)->get(), chunk.data(), chunk.size(), at, path_);
      if (!got || *got == 0) return false;
      chunk.resize(*got);
      if (!all_zero_from(chunk, 0)) return false;
      at += *got;
    }
    return true;
  }

  status recover(logger& log) {
    auto file = files_.acquire(path_);
    if (!file) return file.err();
    const int fd = (*file)->get();
    auto size = posix::file_size(fd, path_);
    if (!size) return size.err();
    std::string buf;
    std::uint64_t base = 0, read_pos = 0;
    while (true) {
      if (read_pos < *size) {
        std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(recovery_chunk, *size - read_pos));
        std::size_t old = buf.size();
        buf.resize(old + n);
        auto got = posix::pread_full(fd, buf.data() + old, n, read_pos, path_);
        if (!got) return got.err();
        buf.resize(old + *got);
        read_pos += *got;
        if (*got < n) *size = read_pos;  // shrank under us
      }
      const bool eof = read_pos >= *size;
      auto scan = scan_frames(buf, [&](std::size_t at) { note_frame(base + at); });
      base += scan.whole;
      buf.erase(0, scan.whole);
      if (scan.end == frame_scan::ending::clean) {
        if (eof) break;
        continue;
      }
      if (scan.end == frame_scan::ending::partial) {
        if (eof) break;
        continue;
      }
      auto zeros_from = [&](std::uint64_t at) { return zero_to_end(at, *size); };
      if (is_torn_last_write(buf, base, *size, zeros_from)) break;
      return error{errc::corrupt, path_ + ": corrupt record at offset " + std::to_string(base) + " (" + scan.what +
                                      "); refusing to open the partition"};
    }
    if (base < *size) {
      if (auto s = posix::truncate_file(fd, base, path_); !s) return s;
      if (auto s = posix::sync_data(fd, path_); !s) return s;
      log.warn("partition_log", path_ + ": truncated a torn tail of " + std::to_string(*size - base) +
                                    " bytes after offset " + std::to_string(base));
    }
    end_.store(base, std::memory_order_release);
    return {};
  }

  result<std::vector<std::uint64_t>> append(const encoded_records& records, fsync_policy policy) {
    std::vector<std::uint64_t> offsets;
    offsets.reserve(records.size());
    std::lock_guard lock(mu_);
    const std::uint64_t at = end_.load(std::memory_order_relaxed);
    if (auto s = write_locked(at, records.bytes, policy); !s) return s.err();
    for (auto start : records.starts) {
      offsets.push_back(at + start);
      note_frame(at + start);
    }
    end_.store(at + records.bytes.size(), std::memory_order_release);
    return offsets;
  }

  status append_at(std::uint64_t expected, std::string_view frames, std::uint64_t* actual_end, fsync_policy policy) {
    std::vector<std::size_t> starts;
    auto scan = scan_frames(frames, [&](std::size_t at) { starts.push_back(at); });
    if (scan.end != frame_scan::ending::clean)
      return {errc::invalid_argument, path_ + ": migration batch is not whole valid frames (" +
                                          (scan.what.empty() ? "incomplete frame" : scan.what) + " at batch byte " +
                                          std::to_string(scan.whole) + ")"};
    std::lock_guard lock(mu_);
    const std::uint64_t at = end_.load(std::memory_order_relaxed);
    if (actual_end) *actual_end = at;
    if (at != expected)
      return {errc::conflict, path_ + ": expected end offset " + std::to_string(expected) + ", actual end offset " +
                                  std::to_string(at)};
    if (auto s = write_locked(at, frames, policy); !s) return s;
    for (auto st : starts) note_frame(at + st);
    end_.store(at + frames.size(), std::memory_order_release);
    if (actual_end) *actual_end = at + frames.size();
    return {};
  }

  /// `cached_only`: see partition_store::read_cached.
  result<read_result> read(std::uint64_t from, std::size_t max_bytes, const std::string& name,
                           bool cached_only = false) const {
    read_result r;
    r.end_offset = end();
    r.next_offset = from;
    if (from > r.end_offset)
      return error{errc::invalid_argument, name + ": offset " + std::to_string(from) + " is past the end offset " +
                                               std::to_string(r.end_offset)};
    if (from == r.end_offset) return r;
    std::uint64_t start = 0;
    std::uint64_t discards = 0;
    {
      // An append holds the lock across its write (and fsync): a read that must not wait does not wait for it.
      std::unique_lock lock(mu_, std::defer_lock);
      if (auto l = lock_index(lock, cached_only, name); !l) return l.err();
      auto it = std::upper_bound(index_.begin(), index_.end(), from);
      start = from == read_end_ ? from : it == index_.begin() ? 0 : *(it - 1);
      // A log that shrank since its end was read above was discarded in between: this read may reach past what is
      // written now, and does not say where a record starts.
      discards = end() < r.end_offset ? std::numeric_limits<std::uint64_t>::max() : discards_;
    }
    if (from - start >= index_interval) return not_boundary(name, from);
    std::uint64_t want = (from - start) + std::max<std::uint64_t>(max_bytes, frame_header_size);
    want = std::min(want, r.end_offset - start);
    auto file = files_.acquire(path_);
    if (!file) return file.err();
    byte_buffer buf(static_cast<std::size_t>(want));
    auto got = posix::pread_full((*file)->get(), buf.data(), buf.size(), start, path_, cached_only);
    if (!got) return got.err();
    buf.truncate(*got);
    // Walk the frames before `from`: it must be one of their starts.
    std::size_t pos = 0;
    const std::size_t lead = static_cast<std::size_t>(from - start);
    while (pos < lead) {
      if (buf.size() - pos < frame_header_size) return not_boundary(name, from);
      pos += frame_header_size + detail::get_u32(buf.data() + pos);
    }
    if (pos != lead) return not_boundary(name, from);
    std::string_view rest = buf.view().substr(lead);
    std::size_t first = 0;
    std::size_t take = frames_within(rest, max_bytes, &first);
    if (take == 0 && first > rest.size() && from + first <= r.end_offset) {
      // The first frame alone is larger than what was read: read it whole (on a thread that may wait: it may be as
      // large as max_payload_size).
      if (cached_only) return error{errc::would_block, name + ": a record larger than the read waits for a thread"};
      byte_buffer big(first);
      auto more = posix::pread_full((*file)->get(), big.data(), big.size(), from, path_, cached_only);
      if (!more) return more.err();
      big.truncate(*more);
      auto scan = scan_frames(big.view());
      if (scan.end != frame_scan::ending::clean || scan.records != 1) return damaged(name, from, scan);
      r.bytes = std::move(big);
      r.next_offset = from + first;
      return r;
    }
    if (take == 0) take = rest.size();  // let the scan name what is wrong
    auto scan = scan_frames(rest.substr(0, take));
    if (scan.end != frame_scan::ending::clean) return damaged(name, from, scan);
    // Hand the buffer over rather than copying it: drop the frames before `from` and the cut-off tail.
    buf.drop_front(lead);
    buf.truncate(take);
    r.bytes = std::move(buf);
    r.next_offset = from + take;
    if (take != 0) {
      // Not worth waiting for: the next read walks from the index instead. With the lock held no append is under
      // way, so the end is what is written.
      std::unique_lock lock(mu_, std::try_to_lock);
      if (lock.owns_lock() && discards == discards_ && r.next_offset <= end()) read_end_ = r.next_offset;
    }
    return r;
  }

  result<std::uint64_t> next_record(std::uint64_t from, const std::string& name, bool cached_only = false) const {
    const std::uint64_t end_offset = end();
    if (from > end_offset)
      return error{errc::invalid_argument, name + ": offset " + std::to_string(from) + " is past the end offset " +
                                               std::to_string(end_offset)};
    std::uint64_t pos = 0;
    {
      std::unique_lock lock(mu_, std::defer_lock);
      if (auto l = lock_index(lock, cached_only, name); !l) return l.err();
      auto it = std::upper_bound(index_.begin(), index_.end(), from);
      pos = from == read_end_ ? from : it == index_.begin() ? 0 : *(it - 1);
    }
    if (pos == from || from == end_offset) return from;
    auto file = files_.acquire(path_);
    if (!file) return file.err();
    // Walk the frame headers from the indexed start before `from`, reading them a chunk at a time (a frame larger
    // than a chunk costs one more read for the header after it).
    std::string chunk;
    std::uint64_t chunk_at = 0;
    while (pos < from) {
      if (pos < chunk_at || pos + frame_header_size > chunk_at + chunk.size()) {
        chunk.resize(static_cast<std::size_t>(std::min<std::uint64_t>(index_interval + frame_header_size,
                                                                      end_offset - pos)));
        auto got = posix::pread_full((*file)->get(), chunk.data(), chunk.size(), pos, path_, cached_only);
        if (!got) return got.err();
        chunk.resize(*got);
        chunk_at = pos;
        if (chunk.size() < frame_header_size)
          return error{errc::corrupt, name + ": damaged record at offset " + std::to_string(pos) +
                                          " (incomplete frame header)"};
      }
      pos += frame_header_size + detail::get_u32(chunk.data() + (pos - chunk_at));
    }
    return std::min(pos, end_offset);
  }

  status sync() {
    dirty_.store(false, std::memory_order_relaxed);
    auto file = files_.acquire(path_);
    status s = file ? MOONMQ_FAULT("log.before_fsync") : status(file.err());
    if (s) s = posix::sync_data((*file)->get(), path_);
    if (!s) dirty_.store(true, std::memory_order_release);  // the flusher tries again
    return s;
  }
  bool take_dirty() { return dirty_.exchange(false, std::memory_order_acq_rel); }

  /// Cuts the log to nothing and syncs the cut.
  status discard() {
    std::lock_guard lock(mu_);
    auto file = files_.acquire(path_);
    if (!file) return file.err();
    const int fd = (*file)->get();
    if (auto s = posix::truncate_file(fd, 0, path_); !s) return s;
    if (auto s = posix::sync_data(fd, path_); !s) return s;
    index_.clear();
    read_end_ = 0;
    ++discards_;
    end_.store(0, std::memory_order_release);
    return {};
  }

 private:
  /// Locks `lock` (on mu_); `cached_only`: without waiting, else errc::would_block.
  static status lock_index(std::unique_lock<std::mutex>& lock, bool cached_only, const std::string& name) {
    if (!cached_only) {
      lock.lock();
      return {};
    }
    if (!lock.try_lock()) return {errc::would_block, name + ": an append is under way"};
    return {};
  }

  /// REQUIRES: mu_ held.
  status write_locked(std::uint64_t at, std::string_view bytes, fsync_policy policy) {
    auto file = files_.acquire(path_);
    if (!file) return file.err();
    const int fd = (*file)->get();
    auto s = posix::pwrite_all(fd, bytes.data(), bytes.size(), at, path_);
    if (s && policy == fsync_policy::always) {
      s = MOONMQ_FAULT("log.before_fsync");
      if (s) s = posix::sync_data(fd, path_);
      if (s) s = MOONMQ_FAULT("log.after_fsync");  // an error here: synced, yet refused and cut back
    }
    if (!s) {
      // Nothing half-applied: cut back whatever part of the write landed.
      (void)posix::truncate_file(fd, at, path_);
      return s;
    }
    if (policy == fsync_policy::interval) dirty_.store(true, std::memory_order_release);
    return {};
  }

  void note_frame(std::uint64_t start) {
    if (index_.empty() || start >= index_.back() + index_interval) index_.push_back(start);
  }

  static error not_boundary(const std::string& name, std::uint64_t from) {
    return error{errc::invalid_argument, name + ": offset " + std::to_string(from) + " is not a record boundary"};
  }
  static error damaged(const std::string& name, std::uint64_t from, const frame_scan& scan) {
    return error{errc::corrupt, name + ": damaged record at offset " + std::to_string(from + scan.whole) + " (" +
                                    (scan.what.empty() ? "incomplete frame" : scan.what) + ")"};
  }

  std::string path_;
  descriptor_cache& files_;
  mutable std::mutex mu_;  // serializes writers; guards index_, read_end_ and discards_
  std::atomic<std::uint64_t> end_{0};
  std::atomic<bool> dirty_{false};
  std::vector<std::uint64_t> index_;
  /// Where the last read that returned frames ended: a frame's start (or the end then), which a consumer's next
  /// fetch usually asks for. Reading from it needs no walk from the index entry before it. Guarded by mu_, and set
  /// only by a read that began after the last discard() (which counts in discards_ and resets it).
  mutable std::uint64_t read_end_ = 0;
  std::uint64_t discards_ = 0;
};

class file_partition_store final : public partition_store {
 public:
  explicit file_partition_store(file_store_options o) : opt_(std::move(o)), files_(opt_.max_open_files) {}

  ~file_partition_store() override {
    {
      std::lock_guard lock(flush_mu_);
      stopping_ = true;
    }
    flush_cv_.notify_all();
    if (flusher_.joinable()) flusher_.join();
    flush_all();
  }

  status open() {
    if (auto s = posix::make_directories(topics_dir()); !s) return s;
    auto names = posix::list_directory(topics_dir());
    if (!names) return names.err();
    for (const auto& topic : *names) {
      if (topic.starts_with("+removed+")) {  // a removal that a stop cut short: finish it
        if (auto s = posix::remove_flat_directory(topics_dir() + "/" + topic); !s) return s;
        continue;
      }
      if (!validate_topic_name(topic)) continue;  // not ours
      auto meta = make_file_state_file(topic_dir(topic) + "/topic.json");
      auto doc = meta->read();
      if (!doc) return doc.err();
      if (!*doc) continue;  // a topic whose creation never finished: it never existed
      auto count = parse_topic_meta(**doc, meta->name());
      if (!count) return count.err();
      auto& parts = topics_[topic];
      for (std::int32_t i = 0; i < *count; ++i) {
        auto log = open_log(topic, i);
        if (!log) return log.err();
        parts.push_back(std::move(*log));
        ++total_partitions_;
      }
    }
    if (opt_.fsync == fsync_policy::interval) flusher_ = std::thread([this] { flush_loop(); });
    return {};
  }

  result<std::int32_t> ensure_topic(const std::string& topic, std::int32_t partitions) override {
    if (auto s = validate_topic_name(topic); !s) return s.err();
    std::unique_lock lock(mu_);
    auto& parts = topics_[topic];
    const auto had = static_cast<std::int32_t>(parts.size());
    if (auto room = room_locked(had, partitions); !room) return rollback(topic, had, room.err());
    if (partitions <= had) return had;
    if (auto s = posix::make_directories(topic_dir(topic)); !s) return rollback(topic, had, s.err());
    std::vector<std::unique_ptr<partition_log>> added;
    for (std::int32_t i = had; i < partitions; ++i) {
      auto log = open_log(topic, i);
      if (!log) return rollback(topic, had, log.err());
      added.push_back(std::move(*log));
    }
    if (auto s = posix::sync_directory(topic_dir(topic)); !s) return rollback(topic, had, s.err());
    if (had == 0) {
      if (auto s = posix::sync_directory(topics_dir()); !s) return rollback(topic, had, s.err());
    }
    auto meta = make_file_state_file(topic_dir(topic) + "/topic.json");
    if (auto s = meta->replace("{\"partitions\":" + std::to_string(partitions) + "}\n"); !s)
      return rollback(topic, had, s.err());
    for (auto& l : added) parts.push_back(std::move(l));
    total_partitions_ += added.size();
    return partitions;
  }

  status room_for(const std::string& topic, std::int32_t partitions) const override {
    if (auto s = validate_topic_name(topic); !s) return s;
    std::shared_lock lock(mu_);
    auto it = topics_.find(topic);
    return room_locked(it == topics_.end() ? 0 : static_cast<std::int32_t>(it->second.size()), partitions);
  }

  status remove_topic(const std::string& topic) override {
    if (auto s = validate_topic_name(topic); !s) return s;
    std::unique_lock lock(mu_);
    auto it = topics_.find(topic);
    if (it == topics_.end() || it->second.empty()) return {errc::not_found, "unknown topic '" + topic + "'"};
    // First out of the way in one rename (the name is no topic's: open() skips it and clears it away), so that a
    // crash part-way through leaves either the whole topic or none of it, and a new topic of the name starts empty.
    const std::string gone = topics_dir() + "/+removed+" + topic + "+" + std::to_string(++removals_);
    if (auto s = posix::rename_path(topic_dir(topic), gone); !s) return s;
    // Renamed: the topic is gone from here on whatever follows (a failed directory sync only means a crash now
    // might bring the old name back, and the next removal of it, at the next start, takes it away again).
    const status synced = posix::sync_directory(topics_dir());
    total_partitions_ -= it->second.size();
    // The open descriptors of the renamed files must not serve a log made later at the same path.
    for (const auto& log : it->second) files_.forget(log->path());
    // The logs live on in retired_: a reader or writer that found one before the removal still holds a valid object.
    for (auto& log : it->second) retired_.push_back(std::move(log));
    topics_.erase(it);
    lock.unlock();
    (void)posix::remove_flat_directory(gone);  // what is left is cleared at the next open()
    return synced;
  }

  result<std::int32_t> partition_count(const std::string& topic) const override {
    std::shared_lock lock(mu_);
    auto it = topics_.find(topic);
    if (it == topics_.end() || it->second.empty()) return error{errc::not_found, "unknown topic '" + topic + "'"};
    return static_cast<std::int32_t>(it->second.size());
  }

  std::vector<std::string> topics() const override {
    std::shared_lock lock(mu_);
    std::vector<std::string> out;
    for (const auto& [t, p] : topics_)
      if (!p.empty()) out.push_back(t);
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
    auto log = find(tp);
    if (!log) return log.err();
    return (*log)->end();
  }

  result<std::uint64_t> size_bytes(const topic_partition& tp) const override { return end_offset(tp); }

  result<read_result> read(const topic_partition& tp, std::uint64_t from, std::size_t max_bytes) const override {
    auto log = find(tp);
    if (!log) return log.err();
    return (*log)->read(from, max_bytes, name(tp));
  }

  result<std::uint64_t> next_record(const topic_partition& tp, std::uint64_t offset) const override {
    auto log = find(tp);
    if (!log) return log.err();
    return (*log)->next_record(offset, name(tp));
  }

  result<read_result> read_cached(const topic_partition& tp, std::uint64_t from, std::size_t max_bytes) const override {
    auto log = find(tp);
    if (!log) return log.err();
    return (*log)->read(from, max_bytes, name(tp), true);
  }

  result<std::uint64_t> next_record_cached(const topic_partition& tp, std::uint64_t offset) const override {
    auto log = find(tp);
    if (!log) return log.err();
    return (*log)->next_record(offset, name(tp), true);
  }

  result<std::vector<std::uint64_t>> append(const topic_partition& tp, const std::vector<record>& records) override {
    auto log = find(tp);
    if (!log) return log.err();
    return (*log)->append(encode_records(records), opt_.fsync);
  }

  result<std::vector<std::uint64_t>> append_encoded(const topic_partition& tp,
                                                    const encoded_records& records) override {
    auto log = find(tp);
    if (!log) return log.err();
    return (*log)->append(records, opt_.fsync);
  }

  status append_at(const topic_partition& tp, std::uint64_t expected, std::string_view frames,
                   std::uint64_t* actual_end) override {
    auto log = find(tp);
    if (!log) return log.err();
    return (*log)->append_at(expected, frames, actual_end, opt_.fsync);
  }

  status sync(const topic_partition& tp) override {
    auto log = find(tp);
    if (!log) return log.err();
    return (*log)->sync();
  }

  status discard(const topic_partition& tp) override {
    auto log = find(tp);
    if (!log) return log.err();
    return (*log)->discard();
  }

 private:
  /// REQUIRES: mu_ held. Whether a topic with `had` partitions here may grow to `partitions`.
  status room_locked(std::int32_t had, std::int32_t partitions) const {
    const auto per_topic = std::min<std::int32_t>(max_partitions_per_topic_hard, opt_.max_partitions_per_topic);
    if (partitions < 1 || partitions > per_topic)
      return {errc::invalid_argument, "partition count must be from 1 to " + std::to_string(per_topic) +
                                          " (Server.Limits.MaxPartitionsPerTopic)"};
    if (partitions > had &&
        total_partitions_ + static_cast<std::size_t>(partitions - had) > opt_.max_partitions_per_broker)
      return {errc::resource_exhausted,
              "this broker holds " + std::to_string(total_partitions_) + " partitions; " +
                  std::to_string(partitions - had) + " more would pass its limit of " +
                  std::to_string(opt_.max_partitions_per_broker) + " (Server.Limits.MaxPartitionsPerBroker)"};
    return {};
  }

  std::string topics_dir() const { return opt_.data_dir + "/topics"; }
  std::string topic_dir(const std::string& t) const { return topics_dir() + "/" + t; }
  static std::string name(const topic_partition& tp) { return tp.topic + "-" + std::to_string(tp.partition); }

  result<std::unique_ptr<partition_log>> open_log(const std::string& topic, std::int32_t i) {
    std::string path = topic_dir(topic) + "/" + std::to_string(i) + ".log";
    if (auto created = posix::open_file(path, O_RDWR | O_CREAT, 0644); !created) return created.err();
    auto log = std::make_unique<partition_log>(path, files_);
    if (auto s = log->recover(*opt_.log); !s) return s.err();
    return log;
  }

  static result<std::int32_t> parse_topic_meta(const std::string& text, const std::string& file) {
    rapidjson::Document doc;
    if (auto s = json::parse_document(text, doc, file); !s) return error{errc::corrupt, s.message()};
    json::object_reader r(doc, file);
    std::uint32_t n = 0;
    r.get("partitions", n, true);
    if (r.ok() && (n < 1 || n > static_cast<std::uint32_t>(max_partitions_per_topic_hard)))
      r.fail("partitions", "out of range");
    if (auto s = r.finish(); !s) return error{errc::corrupt, s.message()};
    return static_cast<std::int32_t>(n);
  }

  result<std::int32_t> rollback(const std::string& topic, std::int32_t had, error e) {
    if (had == 0) topics_.erase(topic);
    return e;
  }

  result<partition_log*> find(const topic_partition& tp) const {
    std::shared_lock lock(mu_);
    auto it = topics_.find(tp.topic);
    if (it == topics_.end() || it->second.empty()) return error{errc::not_found, "unknown topic '" + tp.topic + "'"};
    if (tp.partition < 0 || tp.partition >= static_cast<std::int32_t>(it->second.size()))
      return error{errc::not_found, "unknown partition " + name(tp)};
    return it->second[static_cast<std::size_t>(tp.partition)].get();
  }

  void flush_loop() {
    std::unique_lock lock(flush_mu_);
    while (!stopping_) {
      flush_cv_.wait_for(lock, std::chrono::milliseconds(opt_.fsync_interval_ms), [this] { return stopping_; });
      if (stopping_) break;
      lock.unlock();
      flush_all();
      lock.lock();
    }
  }

  void flush_all() {
    std::shared_lock lock(mu_);
    for (const auto& [t, parts] : topics_)
      for (const auto& p : parts)
        if (p->take_dirty())
          if (auto s = p->sync(); !s) opt_.log->error("partition_log", s.message());
  }

  file_store_options opt_;
  descriptor_cache files_;  // before topics_: the logs refer to it
  mutable std::shared_mutex mu_;
  std::map<std::string, std::vector<std::unique_ptr<partition_log>>> topics_;
  std::size_t total_partitions_ = 0;  // guarded by mu_
  std::uint64_t removals_ = 0;        // guarded by mu_: names the directories of removed topics apart
  std::vector<std::unique_ptr<partition_log>> retired_;  // guarded by mu_: logs of removed topics (remove_topic)
  std::mutex flush_mu_;
  std::condition_variable flush_cv_;
  bool stopping_ = false;
  std::thread flusher_;
};

}  // namespace

result<std::unique_ptr<partition_store>> open_file_partition_store(const file_store_options& options) {
  if (options.data_dir.empty()) return error{errc::invalid_argument, "data directory must not be empty"};
  auto store = std::make_unique<file_partition_store>(options);
  if (auto s = store->open(); !s) return s.err();
  return std::unique_ptr<partition_store>(std::move(store));
}

}  // namespace moonmq::storage
