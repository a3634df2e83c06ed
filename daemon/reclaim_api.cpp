#include "reclaim_api.hpp"

#include <algorithm>
#include <set>

#include "api_reply.hpp"
#include "cluster/wire_json.hpp"
#include "cluster/wire_owner.hpp"

namespace moonmq::daemon {

namespace {
using json::put;
using json_writer = json::writer;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

reclaim_api::reclaim_api(double after_seconds, cluster_view& view, cluster::cluster_state state,
                         cluster::move_journal& journal, cluster::reassigner& reassigner)
    : after_(after_seconds),
      view_(view),
      st_(state),
      journal_(journal),
      reassigner_(reassigner),
      tracker_(after_seconds) {
  // Watched a few times per delay (at most every 10 s), so that a copy goes soon after it is due; with no delay
  // (keep until an operator reclaims), every 10 s just to keep the idle times.
  const double every = after_seconds > 0 ? std::clamp(after_seconds / 4, 0.5, 10.0) : 10.0;
  const auto tick = std::chrono::milliseconds(static_cast<long>(every * 1000));
  ticker_ = std::make_unique<ticker>(tick, [this] { (void)reclaim(true); });
}

reclaim_api::~reclaim_api() { ticker_->stop(); }

std::vector<cluster::reclaim_candidate> reclaim_api::observe(bool ask_peers) {
  const broker_id& self = view_.self();
  std::set<topic_partition> journaled;  // told apart from other moves only for the reason an operator reads
  for (const auto& m : journal_.pending()) journaled.insert(m.partition);
  std::vector<cluster::local_copy> copies;
  for (const auto& tp : st_.store.list_partitions()) {
    auto size = st_.store.size_bytes(tp);
    if (!size || *size == 0) continue;
    const bool stray = st_.ownership.withheld(tp);
    const bool served = !stray && entry_as_seen_by(st_.ownership, tp, self).owner == self;
    copies.push_back(
        {tp, *size, served, journaled.count(tp) > 0, reassigner_.busy(tp) /* the discard's own test */, stray});
  }
  const bool any_unserved = std::any_of(copies.begin(), copies.end(), [](const auto& c) { return !c.served_here; });
  if (ask_peers && any_unserved) {
    // Moves towards this broker, from their sources; a peer that does not answer might be sending one, so its
    // partitions count as moving.
    for (const auto& a : view_.ask_peers(transport::get_request("/cluster/moves"))) {
      auto moves = a.response.ok() ? cluster::wire::read_moves(a.response.body) : std::nullopt;
      for (auto& c : copies) {
        if (!moves) {
          c.moving = true;
          continue;
        }
        for (const auto& m : *moves)
          if (!m.finished && m.dest == self.value() && m.partition == c.partition) c.moving = true;
      }
    }
  }
  return tracker_.observe(copies, now_seconds());
}

status reclaim_api::owner_confirms(const topic_partition& tp) {
  // The copy goes only if the broker this one believes serves the partition says, now, that it does and that no move
  // of it runs or is journaled there (a move towards this broker whose confirm is pending leaves it in handover).
  // Asked under the partition's gate: no copy can land here until the answer is acted on.
  const std::string owner = entry_as_seen_by(st_.ownership, tp, view_.self()).owner.value();
  const std::string name = tp.topic + "-" + std::to_string(tp.partition);
  if (!view_.is_peer(owner)) return {errc::conflict, name + ": its owner '" + owner + "' is not a configured peer"};
  transport::request ask = transport::get_request("/cluster/owner");
  ask.params = {{"topic", tp.topic}, {"partition", std::to_string(tp.partition)}};
  auto report = cluster::wire::read_owner_report(view_.ask(owner, ask), tp);
  if (!report) return {errc::unavailable, name + ": " + owner + " did not confirm it serves it (" + report.message() + ")"};
  const bool handover = report->entry && report->entry->handover;
  if (!report->serves || handover || report->moving)
    return {errc::conflict, name + ": " + owner + (report->serves ? " has a move of it under way" : " does not serve it now")};
  return {};
}

std::string reclaim_api::reclaim(bool due_only) {
  std::lock_guard lock(mu_);
  auto candidates = observe(true);
  std::vector<std::pair<cluster::reclaim_candidate, std::string>> done;  // copy, error ("" = reclaimed)
  for (const auto& c : candidates) {
    if (!(due_only ? c.due : c.eligible_now)) continue;
    auto s = cluster::discard_unserved_copy(
        st_, view_.self(), c.partition, [this](const topic_partition& tp) { return reassigner_.busy(tp); },
        [&] { return owner_confirms(c.partition); });
    if (s) tracker_.forget(c.partition);
    done.emplace_back(c, s ? "" : s.message());
    const std::string name = c.partition.topic + "-" + std::to_string(c.partition.partition);
    if (s)
      st_.log.info("reclaim", "reclaimed " + std::to_string(c.size_bytes) + " bytes of " + name + ", not served here" +
                                  (due_only ? ", idle for " + std::to_string(static_cast<long>(c.idle_seconds)) + " s"
                                            : " (asked by an operator)"));
    else
      st_.log.warn("reclaim", "could not reclaim " + name + ": " + s.message());
  }
  return json::object([&](json_writer& w) {
    put(w, "broker", view_.self().value());
    std::uint64_t bytes = 0;
    w.Key("reclaimed");
    w.StartArray();
    for (const auto& [c, err] : done) {
      if (!err.empty()) continue;
      bytes += c.size_bytes;
      w.StartObject();
      put(w, "topic", c.partition.topic);
      put(w, "partition", c.partition.partition);
      put(w, "size_bytes", c.size_bytes);
      w.EndObject();
    }
    w.EndArray();
    put(w, "bytes", bytes);
    w.Key("failed");
    w.StartArray();
    for (const auto& [c, err] : done) {
      if (err.empty()) continue;
      w.StartObject();
      put(w, "topic", c.partition.topic);
      put(w, "partition", c.partition.partition);
      put(w, "error", err);
      w.EndObject();
    }
    w.EndArray();
  });
}

std::string reclaim_api::list_document() {
  std::vector<cluster::reclaim_candidate> candidates;
  {
    std::lock_guard lock(mu_);
    candidates = observe(true);
  }
  return json::object([&](json_writer& w) {
    put(w, "broker", view_.self().value());
    put(w, "reclaim_after_seconds", after_);
    std::uint64_t bytes = 0;
    w.Key("copies");
    w.StartArray();
    for (const auto& c : candidates) {
      bytes += c.size_bytes;
      w.StartObject();
      put(w, "topic", c.partition.topic);
      put(w, "partition", c.partition.partition);
      put(w, "size_bytes", c.size_bytes);
      put(w, "idle_seconds", c.idle_seconds);
      put(w, "eligible", c.eligible_now);
      if (!c.held_by.empty()) put(w, "held_by", c.held_by);
      if (c.eligible_now && after_ > 0) put(w, "reclaimed_in_seconds", std::max(0.0, after_ - c.idle_seconds));
      w.EndObject();
    }
    w.EndArray();
    put(w, "bytes", bytes);
  });
}

void reclaim_api::routes(api_routes& api) {
  auto forward = [this](const std::string& id, const char* method, httplib::Response& res) {
    if (!view_.is_peer(id)) return reply_error(res, 404, "not_found", "unknown broker '" + id + "'");
    transport::request r;
    r.method = method;
    r.path = "/cluster/admin/reclaim";
    auto a = view_.ask(id, r);
    if (a.status == 0) return reply_peer_error(res, 503, "unavailable", id + " did not answer", id, a);
    relay(res, a);
  };
  api.Get(R"(/v1/brokers/([^/]+)/reclaim)", [this, forward](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] == view_.self().value()) return reply(res, 200, list_document());
    forward(req.matches[1], "GET", res);
  });
  api.Post(R"(/v1/brokers/([^/]+)/reclaim)", [this, forward](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] == view_.self().value()) return reply(res, 200, reclaim(false));
    forward(req.matches[1], "POST", res);
  });
}

transport::response reclaim_api::handle_cluster(const transport::request& req) {
  if (req.method == "GET") return {200, list_document(), "application/json"};
  return {200, reclaim(false), "application/json"};
}

}  // namespace moonmq::daemon
