// Where a Raft node's durable state lives: hard state (term, vote, commit), the snapshot and the log after it.
// `save()` makes the durable parts of a ready batch durable — fsynced — before it returns; only then may the host
// send the batch's messages. `load()` gives back what a restarting node resumes from.
//
// `memory_storage` is the twin for tests and simulations: `write()` stages a batch, `sync()` makes it durable and
// `crash()` loses whatever was staged but not synced, as a power cut would.
// Thread safety: one caller at a time.
#pragma once

#include <algorithm>

#include "moonmq/core/result.hpp"
#include "moonmq/raft/node.hpp"

namespace moonmq::raft {

class storage {
 public:
  virtual ~storage() = default;
  virtual result<durable_state> load() = 0;
  virtual status save(const ready& r) = 0;
};

/// Applies the durable parts of `r` to `s` (the one place that says what each part means for the stored log).
inline void apply_ready(durable_state& s, const ready& r) {
  if (r.hard) s.hard = *r.hard;
  if (r.snap) {
    s.snap = *r.snap;
    std::erase_if(s.entries, [&](const entry& e) { return e.index <= r.snap->index; });
  }
  if (r.truncate_from) std::erase_if(s.entries, [&](const entry& e) { return e.index >= *r.truncate_from; });
  for (const entry& e : r.entries)
    if (!s.snap || e.index > s.snap->index) s.entries.push_back(e);
}

class memory_storage final : public storage {
 public:
  result<durable_state> load() override { return durable_; }
  status save(const ready& r) override {
    write(r);
    sync();
    return {};
  }

  /// Stages a batch without making it durable.
  void write(const ready& r) {
    if (!staged_) staged_ = durable_;
    apply_ready(*staged_, r);
  }
  void sync() {
    if (staged_) durable_ = std::move(*staged_);
    staged_.reset();
  }
  /// Loses what was written since the last sync.
  void crash() { staged_.reset(); }

  const durable_state& durable() const noexcept { return durable_; }

 private:
  durable_state durable_;
  std::optional<durable_state> staged_;
};

}  // namespace moonmq::raft
