// The controller fence: what stops two balance loops from duelling.
//
// A balance loop `claim()`s the next controller epoch and announces it to every peer. Control-plane requests carry
// their sender's epoch and id; every broker `check()`s them against the highest claim it has seen and refuses an
// older one (the listener answers 409). A newer claim seen in a request or an announcement is `observe()`d and
// recorded durably, so a restart does not forget it. Claims are ordered by epoch, then by controller id (two brokers
// claiming the same epoch at the same instant: the greater id wins), so there is always exactly one newest claim.
// A claimant that has seen a newer claim than its own is `superseded()` and must stop acting.
//
// Requests without epoch headers (hand-driven moves, older peers) bypass the fence by not calling check(). This is
// fencing, not consensus; with Raft on, the Raft-backed fence (epoch = term) stands behind the same interface.
// Thread safety: implementations allow concurrent calls.
#pragma once

#include <compare>
#include <optional>

#include "moonmq/core/ids.hpp"
#include "moonmq/core/result.hpp"
#include "moonmq/transport/controller_claim.hpp"

namespace moonmq::cluster {

using transport::controller_claim;

/// The highest controller epoch there may be. A claim above it is refused (400), and a fence at it claims no more,
/// so an epoch never wraps to 0 (which would fence every later claim out for good).
inline constexpr std::uint64_t max_controller_epoch = 0x7fffffffffffffffULL;

class controller_fence {
 public:
  virtual ~controller_fence() = default;

  /// Takes the next epoch (one above the highest seen) for this broker and records it durably.
  virtual result<epoch> claim() = 0;

  /// Records a claim heard from another broker if it is newer than the highest seen. Returns whether it was newer.
  virtual result<bool> observe(const controller_claim& c) = 0;

  /// Admits a control-plane request carrying claim `c`: a `conflict` error when a newer claim has been seen; a newer
  /// claim is observed (and admitted).
  virtual status check(const controller_claim& c) = 0;

  /// The highest claim seen (epoch 0 and no id when none).
  virtual controller_claim highest() const = 0;

  /// This broker's own current claim, if it made one since it started.
  virtual std::optional<controller_claim> own_claim() const = 0;

  /// True when claims come from consensus (the Raft-backed fence): claim() then succeeds only on the elected
  /// leader, and losing leadership is not permanent. False for the file fence, whose superseded claimant stops for good.
  virtual bool by_consensus() const noexcept { return false; }

  /// True when this broker claimed and a newer claim has been seen since: it must stop acting.
  bool superseded() const {
    auto mine = own_claim();
    return mine && highest() > *mine;
  }
};

}  // namespace moonmq::cluster
