#include "moonmq/cluster/move_journal.hpp"

#include <map>
#include <mutex>

#include "json/state_document.hpp"
#include "json/writer.hpp"

namespace moonmq::cluster {

namespace {

class file_move_journal final : public move_journal {
 public:
  explicit file_move_journal(std::unique_ptr<storage::state_file> f) : file_(std::move(f)) {}

  status load() {
    rapidjson::Document d;
    auto present = json::read_state_document(*file_, d);
    if (!present) return present.to_status();
    if (!*present) return {};
    if (!d.IsObject() || !d.HasMember("moves") || !d["moves"].IsArray())
      return {errc::corrupt, file_->name() + ": expected {\"moves\": [...]}"};
    for (rapidjson::SizeType i = 0; i < d["moves"].Size(); ++i) {
      const auto& m = d["moves"][i];
      json::object_reader r(m, file_->name() + ": moves[" + std::to_string(i) + "]");
      std::string topic, dest;
      std::int64_t partition = -1;
      pending_move p;
      r.get("topic", topic, true);
      r.get("partition", partition, true);
      r.get("dest", dest, true);
      p.legacy = !m.IsObject() || !m.HasMember("version");
      r.get("version", p.version, false);
      r.get("drained", p.drained, false);
      r.get("incarnation", p.incarnation, false);
      if (r.ok() && (partition < 0 || partition > INT32_MAX)) r.fail("partition", "out of range");
      if (r.ok() && dest.empty()) r.fail("dest", "must not be empty");
      if (auto s = r.finish(); !s) return {errc::corrupt, s.message()};
      p.partition = {topic, static_cast<std::int32_t>(partition)};
      p.dest = broker_id(dest);
      moves_[p.partition] = p;
    }
    return {};
  }

  status add(const pending_move& m) override {
    std::lock_guard lock(mu_);
    auto next = moves_;
    next[m.partition] = m;
    return commit(std::move(next));
  }

  status remove(const topic_partition& tp, std::uint64_t version) override {
    std::lock_guard lock(mu_);
    auto it = moves_.find(tp);
    if (it == moves_.end() || it->second.version != version) return {};
    auto next = moves_;
    next.erase(tp);
    return commit(std::move(next));
  }

  std::vector<pending_move> pending() const override {
    std::lock_guard lock(mu_);
    std::vector<pending_move> out;
    for (const auto& [tp, m] : moves_) out.push_back(m);
    return out;
  }

 private:
  status commit(std::map<topic_partition, pending_move> next) {
    std::string text = json::object([&](json::writer& w) {
      w.Key("moves");
      w.StartArray();
      for (const auto& [tp, m] : next) {
        w.StartObject();
        json::put(w, "topic", tp.topic);
        json::put(w, "partition", tp.partition);
        json::put(w, "dest", m.dest.value());
        if (!m.legacy) {
          json::put(w, "version", m.version);
          json::put(w, "drained", m.drained);
        }
        if (m.incarnation) json::put(w, "incarnation", m.incarnation);
        w.EndObject();
      }
      w.EndArray();
    });
    if (auto s = file_->replace(text); !s) return s;
    moves_ = std::move(next);
    return {};
  }

  std::unique_ptr<storage::state_file> file_;
  mutable std::mutex mu_;
  std::map<topic_partition, pending_move> moves_;
};

}  // namespace

result<std::unique_ptr<move_journal>> open_move_journal(std::unique_ptr<storage::state_file> file) {
  auto j = std::make_unique<file_move_journal>(std::move(file));
  if (auto s = j->load(); !s) return s.err();
  return std::unique_ptr<move_journal>(std::move(j));
}

}  // namespace moonmq::cluster
