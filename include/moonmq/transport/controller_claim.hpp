// The claim a control-plane request between brokers is made under (cluster/controller_fence.hpp): the sender's
// controller epoch and id, carried in the X-Cluster-Epoch and X-Cluster-Controller headers.
// Thread safety: a plain value.
#pragma once

#include <compare>

#include "moonmq/core/ids.hpp"

namespace moonmq::transport {

/// A controller claim: an epoch and the broker that made it.
struct controller_claim {
  epoch claim_epoch{0};
  broker_id controller;

  auto operator<=>(const controller_claim& o) const {
    if (auto c = claim_epoch <=> o.claim_epoch; c != 0) return c;
    return controller.value() <=> o.controller.value();
  }
  bool operator==(const controller_claim&) const = default;
};

}  // namespace moonmq::transport
