#include "moonmq/cluster/local_ownership_table.hpp"

#include <map>
#include <shared_mutex>

#include "json/state_document.hpp"
#include "json/writer.hpp"
#include "moonmq/core/fault_points.hpp"

namespace moonmq::cluster {

namespace {

class local_ownership_table final : public ownership_table {
 public:
  local_ownership_table(broker_id self, std::unique_ptr<storage::state_file> f)
      : self_(std::move(self)), file_(std::move(f)) {}

  status load() {
    rapidjson::Document d;
    auto present = json::read_state_document(*file_, d);
    if (!present) return present.to_status();
    if (!*present) return {};
    json::object_reader top(d, file_->name());
    std::uint32_t version = 0;
    top.get("version", version, true);
    const auto* list = top.member("assignments");
    if (top.ok() && version != 1 && version != 2)
      top.fail("version", "unsupported version " + std::to_string(version));
    if (top.ok() && (!list || !list->IsArray())) top.fail("assignments", "expected an array");
    if (auto s = top.finish(); !s) return {errc::corrupt, s.message()};
    for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
      json::object_reader r((*list)[i], file_->name() + ": assignments[" + std::to_string(i) + "]");
      std::string topic, broker;
      std::int64_t partition = 0;
      ownership_entry e;
      r.get("topic", topic, true);
      r.get("partition", partition, true);
      r.get("broker", broker, true);
      // Version 1 files (before ownership versions) hold entries at version 0, none in handover.
      r.get("version", e.version, version == 2);
      r.get("handover", e.handover, false);
      if (r.ok() && (topic.empty() || broker.empty() || partition < 0 || partition > INT32_MAX))
        r.fail_here("empty topic or broker, or partition out of range");
      if (auto s = r.finish(); !s) return {errc::corrupt, s.message()};
      e.partition = {topic, static_cast<std::int32_t>(partition)};
      e.owner = broker_id(broker);
      map_[e.partition] = e;
    }
    return {};
  }

  std::optional<ownership_entry> entry(const topic_partition& tp) const override {
    std::shared_lock lock(mu_);
    auto it = map_.find(tp);
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }

  status record(const ownership_entry& e, std::optional<ownership_point> expect) override {
    if (e.owner.value().empty()) return {errc::invalid_argument, "owner broker id must not be empty"};
    std::unique_lock lock(mu_);
    auto it = map_.find(e.partition);
    std::optional<ownership_entry> current;
    if (it != map_.end()) current = it->second;
    switch (judge_record(current, e, expect)) {
      case record_verdict::already: return {};
      case record_verdict::refuse: return ownership_refusal(e, current);
      case record_verdict::apply: break;
    }
    auto next = map_;
    next[e.partition] = e;
    if (auto f = MOONMQ_FAULT("ownership.before_write"); !f) return f;
    if (auto s = file_->replace(render(next)); !s) return s;
    map_ = std::move(next);
    if (auto f = MOONMQ_FAULT("ownership.after_write"); !f) return f;  // written, reported as failed
    return {};
  }

  status record_all(const std::vector<ownership_entry>& changes) override {
    for (const auto& c : changes)
      if (c.owner.value().empty()) return {errc::invalid_argument, "owner broker id must not be empty"};
    std::unique_lock lock(mu_);
    auto next = map_;
    for (const auto& c : changes) {
      auto it = next.find(c.partition);
      std::optional<ownership_entry> current;
      if (it != next.end()) current = it->second;
      if (judge_record(current, c, std::nullopt) == record_verdict::apply) next[c.partition] = c;
    }
    if (next == map_) return {};
    if (auto f = MOONMQ_FAULT("ownership.before_write"); !f) return f;
    if (auto s = file_->replace(render(next)); !s) return s;
    map_ = std::move(next);
    if (auto f = MOONMQ_FAULT("ownership.after_write"); !f) return f;  // written, reported as failed
    return {};
  }

  status forget_topic(const std::string& topic) override {
    std::unique_lock lock(mu_);
    auto next = map_;
    std::erase_if(next, [&](const auto& kv) { return kv.first.topic == topic; });
    if (next == map_) return {};
    if (auto s = file_->replace(render(next)); !s) return s;
    map_ = std::move(next);
    return {};
  }

  std::vector<ownership_entry> entries() const override {
    std::shared_lock lock(mu_);
    std::vector<ownership_entry> out;
    for (const auto& [tp, e] : map_) out.push_back(e);
    return out;
  }

 private:
  static std::string render(const std::map<topic_partition, ownership_entry>& m) {
    return json::object([&](json::writer& w) {
             json::put(w, "version", 2);
             w.Key("assignments");
             w.StartArray();
             for (const auto& [tp, e] : m) {
               w.StartObject();
               json::put(w, "topic", tp.topic);
               json::put(w, "partition", tp.partition);
               json::put(w, "broker", e.owner.value());
               json::put(w, "version", e.version);
               if (e.handover) json::put(w, "handover", true);
               w.EndObject();
             }
             w.EndArray();
           }) +
           "\n";
  }

  broker_id self_;
  std::unique_ptr<storage::state_file> file_;
  mutable std::shared_mutex mu_;
  std::map<topic_partition, ownership_entry> map_;
};

}  // namespace

result<std::unique_ptr<ownership_table>> open_local_ownership_table(broker_id self,
                                                                    std::unique_ptr<storage::state_file> file) {
  if (self.value().empty()) return error{errc::invalid_argument, "broker id must not be empty"};
  auto t = std::make_unique<local_ownership_table>(std::move(self), std::move(file));
  if (auto s = t->load(); !s) return s.err();
  return std::unique_ptr<ownership_table>(std::move(t));
}

}  // namespace moonmq::cluster
