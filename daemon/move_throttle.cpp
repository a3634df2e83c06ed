#include "move_throttle.hpp"

#include <rapidjson/document.h>

#include "json/parse.hpp"

namespace moonmq::daemon {

result<std::unique_ptr<move_throttle>> move_throttle::open(std::unique_ptr<storage::state_file> file,
                                                           cluster::reassigner& moves, logger& log) {
  std::unique_ptr<move_throttle> t(new move_throttle(std::move(file), moves));
  auto kept = t->file_->read();
  if (!kept) return kept.err();
  if (!*kept) return t;
  rapidjson::Document d;
  if (!json::parse_object(**kept, d) || !d.HasMember("bytes_per_sec") || !d["bytes_per_sec"].IsUint64())
    return error{errc::corrupt, t->file_->name() + ": expected {\"bytes_per_sec\": N}"};
  const std::uint64_t rate = d["bytes_per_sec"].GetUint64();
  moves.set_throttle(rate);
  log.info("moonmqd", "copy throttle " + std::to_string(rate) + " bytes/s, as last set through the API (" +
                          t->file_->name() + ")");
  return t;
}

status move_throttle::set(std::uint64_t rate) {
  std::lock_guard lock(mu_);
  if (auto s = file_->replace("{\"bytes_per_sec\":" + std::to_string(rate) + "}"); !s) return s;
  moves_.set_throttle(rate);
  return {};
}

}  // namespace moonmq::daemon
