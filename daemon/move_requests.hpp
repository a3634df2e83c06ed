// The hand-driven moves this broker runs, kept in DATA_DIR/move-requests.json from their start until they end (done,
// failed or cancelled), so that a move interrupted by a stop or a crash is started again when the broker comes back.
// A move the broker stops itself (SIGTERM) never ends, so it stays listed; at the next start each listed move of a
// partition this broker still serves starts again (the destination's partial copy is a prefix: the copy resumes from
// its end), and one of a partition served elsewhere by then (its journal moved it forward) is dropped.
// Thread safety: all members may be called from any thread.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "json/parse.hpp"
#include "json/writer.hpp"
#include "moonmq/core/ids.hpp"
#include "moonmq/core/result.hpp"
#include "moonmq/storage/state_file.hpp"

namespace moonmq::daemon {

struct move_request {
  topic_partition partition;
  std::string dest;
};

// Keyed by partition (a partition has one move at a time), and written before the move starts: a move that ends
// before its record is written cannot leave a record behind.

class move_requests {
 public:
  static result<std::unique_ptr<move_requests>> open(std::unique_ptr<storage::state_file> file) {
    std::unique_ptr<move_requests> r(new move_requests(std::move(file)));
    auto text = r->file_->read();
    if (!text) return text.err();
    if (!*text) return r;
    rapidjson::Document d;
    const auto bad = error{errc::corrupt, r->file_->name() + ": expected {\"moves\": [{\"topic\",\"partition\",\"dest\"}]}"};
    if (!json::parse_object(**text, d) || !d.HasMember("moves") || !d["moves"].IsArray()) return bad;
    for (const auto& m : d["moves"].GetArray()) {
      if (!m.IsObject() || !m.HasMember("topic") || !m["topic"].IsString() || !m.HasMember("partition") ||
          !m["partition"].IsInt() || !m.HasMember("dest") || !m["dest"].IsString())
        return bad;
      topic_partition tp{m["topic"].GetString(), m["partition"].GetInt()};
      r->moves_[tp] = {tp, m["dest"].GetString()};
    }
    return r;
  }

  /// Moves listed now (at start: the interrupted ones).
  std::map<topic_partition, move_request> listed() const {
    std::lock_guard lock(mu_);
    return moves_;
  }

  status add(move_request m) {
    std::lock_guard lock(mu_);
    auto next = moves_;
    next[m.partition] = m;
    return commit(std::move(next));
  }

  /// Forgets the move of `tp` (nothing when none is listed).
  status remove(const topic_partition& tp) {
    std::lock_guard lock(mu_);
    if (!moves_.count(tp)) return {};
    auto next = moves_;
    next.erase(tp);
    return commit(std::move(next));
  }

 private:
  explicit move_requests(std::unique_ptr<storage::state_file> f) : file_(std::move(f)) {}

  status commit(std::map<topic_partition, move_request> next) {
    std::string doc = json::object([&](json::writer& w) {
      w.Key("moves");
      w.StartArray();
      for (const auto& [tp, m] : next) {
        w.StartObject();
        json::put(w, "topic", m.partition.topic);
        json::put(w, "partition", m.partition.partition);
        json::put(w, "dest", m.dest);
        w.EndObject();
      }
      w.EndArray();
    });
    if (auto s = file_->replace(doc); !s) return s;
    moves_ = std::move(next);
    return {};
  }

  std::unique_ptr<storage::state_file> file_;
  mutable std::mutex mu_;
  std::map<topic_partition, move_request> moves_;
};

}  // namespace moonmq::daemon
