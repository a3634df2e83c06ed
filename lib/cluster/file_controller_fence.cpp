#include "moonmq/cluster/file_controller_fence.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <mutex>

#include "json/state_document.hpp"
#include "moonmq/core/fault_points.hpp"

namespace moonmq::cluster {

namespace {

class file_controller_fence final : public controller_fence {
 public:
  file_controller_fence(broker_id self, std::unique_ptr<storage::state_file> f)
      : self_(std::move(self)), file_(std::move(f)) {}

  status load() {
    rapidjson::Document d;
    auto present = json::read_state_document(*file_, d);
    if (!present) return present.to_status();
    if (!*present) return {};
    json::object_reader r(d, file_->name());
    std::int64_t e = 0;
    std::string id;
    r.get("epoch", e, true);
    r.get("controller", id, true);
    if (r.ok() && e < 0) r.fail("epoch", "must not be negative");
    if (auto s = r.finish(); !s) return {errc::corrupt, s.message()};
    highest_ = {epoch(static_cast<std::uint64_t>(e)), broker_id(id)};
    return {};
  }

  result<epoch> claim() override {
    std::lock_guard lock(mu_);
    if (highest_.claim_epoch.value() >= max_controller_epoch)
      return error{errc::unavailable, "controller epochs are exhausted at " + std::to_string(max_controller_epoch) +
                                          " (" + file_->name() + "); an epoch never wraps"};
    controller_claim next{epoch(highest_.claim_epoch.value() + 1), self_};
    if (auto s = persist(next); !s) return s.err();
    own_ = next;
    return next.claim_epoch;
  }

  result<bool> observe(const controller_claim& c) override {
    if (c.claim_epoch.value() > max_controller_epoch) return false;
    std::lock_guard lock(mu_);
    if (!(c > highest_)) return false;
    if (auto s = persist(c); !s) return s.err();
    return true;
  }

  status check(const controller_claim& c) override {
    if (c.claim_epoch.value() > max_controller_epoch)
      return {errc::invalid_argument, "controller epoch " + std::to_string(c.claim_epoch.value()) + " of " +
                                          c.controller.value() + " is above the highest there may be (" +
                                          std::to_string(max_controller_epoch) + ")"};
    std::lock_guard lock(mu_);
    if (c < highest_ && c.claim_epoch == highest_.claim_epoch)  // claims of one epoch: the higher id wins
      return {errc::conflict, "controller epoch " + std::to_string(c.claim_epoch.value()) + " of " +
                                  c.controller.value() + " loses to " + highest_.controller.value() +
                                  "'s claim of the same epoch (the higher broker id wins a tie)"};
    if (c < highest_)
      return {errc::conflict, "controller epoch " + std::to_string(c.claim_epoch.value()) + " of " +
                                  c.controller.value() + " is older than epoch " +
                                  std::to_string(highest_.claim_epoch.value()) + " of " + highest_.controller.value()};
    if (c > highest_) return persist(c);
    return {};
  }

  controller_claim highest() const override {
    std::lock_guard lock(mu_);
    return highest_;
  }

  std::optional<controller_claim> own_claim() const override {
    std::lock_guard lock(mu_);
    return own_;
  }

 private:
  /// REQUIRES: mu_ held. Makes `c` the highest claim once it is durable.
  status persist(const controller_claim& c) {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    w.StartObject();
    w.Key("epoch");
    w.Uint64(c.claim_epoch.value());
    w.Key("controller");
    w.String(c.controller.value().c_str(), static_cast<rapidjson::SizeType>(c.controller.value().size()));
    w.EndObject();
    if (auto f = MOONMQ_FAULT("fence.before_write"); !f) return f;
    if (auto s = file_->replace(std::string_view(buf.GetString(), buf.GetSize())); !s) return s;
    highest_ = c;
    return MOONMQ_FAULT("fence.after_write");
  }

  broker_id self_;
  std::unique_ptr<storage::state_file> file_;
  mutable std::mutex mu_;
  controller_claim highest_{epoch(0), broker_id("")};
  std::optional<controller_claim> own_;
};

}  // namespace

result<std::unique_ptr<controller_fence>> open_file_controller_fence(broker_id self,
                                                                     std::unique_ptr<storage::state_file> file) {
  if (self.value().empty()) return error{errc::invalid_argument, "broker id must not be empty"};
  auto f = std::make_unique<file_controller_fence>(std::move(self), std::move(file));
  if (auto s = f->load(); !s) return s.err();
  return std::unique_ptr<controller_fence>(std::move(f));
}

}  // namespace moonmq::cluster
