// moonmqd's client API routes. Each resource's module registers its handlers here by method and path pattern (a
// regular expression over the whole path, its groups in `req.matches`), with cpp-httplib's request and response as
// plain value types; the client listener (lib's HTTP/1.1 server, with its admission rules: credentials checked from
// the head before a byte of the body is read, a deadline and a cap for connections that have not authenticated)
// hands every admitted request to dispatch(). A HEAD request runs the GET route and is answered without the body.
// Thread safety: register every route before the listener starts; dispatch() may then run concurrently.
#pragma once

#include <httplib.h>

#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "moonmq/transport/message.hpp"

namespace moonmq::daemon {

class api_routes {
 public:
  using handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  void Get(const std::string& pattern, handler h) { add("GET", pattern, std::move(h)); }
  void Post(const std::string& pattern, handler h) { add("POST", pattern, std::move(h)); }
  void Put(const std::string& pattern, handler h) { add("PUT", pattern, std::move(h)); }
  void Delete(const std::string& pattern, handler h) { add("DELETE", pattern, std::move(h)); }

  /// The answer of the route `r` matches; 404 `not_found` naming the request when none does.
  transport::response dispatch(const transport::request& r) const;

  /// Whether some route matches `method` and `path` (for the request metrics' labels).
  bool matches(const std::string& method, const std::string& path) const;

 private:
  struct route {
    std::string method;
    std::regex pattern;
    handler run;
  };
  void add(std::string method, const std::string& pattern, handler h) {
    routes_.push_back({std::move(method), std::regex(pattern), std::move(h)});
  }

  std::vector<route> routes_;
};

}  // namespace moonmq::daemon
