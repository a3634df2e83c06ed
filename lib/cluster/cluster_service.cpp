#include "moonmq/cluster/cluster_service.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <charconv>
#include <shared_mutex>

#include "json/object_reader.hpp"
#include "json/writer.hpp"
#include "moonmq/cluster/cluster_metrics.hpp"
#include "moonmq/cluster/local_loads.hpp"
#include "moonmq/core/token.hpp"
#include "topic_json.hpp"
#include "wire_json.hpp"
#include "wire_owner.hpp"
#include "moonmq/core/topic_name.hpp"

namespace moonmq::cluster {

using transport::error_response;
using transport::request;
using transport::response;

namespace {

using json_writer = json::writer;
using json::put;

template <typename F>
response json_ok(F&& fill) {
  return {200, json::object(std::forward<F>(fill)), "application/json"};
}

response from_error(const error& e) {
  return error_response(transport::http_status_of(e.code), errc_name(e.code), e.message);
}

/// topic and partition from the query string; the error names the parameter.
result<topic_partition> partition_param(const request& req) {
  auto t = req.params.find("topic");
  auto p = req.params.find("partition");
  if (t == req.params.end()) return error{errc::invalid_argument, "query parameter 'topic' is required"};
  if (p == req.params.end()) return error{errc::invalid_argument, "query parameter 'partition' is required"};
  if (auto s = validate_topic_name(t->second); !s) return error{s.code(), "topic: " + s.message()};
  std::int32_t n = -1;
  auto [ptr, ec] = std::from_chars(p->second.data(), p->second.data() + p->second.size(), n);
  if (ec != std::errc() || ptr != p->second.data() + p->second.size() || n < 0)
    return error{errc::invalid_argument, "partition: expected a whole number >= 0, got '" + p->second + "'"};
  return topic_partition{t->second, n};
}

result<std::uint64_t> u64_param(const request& req, const char* name) {
  auto it = req.params.find(name);
  if (it == req.params.end())
    return error{errc::invalid_argument, std::string("query parameter '") + name + "' is required"};
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || ptr != it->second.data() + it->second.size())
    return error{errc::invalid_argument, std::string(name) + ": expected a whole number, got '" + it->second + "'"};
  return v;
}

}  // namespace

struct cluster_service::impl {
  cluster_service_options opt;
  cluster_state st;

  bool authenticated(const request& req) const {
    const auto from = req.headers.find(transport::header_from);
    const bool has_from = from != req.headers.end() && !from->second.empty();
    if (!opt.peers.empty() &&
        (!has_from || std::find(opt.peers.begin(), opt.peers.end(), from->second) == opt.peers.end()))
      return false;  // no sender, or not a broker of this cluster
    if (opt.require_certificate_identity &&
        (!has_from || std::find(req.peer_names.begin(), req.peer_names.end(), from->second) == req.peer_names.end()))
      return false;  // the certificate does not name the broker the request claims to come from
    std::string expected = opt.token;
    if (has_from) {
      auto own = opt.peer_tokens.find(from->second);
      if (own != opt.peer_tokens.end() && !own->second.empty()) expected = own->second;
    }
    if (expected.empty()) {
      // No token for this sender: open only if no token is configured at all (a loopback-only cluster). With
      // per-peer tokens alone, a request must say which peer it is.
      for (const auto& [peer, token] : opt.peer_tokens)
        if (!token.empty()) return false;
      return true;
    }
    auto got = req.headers.find(transport::header_token);
    return got != req.headers.end() && constant_time_equal(expected, got->second);
  }

  /// 409 for a superseded controller's request, counted.
  response stale(const status& s) {
    st.metrics.add(metrics::fence_rejections, {}, 1);
    st.log.warn("cluster", "refused a superseded controller: " + s.message());
    return error_response(409, "stale_epoch", s.message());
  }

  /// For control-plane routes: admits the request through the fence when it carries a controller claim.
  std::optional<response> fenced(const request& req, std::optional<controller_claim>* admitted = nullptr) {
    auto e = req.headers.find(transport::header_epoch);
    auto c = req.headers.find(transport::header_controller);
    if (e == req.headers.end() && c == req.headers.end()) return std::nullopt;  // hand-driven: bypasses the fence
    if (e == req.headers.end() || c == req.headers.end() || c->second.empty())
      return error_response(400, "invalid_argument", "X-Controller-Epoch and X-Controller-Id go together");
    std::uint64_t n = 0;
    auto [ptr, ec] = std::from_chars(e->second.data(), e->second.data() + e->second.size(), n);
    if (ec != std::errc() || ptr != e->second.data() + e->second.size())
      return error_response(400, "invalid_argument", "X-Controller-Epoch: expected a whole number");
    if (auto s = st.fence.check({epoch(n), broker_id(c->second)}); !s) {
      if (s.code() == errc::conflict) return stale(s);
      return from_error(s.err());
    }
    if (admitted) *admitted = controller_claim{epoch(n), broker_id(c->second)};
    return std::nullopt;
  }

  response handle(const request& req) {
    if (req.body.size() > opt.max_body_bytes)
      return error_response(413, "too_large",
                            "request body of " + std::to_string(req.body.size()) + " bytes exceeds " +
                                std::to_string(opt.max_body_bytes));
    if (!authenticated(req)) return error_response(401, "unauthorized", "missing or wrong X-Cluster-Token");
    const std::string& p = req.path;
    const bool post = req.method == "POST", get = req.method == "GET";
    if (post && p == "/cluster/ensure") {
      if (auto f = fenced(req)) return *f;
      return ensure(req);
    }
    if (post && p == "/cluster/append") return append(req);
    if (post && p == "/cluster/owner") {
      if (auto f = fenced(req)) return *f;
      return set_owner(req);
    }
    if (get && p == "/cluster/owner") return get_owner(req);
    if (post && p == "/cluster/offsets") {
      if (auto f = fenced(req)) return *f;
      return push_offsets(req);
    }
    if (get && p == "/cluster/partition") return partition_state(req);
    if (get && p == "/cluster/loads") return loads();
    if (post && p == "/cluster/reassign") {
      std::optional<controller_claim> claim;
      if (auto f = fenced(req, &claim)) return *f;
      return reassign(req, claim);
    }
    if (get && p == "/cluster/moves") return moves();
    if (post && p == "/cluster/moves/cancel") return cancel_move(req);
    if (post && p == "/cluster/throttle") return set_throttle(req);
    if (post && p == "/cluster/discard") return discard(req);
    if (post && p == "/cluster/controller/claim") return claim(req);
    if (p.starts_with("/cluster/raft/") && opt.raft) return opt.raft(req);
    if (p.starts_with("/cluster/group/") && opt.groups) return opt.groups(req);
    if (p.starts_with("/cluster/txn/") && opt.transactions) return opt.transactions(req);
    if (p.starts_with("/cluster/admin/") && opt.admin) return opt.admin(req);
    for (const char* later : {"/cluster/group/", "/cluster/txn/", "/cluster/raft/"})
      if (p.starts_with(later)) return error_response(501, "not_implemented", p + " is not available yet");
    return error_response(404, "not_found", req.method + " " + p + " is not a cluster route");
  }

  response ensure(const request& req) {
    rapidjson::Document d;
    if (auto s = json::parse_document(req.body, d, "body"); !s) return from_error(s.err());
    json::object_reader r(d, "");
    std::string topic;
    std::uint32_t partitions = 0;
    r.get("topic", topic, true);
    r.get("partitions", partitions, true);
    std::optional<topic_record> theirs;  // the source's record, when its catalog lists the topic
    if (const rapidjson::Value* rv = r.ok() ? r.member("record") : nullptr) {
      auto rec = wire::read_topic_record(*rv, "record");
      if (!rec) return from_error(rec.err());
      if (rec->name != topic) return error_response(400, "invalid_argument", "record: names another topic");
      theirs = std::move(*rec);
    }
    if (r.ok())
      if (auto valid = validate_topic_name(topic); !valid) r.fail("topic", valid.message());
    if (r.ok() && (partitions < 1 || partitions > static_cast<std::uint32_t>(storage::max_partitions_per_topic_hard)))
      r.fail("partitions", "must be from 1 to " + std::to_string(storage::max_partitions_per_topic_hard));
    if (auto s = r.finish(); !s) return from_error(s.err());
    // A topic the cluster's catalog lists is made as the catalog says (never a partition it does not list, nothing
    // of a deleted topic, each partition its first owner's: the requester is a move's source, not where it began).
    if (opt.ensure_listed)
      if (auto listed = opt.ensure_listed(topic, static_cast<std::int32_t>(partitions), theirs)) {
        if (!*listed) return from_error(listed->err());
        return json_ok([&](json_writer& w) {
          put(w, "topic", topic);
          w.Key("partitions");
          w.Int(**listed);
        });
      }
    // Otherwise partitions created here on a peer's behalf are that peer's: this broker does not start serving (and
    // taking produces for) empty namesakes of partitions that live on the peer. They are recorded as the peer's
    // *before* they exist, with topic changes held off meanwhile, so no produce can ever land in one of them here. A
    // move of one of them supersedes the entry at its confirm, as for any move.
    std::lock_guard topics(st.gates.topics());
    auto had = st.store.partition_count(topic);
    const std::int32_t before = had ? *had : 0;
    auto from = req.headers.find(transport::header_from);
    if (from != req.headers.end() && !from->second.empty() && from->second != opt.self.value()) {
      std::vector<ownership_entry> peers_partitions;
      for (std::int32_t p = before; p < static_cast<std::int32_t>(partitions); ++p)
        if (!st.ownership.entry({topic, p})) peers_partitions.push_back({{topic, p}, broker_id(from->second), 0, false});
      if (auto s = st.ownership.record_all(peers_partitions); !s) return from_error(s.err());
    }
    auto n = st.store.ensure_topic(topic, static_cast<std::int32_t>(partitions));
    if (!n) return from_error(n.err());
    return json_ok([&](json_writer& w) {
      put(w, "topic", topic);
      w.Key("partitions");
      w.Int(*n);
    });
  }

  response append(const request& req) {
    auto tp = partition_param(req);
    if (!tp) return from_error(tp.err());
    auto mode = req.params.find("mode");
    if (mode != req.params.end() && mode->second == "produce") return forwarded_produce(*tp, req.body);
    if (mode != req.params.end() && mode->second != "migrate")
      return error_response(400, "invalid_argument", "mode: expected \"produce\" or \"migrate\"");
    auto expected = u64_param(req, "expected_offset");
    if (!expected) return from_error(expected.err());
    std::uint64_t end = 0;
    // Shared, like a produce: a discard of this copy (exclusive) never interleaves with a copy landing.
    std::shared_lock gate(st.gates.gate(*tp));
    auto s = st.store.append_at(*tp, *expected, req.body, &end);
    if (!s) {
      if (s.code() == errc::conflict)
        return {412, "{\"error\":\"offset_mismatch\",\"end_offset\":" + std::to_string(end) + "}", "application/json"};
      return from_error(s.err());
    }
    if (auto sync = req.params.find("sync"); sync != req.params.end() && sync->second == "1")
      if (auto synced = st.store.sync(*tp); !synced) return from_error(synced.err());
    return json_ok([&](json_writer& w) {
      w.Key("end_offset");
      w.Uint64(end);
    });
  }

  response forwarded_produce(const topic_partition& tp, const std::string& frames) {
    auto scan = storage::scan_frames(frames);
    if (scan.end != storage::frame_scan::ending::clean)
      return error_response(400, "invalid_argument", "forwarded batch is not whole valid frames");
    std::vector<storage::record> records;
    for (const auto& v : storage::decode_frames(frames, 0))
      records.push_back(storage::to_record(v));
    std::shared_lock gate(st.gates.gate(tp));
    if (!serves(st.ownership, tp, opt.self)) return not_served(tp);
    auto offsets = st.producers.append(tp, records);
    if (!offsets) return from_error(offsets.err());
    st.counters.count_produce(tp, frames.size());
    return json_ok([&](json_writer& w) {
      put(w, "broker", opt.self.value());
      w.Key("offsets");
      w.StartArray();
      for (auto o : *offsets) w.Uint64(o);
      w.EndArray();
    });
  }

  /// 421 naming the owner this broker knows; 503 `handover` when that is this broker itself but it does not serve
  /// the partition yet (a move's handover, or a broker still catching up): the sender waits and asks again.
  response not_served(const topic_partition& tp) {
    auto e = entry_as_seen_by(st.ownership, tp, opt.self);
    const bool waiting = e.owner == opt.self;
    return {waiting ? 503 : 421, json::object([&](json_writer& w) {
              put(w, "error", waiting ? "handover" : "not_owner");
              put(w, "owner", e.owner.value());
              put(w, "version", e.version);
            }),
            "application/json"};
  }

  /// POST /cluster/owner {"topic","partition","broker","version"[,"expect","expect_handover"]}: records the entry on this broker
  /// (ownership_table::record: with "expect", a compare-and-set). 409 `ownership_conflict` with the entry that stood
  /// in the way as "current" when refused: a late or replayed request for a decided move changes nothing.
  response set_owner(const request& req) {
    auto change = wire::read_owner_change(req.body);
    if (!change) return from_error(change.err());
    const ownership_entry& e = change->entry;
    const std::optional<ownership_point>& expect = change->expect;
    std::unique_lock gate(st.gates.gate(e.partition));
    // Named the owner of a partition whose log is not here (removed with its topic while the move ran): refused, so
    // that no entry outlives the topic and sends a later incarnation's partition to a broker without its log.
    if (e.owner == opt.self && !st.store.end_offset(e.partition))
      return error_response(404, "not_found", "no log of " + name_of(e.partition) + " on " + opt.self.value() +
                                                  " (its topic was deleted): ownership not recorded");
    if (auto s = st.ownership.record(e, expect); !s) {
      if (s.code() != errc::conflict) return from_error(s.err());
      auto current = st.ownership.entry(e.partition);
      st.log.warn("cluster", "refused an ownership change: " + s.message());
      return {409, wire::write_owner_conflict(s.message(), current), "application/json"};
    }
    st.log.info("cluster", "ownership of " + name_of(e.partition) + " recorded as " + e.owner.value() +
                               " at version " + std::to_string(e.version));
    return json_ok([&](json_writer& w) {
      put(w, "owner", e.owner.value());
      put(w, "version", e.version);
    });
  }

  response get_owner(const request& req) {
    auto tp = partition_param(req);
    if (!tp) return from_error(tp.err());
    wire::owner_report r;
    r.entry = st.ownership.entry(*tp);
    r.serves = serves(st.ownership, *tp, opt.self) && st.store.end_offset(*tp).ok();  // no log: nothing served
    r.moving = opt.moves.busy ? opt.moves.busy(*tp) : false;
    return {200, wire::write(r), "application/json"};
  }

  response push_offsets(const request& req) {
    auto push = wire::read_offsets_push(req.body);
    if (!push) return from_error(push.err());
    const topic_partition& tp = push->partition;
    const auto& entries = push->offsets;
    std::size_t raised = 0;
    for (const auto& g : entries) {
      auto changed = st.offsets.commit_if_higher(g.group, tp, g.offset, g.metadata);
      if (!changed) return from_error(changed.err());
      raised += *changed ? 1 : 0;
    }
    return json_ok([&](json_writer& w) {
      w.Key("raised");
      w.Uint64(raised);
    });
  }

  response partition_state(const request& req) {
    auto tp = partition_param(req);
    if (!tp) return from_error(tp.err());
    auto end = st.store.end_offset(*tp);
    if (!end) return from_error(end.err());
    std::optional<std::uint32_t> crc;
    if (req.params.count("upto")) {
      auto upto = u64_param(req, "upto");
      if (!upto) return from_error(upto.err());
      if (*upto > *end) return error_response(400, "invalid_argument", "upto is past the end offset");
      auto c = storage::prefix_crc32c(st.store, *tp, *upto);
      if (!c) return from_error(c.err());
      crc = *c;
    }
    return json_ok([&](json_writer& w) {
      w.Key("end_offset");
      w.Uint64(*end);
      if (crc) {
        w.Key("crc32c");
        w.Uint(*crc);
      }
    });
  }

  response loads() {
    return {200,
            wire::write(wire::load_report{
                opt.self.value(), collect_local_loads(st.store, st.counters, st.ownership, opt.self, &st.producers),
                unserved_bytes(st.store, st.ownership, opt.self), collect_strays(st.store, st.ownership)}),
            "application/json"};
  }

  /// POST /cluster/reassign {"topic","partition","dest"}: the controller asks this broker, the partition's owner, to
  /// move it. 202 with the move's id once started; the move's own control-plane requests carry the same claim.
  response reassign(const request& req, const std::optional<controller_claim>& claim) {
    if (!opt.moves.start) return error_response(501, "not_implemented", "this broker does not run moves");
    auto m = wire::read_move_request(req.body);
    if (!m) return from_error(m.err());
    auto id = opt.moves.start(m->partition, broker_id(m->dest), claim);
    if (!id) return from_error(id.err());
    return {202, wire::move_started_body(*id), "application/json"};
  }

  response moves() {
    if (!opt.moves.progress) return error_response(501, "not_implemented", "this broker does not run moves");
    auto list = opt.moves.progress();
    const std::uint64_t rate = opt.moves.throttle ? opt.moves.throttle() : 0;
    return json_ok([&](json_writer& w) {
      put(w, "broker", opt.self.value());
      put(w, "throttle_bytes_per_sec", rate);
      w.Key("moves");
      w.StartArray();
      for (const auto& m : list) wire::write_move(w, m);
      w.EndArray();
    });
  }

  /// POST /cluster/moves/cancel?id=N: cancels one of this broker's moves (see reassigner::cancel).
  response cancel_move(const request& req) {
    if (!opt.moves.cancel) return error_response(501, "not_implemented", "this broker does not run moves");
    auto it = req.params.find("id");
    std::uint64_t id = 0;
    if (it == req.params.end() ||
        std::from_chars(it->second.data(), it->second.data() + it->second.size(), id).ptr !=
            it->second.data() + it->second.size())
      return error_response(400, "invalid_argument", "id: expected a move id");
    if (auto s = opt.moves.cancel(id); !s) return from_error(s.err());
    return json_ok([&](json_writer& w) {
      w.Key("id");
      w.Uint64(id);
      put(w, "status", "cancelling");
    });
  }

  /// POST /cluster/throttle {"bytes_per_sec"}: this broker's share of the cluster-wide copy throttle.
  response set_throttle(const request& req) {
    if (!opt.moves.set_throttle) return error_response(501, "not_implemented", "this broker does not run moves");
    rapidjson::Document d;
    if (auto s = json::parse_document(req.body, d, "body"); !s) return from_error(s.err());
    json::object_reader r(d, "");
    std::uint64_t rate = 0;
    r.get("bytes_per_sec", rate, true);
    if (auto s = r.finish(); !s) return from_error(s.err());
    if (auto s = opt.moves.set_throttle(rate); !s) return from_error(s.err());
    return json_ok([&](json_writer& w) { put(w, "throttle_bytes_per_sec", rate); });
  }

  /// POST /cluster/discard?topic=&partition=: empties this broker's copy of a partition it neither serves nor is
  /// being handed (a cancelled move's destination). Refused (409) otherwise: that copy may be the only one.
  response discard(const request& req) {
    auto tp = partition_param(req);
    if (!tp) return from_error(tp.err());
    if (auto s = discard_unserved_copy(st, opt.self, *tp, opt.moves.busy); !s) return from_error(s.err());
    return json_ok([&](json_writer& w) { put(w, "discarded", true); });
  }

  response claim(const request& req) {
    rapidjson::Document d;
    if (auto s = json::parse_document(req.body, d, "body"); !s) return from_error(s.err());
    json::object_reader r(d, "");
    std::int64_t e = -1;
    std::string controller;
    r.get("epoch", e, true);
    r.get("controller", controller, true);
    if (r.ok() && (e < 0 || controller.empty())) r.fail_here("needs an epoch >= 0 and a controller id");
    if (auto s = r.finish(); !s) return from_error(s.err());
    if (auto s = st.fence.check({epoch(static_cast<std::uint64_t>(e)), broker_id(controller)}); !s) {
      if (s.code() == errc::conflict) return stale(s);
      return from_error(s.err());
    }
    auto h = st.fence.highest();
    return json_ok([&](json_writer& w) {
      w.Key("epoch");
      w.Uint64(h.claim_epoch.value());
      put(w, "controller", h.controller.value());
    });
  }
};

status discard_unserved_copy(const cluster_state& st, const broker_id& self, const topic_partition& tp,
                             const std::function<bool(const topic_partition&)>& busy,
                             const std::function<status()>& also) {
  std::unique_lock gate(st.gates.gate(tp));
  const std::string name = tp.topic + "-" + std::to_string(tp.partition);
  auto unneeded = [&]() -> status {
    if (!st.ownership.ready()) return {errc::unavailable, self.value() + " is catching up with the ownership log"};
    if (st.ownership.withheld(tp))
      return {errc::conflict, name + " on " + self.value() + " is a stray (a log the topic catalog did not make here): "
                                  "kept until an operator reconciles it, never discarded"};
    auto e = entry_as_seen_by(st.ownership, tp, self);
    if (e.owner == self)
      return {errc::conflict, name + " is " + (e.handover ? "being handed over to " : "served by ") + self.value() +
                                  "; its copy is not discarded"};
    if (busy && busy(tp))
      return {errc::conflict, "a move of " + name + " runs, is journaled or is being recovered on " + self.value() +
                                  "; its copy is not discarded"};
    return {};
  };
  if (auto s = unneeded(); !s) return s;
  if (also) {
    if (auto s = also(); !s) return s;
    if (auto s = unneeded(); !s) return s;  // again: `also` may have taken a while
  }
  auto e = entry_as_seen_by(st.ownership, tp, self);
  if (auto s = st.producers.discard(tp); !s) return s;
  st.log.info("cluster", "discarded the local copy of " + name + " (served by " + e.owner.value() + ")");
  return {};
}

cluster_service::cluster_service(cluster_service_options options, cluster_state state)
    : impl_(std::make_unique<impl>(impl{std::move(options), state})) {}
cluster_service::~cluster_service() = default;

response cluster_service::handle(const request& req) { return impl_->handle(req); }
bool cluster_service::authenticated(const request& req) const { return impl_->authenticated(req); }

}  // namespace moonmq::cluster
