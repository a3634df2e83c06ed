// moonmqd's producer route: POST /v1/producers hands out an idempotent producer's id and epoch.
//
// An id is 63 random bits from the system's random source, drawn for each request: nothing to store, nothing to lose
// in a crash, and no two brokers need to agree (a collision among a million producers has a probability around
// 5e-8). The producer's state lives in the partition logs its records are written to (see producer_states).
// Thread safety: the route may run concurrently.
#pragma once

#include <httplib.h>

namespace moonmq::daemon {

class producer_api {
 public:
  void routes(httplib::Server& api);
};

}  // namespace moonmq::daemon
