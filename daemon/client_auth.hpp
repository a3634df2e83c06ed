// Who may call which route of moonmqd's client API (docs/api.md, docs/security.md): bearer tokens from `Server.Auth.Tokens`
// with the roles `client` (produce, fetch, groups, offsets, transactions, and every read) and `admin` (also topics,
// reassignments, throttle, drain and autobalancer control). /livez, /readyz, /v1/health, /metrics and the console's
// static files (/ui) stay open, and so does the whole API when no tokens are configured. Checked from the request head, before its body is read.
// Thread safety: const after construction.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "moonmq/cluster/config.hpp"
#include "moonmq/core/token.hpp"

namespace moonmq::daemon {

enum class role { client, admin };

/// The role a route needs; nullopt for the routes that stay open.
inline std::optional<role> role_needed(std::string_view method, std::string_view path) {
  const bool reading = method == "GET" || method == "HEAD";
  // Only reads are open: any other method on these paths needs a token like every write.
  for (std::string_view open : {"/livez", "/readyz", "/v1/health", "/metrics"})
    if (reading && path == open) return std::nullopt;
  // The console's static files hold no data (the page asks for a token and sends it with its API calls).
  if (reading && (path == "/ui" || path.starts_with("/ui/"))) return std::nullopt;
  if (reading) return role::client;
  // The writes of a client's data: produce, group membership and offsets, producers and transactions. Every other
  // write (topics, partitions, reassignments, throttle, drain, autobalancer control, and any route added later
  // without being listed here) needs admin.
  if (method == "POST" && path.starts_with("/v1/topics/") && path.ends_with("/records")) return role::client;
  for (std::string_view client : {"/v1/groups/", "/v1/producers", "/v1/transactions/"})
    if (method == "POST" && path.starts_with(client)) return role::client;
  return role::admin;
}

class client_auth {
 public:
  explicit client_auth(std::optional<cluster::auth_config> config) : config_(std::move(config)) {}

  /// Whether any token is configured (otherwise every route is open).
  bool enabled() const { return config_ && !config_->tokens.empty(); }

  struct verdict {
    int status = 200;  ///< 200 admitted, 401 no known token, 403 a role that may not
    std::string message;
  };

  /// Judges a request from its method, path and Authorization header.
  verdict judge(std::string_view method, std::string_view path, std::string_view authorization) const {
    if (!enabled()) return {};
    auto needed = role_needed(method, path);
    if (!needed) return {};
    constexpr std::string_view scheme = "Bearer ";
    if (!authorization.starts_with(scheme))
      return {401, "this route needs a client token: send Authorization: Bearer TOKEN"};
    const std::string_view presented = authorization.substr(scheme.size());
    const cluster::client_token* found = nullptr;
    for (const auto& t : config_->tokens)  // every token is compared, in constant time each
      if (constant_time_equal(t.token, presented) && !found) found = &t;
    if (!found) return {401, "unknown client token"};
    if (*needed == role::admin && found->role != "admin")
      return {403, std::string(method) + " " + std::string(path) + " needs the admin role; " + found->name +
                       " has the role " + found->role};
    return {};
  }

 private:
  std::optional<cluster::auth_config> config_;
};

}  // namespace moonmq::daemon
