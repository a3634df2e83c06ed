#include "moonmq/cluster/local_ownership_table.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <map>
#include <shared_mutex>

#include "json/state_document.hpp"

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
    if (top.ok() && version != 1) top.fail("version", "unsupported version " + std::to_string(version));
    if (top.ok() && (!list || !list->IsArray())) top.fail("assignments", "expected an array");
    if (auto s = top.finish(); !s) return {errc::corrupt, s.message()};
    for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
      json::object_reader r((*list)[i], file_->name() + ": assignments[" + std::to_string(i) + "]");
      std::string topic, broker;
      std::int64_t partition = 0;
      r.get("topic", topic, true);
      r.get("partition", partition, true);
      r.get("broker", broker, true);
      if (r.ok() && (topic.empty() || broker.empty() || partition < 0 || partition > INT32_MAX))
        r.fail_here("empty topic or broker, or partition out of range");
      if (auto s = r.finish(); !s) return {errc::corrupt, s.message()};
      map_[{topic, static_cast<std::int32_t>(partition)}] = broker_id(broker);
    }
    return {};
  }

  std::optional<broker_id> owner(const topic_partition& tp) const override {
    std::shared_lock lock(mu_);
    auto it = map_.find(tp);
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }

  status set_owner(const topic_partition& tp, const broker_id& owner) override { return set_owners({{tp, owner}}); }

  status set_owners(const std::vector<ownership_entry>& changes) override {
    for (const auto& c : changes)
      if (c.owner.value().empty()) return {errc::invalid_argument, "owner broker id must not be empty"};
    std::unique_lock lock(mu_);
    auto next = map_;
    for (const auto& c : changes) {
      if (c.owner == self_)
        next.erase(c.partition);
      else
        next[c.partition] = c.owner;
    }
    if (next == map_) return {};
    if (auto s = file_->replace(render(next)); !s) return s;
    map_ = std::move(next);
    return {};
  }

  std::vector<ownership_entry> entries() const override {
    std::shared_lock lock(mu_);
    std::vector<ownership_entry> out;
    for (const auto& [tp, b] : map_) out.push_back({tp, b});
    return out;
  }

 private:
  static std::string render(const std::map<topic_partition, broker_id>& m) {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    w.StartObject();
    w.Key("version");
    w.Uint(1);
    w.Key("assignments");
    w.StartArray();
    for (const auto& [tp, b] : m) {
      w.StartObject();
      w.Key("topic");
      w.String(tp.topic.c_str(), static_cast<rapidjson::SizeType>(tp.topic.size()));
      w.Key("partition");
      w.Int(tp.partition);
      w.Key("broker");
      w.String(b.value().c_str(), static_cast<rapidjson::SizeType>(b.value().size()));
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    return std::string(buf.GetString(), buf.GetSize()) + "\n";
  }

  broker_id self_;
  std::unique_ptr<storage::state_file> file_;
  mutable std::shared_mutex mu_;
  std::map<topic_partition, broker_id> map_;
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
