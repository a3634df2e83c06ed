#include "api_routes.hpp"

namespace moonmq::daemon {

transport::response api_routes::dispatch(const transport::request& r) const {
  httplib::Request req;
  req.method = r.method == "HEAD" ? "GET" : r.method;
  req.path = r.path;
  req.body = r.body;
  for (const auto& [name, value] : r.headers) req.headers.emplace(name, value);
  for (const auto& [name, value] : r.params) req.params.emplace(name, value);
  for (const auto& route : routes_) {
    if (route.method != req.method || !std::regex_match(req.path, req.matches, route.pattern)) continue;
    httplib::Response res;
    route.run(req, res);
    transport::response out;
    out.status = res.status < 0 ? 200 : res.status;
    out.body = std::move(res.body);
    out.content_type = res.get_header_value("Content-Type");
    if (out.content_type.empty()) out.content_type = "application/json";
    for (const auto& [name, value] : res.headers)
      if (name != "Content-Type" && name != "Content-Length") out.headers.emplace_back(name, value);
    return out;
  }
  return transport::error_response(404, "not_found", r.method + " " + r.path + " is not a route");
}

bool api_routes::matches(const std::string& method, const std::string& path) const {
  const std::string m = method == "HEAD" ? "GET" : method;
  for (const auto& route : routes_)
    if (route.method == m && std::regex_match(path, route.pattern)) return true;
  return false;
}

}  // namespace moonmq::daemon
