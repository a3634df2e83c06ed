#include "coordinators.hpp"

#include <filesystem>

#include <asio/post.hpp>

#include "moonmq/core/clock.hpp"
#include "moonmq/storage/file_keyed_log.hpp"
#include "moonmq/storage/file_state_file.hpp"
#include "moonmq/frontend/transactions.hpp"

namespace moonmq::daemon {

result<std::unique_ptr<coordinators>> coordinators::open(coordinators_parts parts) {
  std::unique_ptr<coordinators> c(new coordinators(std::move(parts)));
  if (auto s = c->open_groups(); !s) return s.err();
  if (auto s = c->open_transactions(); !s) return s.err();
  return c;
}

status coordinators::open_groups() {
  const auto& cfg = *p_.config;
  // Who owns what comes from the placement directory (every broker's own report of the partitions it serves),
  // refreshed by the ticker outside the coordinator's lock; without Raft no single table knows every move.
  frontend::placement_directory_options where{p_.self, p_.brokers, p_.local_loads,
                                              [rt = p_.rt] { return rt->steady_ms(); }, 5000,
                                              cfg.groups.session_timeout_ms, 1000};
  where.ruled_out = [topics = p_.topics](const std::string& topic, std::optional<std::int32_t> partition) {
    return topics->rules_out(topic, partition);
  };
  directory_ = std::make_unique<frontend::placement_directory>(std::move(where), *p_.peers);
  auto placements = [d = directory_.get()](const std::set<std::string>& topics)
      -> std::optional<std::vector<groups::placement>> {
    auto known = d->placements(topics);
    if (!known) return std::nullopt;
    std::vector<groups::placement> out;
    for (auto& [tp, owner] : *known) out.push_back({std::move(tp), std::move(owner)});
    return out;
  };
  auto group_log = storage::open_file_keyed_log(cfg.data_dir + "/group-state.log", p_.log);
  if (!group_log) return group_log.err();
  group_log_ = std::move(*group_log);
  // An older version kept every group in one document, rewritten whole at each change; its groups are carried into
  // the log once, and the document renamed.
  const std::string legacy_path = cfg.data_dir + "/group-state.json";
  auto legacy = storage::make_file_state_file(legacy_path);
  const bool had_legacy = std::filesystem::exists(legacy_path);
  auto svc = groups::group_service::open(
      {p_.self, {cfg.groups.session_timeout_ms, cfg.groups.heartbeat_interval_ms}}, *group_log_, placements,
      p_.rt->steady_ms(), *p_.log, *p_.metrics, had_legacy ? legacy.get() : nullptr);
  if (!svc) return svc.err();
  groups_ = std::move(*svc);
  if (had_legacy) {
    std::error_code ec;
    std::filesystem::rename(legacy_path, legacy_path + ".migrated", ec);
    if (ec) return {errc::io_error, "cannot rename " + legacy_path + ": " + ec.message()};
    p_.log->info("groups", "carried the groups of " + legacy_path + " into " + group_log_->name() +
                               " (the old file is now " + legacy_path + ".migrated)");
  }
  group_routes_ = std::make_unique<groups::group_routes>(*groups_, *p_.peers, p_.brokers, [rt = p_.rt] { return rt->steady_ms(); });
  return {};
}

status coordinators::open_transactions() {
  const auto& cfg = *p_.config;
  auto txn_log = storage::open_file_keyed_log(cfg.data_dir + "/txn-state.log", p_.log);
  if (!txn_log) return txn_log.err();
  txn_log_ = std::move(*txn_log);
  auto svc = txn::txn_service::open(
      {p_.brokers, cfg.transactions.timeout_ms, [rt = p_.rt] { return rt->wall_ms(); }, frontend::fresh_producer_id, cfg.storage.fsync == "always",
       [pool = p_.blocking](std::function<void()> job) { asio::post(pool, std::move(job)); }},
      *txn_log_, p_.state, *p_.peers);
  if (!svc) return svc.err();
  txns_ = std::move(*svc);
  return {};
}

void coordinators::start() {
  jobs_ = frontend::schedule_coordinators(*p_.rt, *groups_, *group_routes_, *txns_, directory_.get());
}

void coordinators::stop() {
  jobs_.stop();
}

}  // namespace moonmq::daemon
