#include "moonmq/raft/file_storage.hpp"

#include <fcntl.h>
#include <rapidjson/document.h>

#include <charconv>

#include "json/object_reader.hpp"
#include "json/writer.hpp"
#include "moonmq/storage/file_state_file.hpp"
#include "moonmq/storage/record.hpp"
#include "storage/posix_file.hpp"

namespace moonmq::raft {

namespace {

/// An entry as a frame: key "term:index:kind", value the payload.
void encode(const entry& e, std::string& out) {
  moonmq::storage::record r;
  r.key = std::to_string(e.term) + ":" + std::to_string(e.index) + ":" + std::to_string(static_cast<int>(e.kind));
  r.value = e.data;
  moonmq::storage::encode_frame(r, out);
}

std::optional<entry> decode(const moonmq::storage::record_view& v) {
  if (!v.key) return std::nullopt;
  std::string_view k = *v.key;
  std::uint64_t parts[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i) {
    auto end = i < 2 ? k.find(':') : k.size();
    if (end == std::string_view::npos) return std::nullopt;
    auto [p, ec] = std::from_chars(k.data(), k.data() + end, parts[i]);
    if (ec != std::errc() || p != k.data() + end) return std::nullopt;
    k.remove_prefix(std::min(end + 1, k.size()));
  }
  if (!known_entry_kind(parts[2])) return std::nullopt;
  return entry{parts[0], parts[1], static_cast<entry_kind>(parts[2]), std::string(v.value)};
}

class file_storage final : public storage {
 public:
  file_storage(std::string dir, logger& log)
      : dir_(std::move(dir)),
        log_path_(dir_ + "/raft-log"),
        state_(moonmq::storage::make_file_state_file(dir_ + "/raft-state.json")),
        snapshot_(moonmq::storage::make_file_state_file(dir_ + "/raft-snapshot.json")),
        logger_(log) {}

  status open() {
    auto f = posix::open_file(log_path_, O_RDWR | O_CREAT);
    if (!f) return f.err();
    file_ = std::move(*f);
    return {};
  }

  result<durable_state> load() override {
    durable_state s;
    if (auto h = read_hard(); !h)
      return h.err();
    else
      s.hard = *h;
    auto snap = read_snapshot();
    if (!snap) return snap.err();
    s.snap = *snap;
    auto text = posix::read_file(log_path_);
    if (!text) return text.err();
    auto scan = moonmq::storage::scan_frames(*text);
    std::size_t good = scan.whole;
    if (scan.end == moonmq::storage::frame_scan::ending::corrupt &&
        !moonmq::storage::is_torn_last_write(std::string_view(*text).substr(good), good, text->size(),
                                             [&](std::uint64_t at) { return moonmq::storage::all_zero_from(*text, at); }))
      return error{errc::corrupt, log_path_ + ": damaged entry frame at byte " + std::to_string(good) + " (" +
                                      scan.what + "); refusing to start Raft on it"};
    if (good < text->size()) {
      if (auto t = posix::truncate_file(file_.get(), good, log_path_); !t) return t.err();
      if (auto t = posix::sync_data(file_.get(), log_path_); !t) return t.err();
      logger_.warn("raft", log_path_ + ": truncated a torn last entry (" + std::to_string(text->size() - good) +
                               " bytes after byte " + std::to_string(good) + ")");
    }
    offsets_.clear();
    const index_t floor = s.snap ? s.snap->index : 0;
    for (const auto& v : moonmq::storage::decode_frames(std::string_view(*text).substr(0, good), 0)) {
      auto e = decode(v);
      if (!e)
        return error{errc::corrupt, log_path_ + ": entry at byte " + std::to_string(v.offset) + " is not a Raft entry"};
      const std::uint64_t frame_at = v.offset;
      if (e->index <= floor) continue;  // already in the snapshot (a crash before the log was rewritten)
      const index_t expected = s.entries.empty() ? floor + 1 : s.entries.back().index + 1;
      if (e->index != expected)
        return error{errc::corrupt, log_path_ + ": entry " + std::to_string(e->index) + " at byte " +
                                        std::to_string(frame_at) + " where entry " + std::to_string(expected) +
                                        " belongs; refusing to start Raft on it"};
      offsets_.push_back({e->index, frame_at});
      s.entries.push_back(std::move(*e));
    }
    end_ = good;
    return s;
  }

  status save(const ready& r) override {
    if (r.snap) {
      if (auto s = snapshot_->replace(json::object([&](json::writer& w) {
            json::put(w, "index", r.snap->index);
            json::put(w, "term", r.snap->term);
            json::put(w, "data", r.snap->data);
          }));
          !s)
        return s;
      if (auto s = rewrite_after(r.snap->index, r.truncate_from); !s) return s;
    } else if (r.truncate_from) {
      if (auto s = truncate_from(*r.truncate_from); !s) return s;
    }
    if (!r.entries.empty()) {
      std::string buf;
      std::vector<std::pair<index_t, std::uint64_t>> added;
      for (const entry& e : r.entries) {
        added.push_back({e.index, end_ + buf.size()});
        encode(e, buf);
      }
      if (auto s = posix::pwrite_all(file_.get(), buf.data(), buf.size(), end_, log_path_); !s) return s;
      if (auto s = posix::sync_data(file_.get(), log_path_); !s) return s;
      end_ += buf.size();
      offsets_.insert(offsets_.end(), added.begin(), added.end());
    }
    if (r.hard) {
      if (auto s = state_->replace(json::object([&](json::writer& w) {
            json::put(w, "term", r.hard->term);
            json::put(w, "voted_for", r.hard->voted_for);
            json::put(w, "commit", r.hard->commit);
          }));
          !s)
        return s;
    }
    return {};
  }

 private:
  result<hard_state> read_hard() {
    auto text = state_->read();
    if (!text) return text.err();
    hard_state h;
    if (!*text) return h;
    rapidjson::Document d;
    if (auto s = json::parse_document(**text, d, state_->name()); !s) return error{errc::corrupt, s.message()};
    json::object_reader r(d, "");
    std::int64_t term = 0, commit = 0;
    r.get("term", term, true);
    r.get("voted_for", h.voted_for, true);
    r.get("commit", commit, true);
    if (r.ok() && (term < 0 || commit < 0)) r.fail_here("term and commit must be >= 0");
    if (auto s = r.finish(); !s) return error{errc::corrupt, state_->name() + ": " + s.message()};
    h.term = static_cast<term_t>(term);
    h.commit = static_cast<index_t>(commit);
    return h;
  }

  result<std::optional<snapshot>> read_snapshot() {
    auto text = snapshot_->read();
    if (!text) return text.err();
    if (!*text) return std::optional<snapshot>{};
    rapidjson::Document d;
    if (auto s = json::parse_document(**text, d, snapshot_->name()); !s) return error{errc::corrupt, s.message()};
    json::object_reader r(d, "");
    snapshot s;
    std::int64_t index = 0, term = 0;
    r.get("index", index, true);
    r.get("term", term, true);
    r.get("data", s.data, true);
    if (r.ok() && (index < 0 || term < 0)) r.fail_here("index and term must be >= 0");
    if (auto st = r.finish(); !st) return error{errc::corrupt, snapshot_->name() + ": " + st.message()};
    s.index = static_cast<index_t>(index);
    s.term = static_cast<term_t>(term);
    return std::optional<snapshot>(std::move(s));
  }

  status truncate_from(index_t i) {
    auto it = std::find_if(offsets_.begin(), offsets_.end(), [&](const auto& o) { return o.first >= i; });
    if (it == offsets_.end()) return {};
    const std::uint64_t at = it->second;
    if (auto s = posix::truncate_file(file_.get(), at, log_path_); !s) return s;
    if (auto s = posix::sync_data(file_.get(), log_path_); !s) return s;
    offsets_.erase(it, offsets_.end());
    end_ = at;
    return {};
  }

  /// Keeps only the entries after `index` (and before `truncate`, when given): a new file, renamed into place.
  status rewrite_after(index_t index, std::optional<index_t> truncate) {
    auto text = posix::read_file(log_path_);
    if (!text) return text.err();
    std::string keep;
    std::vector<std::pair<index_t, std::uint64_t>> offsets;
    for (const auto& v : moonmq::storage::decode_frames(std::string_view(*text).substr(0, end_), 0)) {
      auto e = decode(v);
      if (!e || e->index <= index || (truncate && e->index >= *truncate)) continue;
      offsets.push_back({e->index, keep.size()});
      encode(*e, keep);
    }
    const std::string tmp = log_path_ + ".tmp";
    {
      auto f = posix::open_file(tmp, O_RDWR | O_CREAT | O_TRUNC);
      if (!f) return f.err();
      if (auto s = posix::pwrite_all(f->get(), keep.data(), keep.size(), 0, tmp); !s) return s;
      if (auto s = posix::sync_data(f->get(), tmp); !s) return s;
    }
    if (::rename(tmp.c_str(), log_path_.c_str()) != 0) return posix::os_error("rename to", log_path_);
    if (auto s = posix::sync_directory(dir_); !s) return s;
    auto f = posix::open_file(log_path_, O_RDWR);
    if (!f) return f.err();
    file_ = std::move(*f);
    offsets_ = std::move(offsets);
    end_ = keep.size();
    return {};
  }

  std::string dir_;
  std::string log_path_;
  std::unique_ptr<moonmq::storage::state_file> state_;
  std::unique_ptr<moonmq::storage::state_file> snapshot_;
  logger& logger_;
  posix::fd file_;
  std::uint64_t end_ = 0;
  std::vector<std::pair<index_t, std::uint64_t>> offsets_;  // entry index -> frame offset in raft-log
};

}  // namespace

result<std::unique_ptr<storage>> open_file_storage(const std::string& dir, logger& log) {
  if (auto s = posix::make_directories(dir); !s) return s.err();
  auto st = std::make_unique<file_storage>(dir, log);
  if (auto s = st->open(); !s) return s.err();
  return std::unique_ptr<storage>(std::move(st));
}

}  // namespace moonmq::raft
