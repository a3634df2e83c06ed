#include "moonmq/storage/durable_offset_store.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "json/state_document.hpp"

namespace moonmq::storage {

namespace {

class durable_offset_store final : public offset_store {
 public:
  explicit durable_offset_store(std::unique_ptr<state_file> f) : file_(std::move(f)) {}

  status load() {
    rapidjson::Document d;
    auto present = json::read_state_document(*file_, d);
    if (!present) return present.to_status();
    if (!*present) return {};
    json::object_reader top(d, file_->name());
    std::uint32_t version = 0;
    top.get("version", version, true);
    const auto* list = top.member("offsets");
    if (top.ok() && version != 1) top.fail("version", "unsupported version " + std::to_string(version));
    if (top.ok() && (!list || !list->IsArray())) top.fail("offsets", "expected an array");
    if (auto s = top.finish(); !s) return {errc::corrupt, s.message()};
    for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
      json::object_reader r((*list)[i], file_->name() + ": offsets[" + std::to_string(i) + "]");
      std::string group, topic;
      std::int64_t partition = 0, offset = 0;
      r.get("group", group, true);
      r.get("topic", topic, true);
      r.get("partition", partition, true);
      r.get("offset", offset, true);
      if (r.ok() && (partition < 0 || offset < 0)) r.fail_here("negative partition or offset");
      if (auto s = r.finish(); !s) return {errc::corrupt, s.message()};
      table_.set(group, {topic, static_cast<std::int32_t>(partition)}, static_cast<std::uint64_t>(offset));
    }
    return {};
  }

  std::optional<std::uint64_t> committed(const std::string& group, const topic_partition& tp) const override {
    std::lock_guard lock(mu_);
    return table_.get(group, tp);
  }

  status commit(const std::string& group, const topic_partition& tp, std::uint64_t offset) override {
    if (group.empty()) return {errc::invalid_argument, "group id must not be empty"};
    std::lock_guard lock(mu_);
    return persist_with(group, tp, offset);
  }

  result<bool> commit_if_higher(const std::string& group, const topic_partition& tp, std::uint64_t offset) override {
    if (group.empty()) return error{errc::invalid_argument, "group id must not be empty"};
    std::lock_guard lock(mu_);
    if (!table_.would_raise(group, tp, offset)) return false;
    if (auto s = persist_with(group, tp, offset); !s) return s.err();
    return true;
  }

  std::vector<group_offset> groups_for(const topic_partition& tp) const override {
    std::lock_guard lock(mu_);
    return table_.groups_for(tp);
  }

 private:
  /// Writes the table with one change; the change is kept in memory only if the write succeeded.
  /// REQUIRES: mu_ held.
  status persist_with(const std::string& group, const topic_partition& tp, std::uint64_t offset) {
    offset_table next = table_;
    next.set(group, tp, offset);
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    w.StartObject();
    w.Key("version");
    w.Uint(1);
    w.Key("offsets");
    w.StartArray();
    for (const auto& [k, v] : next.entries()) {
      w.StartObject();
      w.Key("group");
      w.String(std::get<0>(k).c_str(), static_cast<rapidjson::SizeType>(std::get<0>(k).size()));
      w.Key("topic");
      w.String(std::get<1>(k).c_str(), static_cast<rapidjson::SizeType>(std::get<1>(k).size()));
      w.Key("partition");
      w.Int(std::get<2>(k));
      w.Key("offset");
      w.Uint64(v);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    if (auto s = file_->replace(std::string_view(buf.GetString(), buf.GetSize())); !s) return s;
    table_ = std::move(next);
    return {};
  }

  std::unique_ptr<state_file> file_;
  mutable std::mutex mu_;
  offset_table table_;
};

}  // namespace

result<std::unique_ptr<offset_store>> open_durable_offset_store(std::unique_ptr<state_file> file) {
  auto store = std::make_unique<durable_offset_store>(std::move(file));
  if (auto s = store->load(); !s) return s.err();
  return std::unique_ptr<offset_store>(std::move(store));
}

}  // namespace moonmq::storage
