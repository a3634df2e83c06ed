#include "moonmq/cluster/move_journal.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <map>
#include <mutex>

#include "json/state_document.hpp"

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
    for (const auto& m : d["moves"].GetArray()) {
      json::object_reader r(m, file_->name() + ": moves[]");
      std::string topic, dest;
      std::int64_t partition = -1;
      r.get("topic", topic, true);
      r.get("partition", partition, true);
      r.get("dest", dest, true);
      if (r.ok() && (partition < 0 || partition > INT32_MAX || dest.empty())) r.fail_here("bad entry");
      if (auto s = r.finish(); !s) return {errc::corrupt, s.message()};
      moves_[{topic, static_cast<std::int32_t>(partition)}] = broker_id(dest);
    }
    return {};
  }

  status add(const pending_move& m) override {
    std::lock_guard lock(mu_);
    auto next = moves_;
    next[m.partition] = m.dest;
    return commit(std::move(next));
  }

  status remove(const topic_partition& tp) override {
    std::lock_guard lock(mu_);
    if (!moves_.count(tp)) return {};
    auto next = moves_;
    next.erase(tp);
    return commit(std::move(next));
  }

  std::vector<pending_move> pending() const override {
    std::lock_guard lock(mu_);
    std::vector<pending_move> out;
    for (const auto& [tp, d] : moves_) out.push_back({tp, d});
    return out;
  }

 private:
  status commit(std::map<topic_partition, broker_id> next) {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    w.StartObject();
    w.Key("moves");
    w.StartArray();
    for (const auto& [tp, d] : next) {
      w.StartObject();
      w.Key("topic");
      w.String(tp.topic.c_str());
      w.Key("partition");
      w.Int(tp.partition);
      w.Key("dest");
      w.String(d.value().c_str());
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    if (auto s = file_->replace(std::string_view(buf.GetString(), buf.GetSize())); !s) return s;
    moves_ = std::move(next);
    return {};
  }

  std::unique_ptr<storage::state_file> file_;
  mutable std::mutex mu_;
  std::map<topic_partition, broker_id> moves_;
};

}  // namespace

result<std::unique_ptr<move_journal>> open_move_journal(std::unique_ptr<storage::state_file> file) {
  auto j = std::make_unique<file_move_journal>(std::move(file));
  if (auto s = j->load(); !s) return s.err();
  return std::unique_ptr<move_journal>(std::move(j));
}

}  // namespace moonmq::cluster
