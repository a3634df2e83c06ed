#include "moonmq/core/runtime_sleep.hpp"
#include "moonmq/cluster/hand_moves.hpp"

#include <asio/post.hpp>
#include <asio/use_awaitable.hpp>
#include <mutex>
#include <set>

#include "json/state_document.hpp"
#include "json/writer.hpp"
#include "cluster/wire_json.hpp"
#include "moonmq/core/offload.hpp"

namespace moonmq::cluster {

/// move-requests.json: `{"moves": [{"topic", "partition", "dest", "id"}]}`, keyed by partition (a partition has one
/// move at a time), replaced whole on every change. `id` is the move's, kept so that the move resumes under it after
/// a restart (absent in files written before ids were kept: the resumed move gets a new one).
struct listed_move {
  broker_id dest;
  std::uint64_t id = 0;  ///< 0: none recorded
};

class move_requests {
 public:
  explicit move_requests(std::unique_ptr<storage::state_file> f) : file_(std::move(f)) {}

  status load() {
    rapidjson::Document d;
    auto present = json::read_state_document(*file_, d);
    if (!present) return present.to_status();
    if (!*present) return {};
    const status bad{errc::corrupt, file_->name() + ": expected {\"moves\": [{\"topic\",\"partition\",\"dest\"}]}"};
    if (!d.IsObject() || !d.HasMember("moves") || !d["moves"].IsArray()) return bad;
    for (const auto& m : d["moves"].GetArray()) {
      if (!m.IsObject() || !m.HasMember("topic") || !m["topic"].IsString() || !m.HasMember("partition") ||
          !m["partition"].IsInt() || !m.HasMember("dest") || !m["dest"].IsString() ||
          (m.HasMember("id") && !m["id"].IsUint64()))
        return bad;
      moves_[{m["topic"].GetString(), m["partition"].GetInt()}] =
          listed_move{broker_id(m["dest"].GetString()), m.HasMember("id") ? m["id"].GetUint64() : 0};
    }
    return {};
  }

  std::map<topic_partition, listed_move> listed() const {
    std::lock_guard lock(mu_);
    return moves_;
  }

  status add(const topic_partition& tp, const broker_id& dest, std::uint64_t id) {
    std::lock_guard lock(mu_);
    auto next = moves_;
    next[tp] = listed_move{dest, id};
    return commit(std::move(next));
  }

  /// Forgets the move of `tp` (nothing when none is listed).
  status remove(const topic_partition& tp) {
    std::lock_guard lock(mu_);
    if (!moves_.count(tp)) return {};
    auto next = moves_;
    next.erase(tp);
    return commit(std::move(next));
  }

 private:
  status commit(std::map<topic_partition, listed_move> next) {
    std::string doc = json::object([&](json::writer& w) {
      w.Key("moves");
      w.StartArray();
      for (const auto& [tp, m] : next) {
        w.StartObject();
        json::put(w, "topic", tp.topic);
        json::put(w, "partition", tp.partition);
        json::put(w, "dest", m.dest.value());
        if (m.id != 0) json::put(w, "id", m.id);
        w.EndObject();
      }
      w.EndArray();
    });
    if (auto s = file_->replace(doc); !s) return s;
    moves_ = std::move(next);
    return {};
  }

  std::unique_ptr<storage::state_file> file_;
  mutable std::mutex mu_;
  std::map<topic_partition, listed_move> moves_;
};

namespace {
/// The moves move-history.json keeps.
constexpr std::size_t kept_history = 100;
}  // namespace

result<std::unique_ptr<hand_moves>> hand_moves::open(hand_moves_parts parts,
                                                     std::unique_ptr<storage::state_file> file,
                                                     std::unique_ptr<storage::state_file> history) {
  auto requests = std::make_unique<move_requests>(std::move(file));
  if (auto s = requests->load(); !s) return s.err();
  std::vector<move_progress> ended;
  if (history) {
    auto text = history->read();
    if (!text) return text.err();
    if (*text) {
      auto moves = wire::read_moves(**text);
      if (!moves) return error{errc::corrupt, history->name() + ": expected {\"moves\": [...]}"};
      ended = std::move(*moves);
      parts.moves.restore_finished(ended);
    }
  }
  // Listed moves show in the moves list, under their ids, from now until they resume (or are forgotten).
  for (const auto& [tp, m] : requests->listed())
    if (m.id != 0) parts.moves.expect_resume(tp, m.dest, m.id);
  return std::unique_ptr<hand_moves>(
      new hand_moves(std::move(parts), std::move(requests), std::move(history), std::move(ended)));
}

hand_moves::hand_moves(hand_moves_parts parts, std::unique_ptr<move_requests> requests,
                       std::unique_ptr<storage::state_file> history, std::vector<move_progress> ended)
    : p_(std::move(parts)), requests_(std::move(requests)), history_(std::move(history)), ended_(std::move(ended)) {}

hand_moves::~hand_moves() {
  std::unique_lock lock(pending_mu_);
  pending_done_.wait(lock, [this] { return pending_ == 0; });
}

std::map<topic_partition, broker_id> hand_moves::listed() const {
  std::map<topic_partition, broker_id> out;
  for (const auto& [tp, m] : requests_->listed()) out.emplace(tp, m.dest);
  return out;
}

bool hand_moves::anything_to_recover() const {
  return !p_.journal.pending().empty() || !requests_->listed().empty();
}

result<std::uint64_t> hand_moves::start(const topic_partition& tp, const broker_id& dest,
                                        std::optional<controller_claim> claim) {
  // A move of it already running keeps its own record: this one is refused below and must not replace it.
  if (claim || p_.moves.busy(tp)) return p_.moves.start(p_.io, tp, dest, claim);
  std::lock_guard starting(starting_);
  const std::uint64_t id = p_.moves.allocate_id();  // recorded first, so that the move resumes under it
  if (auto s = requests_->add(tp, dest, id); !s)
    p_.log.warn("moves", "the move of " + name_of(tp) + " is not kept for a restart: " + s.message());
  auto started = p_.moves.start(p_.io, tp, dest, std::nullopt, id);
  if (!started) (void)requests_->remove(tp);  // refused: nothing to resume
  return started;
}

void hand_moves::finished(const move_progress& p) {
  if (stopped_) return;
  // Counted until the task is gone, run or not (an executor that stops drops what it has not run).
  struct pending_task {
    hand_moves* self;
    explicit pending_task(hand_moves* h) : self(h) {
      std::lock_guard lock(self->pending_mu_);
      ++self->pending_;
    }
    ~pending_task() {
      std::lock_guard lock(self->pending_mu_);
      if (--self->pending_ == 0) self->pending_done_.notify_all();
    }
  };
  asio::post(p_.blocking, [this, ended = p, task = std::make_shared<pending_task>(this)] {
    std::lock_guard starting(starting_);
    if (history_) {
      ended_.push_back(ended);
      if (ended_.size() > kept_history) ended_.erase(ended_.begin(), ended_.end() - kept_history);
      if (auto s = history_->replace(wire::moves_document("moves", ended_)); !s)
        p_.log.warn("moves", "the history of moves is not kept for a restart: " + s.message());
    }
    const topic_partition& tp = ended.partition;
    if (stopped_ || p_.moves.busy(tp)) return;  // a newer move of it runs: its record stays
    if (auto s = requests_->remove(tp); !s)
      p_.log.error("moves", "could not forget a finished move: " + s.message());
  });
}

asio::awaitable<void> hand_moves::recover() {
  std::set<topic_partition> started;  // resumed: their records stay until their moves end
  while (!stopped_) {
    const std::size_t unresolved = co_await p_.moves.recover();
    bool waiting = false;
    for (const auto& [tp, listed] : requests_->listed()) {
      const broker_id& dest = listed.dest;
      if (started.count(tp)) continue;
      const std::string name = name_of(tp);
      if (!p_.ownership.ready() || p_.moves.busy(tp)) {  // not yet: under Raft, not caught up; or its journal entry
        waiting = true;
        continue;
      }
      auto e = entry_as_seen_by(p_.ownership, tp, p_.self);
      auto count = p_.store.partition_count(tp.topic);
      const bool here = count.ok() && tp.partition < *count && serves(p_.ownership, tp, p_.self);
      if (!here && e.owner != p_.self) {
        p_.log.info("moves", "the interrupted move of " + name + " to " + dest.value() + " is not resumed: " +
                                 e.owner.value() + " serves it now");
        p_.moves.forget_resuming(tp);
        co_await offload(p_.blocking, [&] { return requests_->remove(tp); });
        continue;
      }
      if (!here) {  // in handover to this broker: wait until it is decided
        waiting = true;
        continue;
      }
      auto id = p_.moves.start(p_.io, tp, dest, std::nullopt,
                               listed.id != 0 ? std::optional<std::uint64_t>(listed.id) : std::nullopt);
      if (id) {
        started.insert(tp);
        p_.log.info("moves", "resuming the interrupted move of " + name + " to " + dest.value() + " (move " +
                                 std::to_string(*id) + ")");
      } else {
        p_.log.warn("moves", "the interrupted move of " + name + " to " + dest.value() +
                                 " did not restart: " + id.message());
        if (id.code() == errc::conflict) {
          waiting = true;
        } else {
          p_.moves.forget_resuming(tp);
          co_await offload(p_.blocking, [&] { return requests_->remove(tp); });
        }
      }
    }
    if (unresolved == 0 && !waiting) co_return;
    co_await sleep_on(p_.moves.rt(), p_.retry);
  }
}

}  // namespace moonmq::cluster
