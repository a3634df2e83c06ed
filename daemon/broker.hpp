// moonmqd's broker: the file-backed stores, the cluster layer (service, router, reassigner) and the two HTTP
// listeners (client API on Server.Port, cluster endpoint on Server.Cluster.Port), wired together. It is a real broker
// a person can run, not a test fixture.
// Thread safety: start() once; stop() from any thread (idempotent).
#pragma once

#include <memory>

#include "moonmq/cluster/config.hpp"
#include "moonmq/core/logger.hpp"
#include "moonmq/core/result.hpp"

namespace moonmq::daemon {

class broker {
 public:
  /// Opens the data directory (recovering the logs), binds both listeners and starts serving. Errors name the file
  /// or address at fault.
  static result<std::unique_ptr<broker>> start(const cluster::server_config& config, std::shared_ptr<logger> log);

  virtual ~broker() = default;
  /// Stops accepting, lets requests in flight finish, stops moves at their next step, syncs the logs.
  virtual void stop() = 0;
};

}  // namespace moonmq::daemon
