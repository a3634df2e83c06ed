#include "moonmq/transport/message.hpp"

#include <rapidjson/document.h>

#include "json/parse.hpp"

namespace moonmq::transport {

namespace {

errc code_of_status(int status) {
  switch (status) {
    case 0:
    case 503:
      return errc::unavailable;
    case 400:
      return errc::invalid_argument;
    case 401:
      return errc::unauthorized;
    case 404:
      return errc::not_found;
    case 409:
      return errc::conflict;
    case 416:
      return errc::offset_out_of_range;
    case 421:
      return errc::not_owner;
    case 429:
      return errc::resource_exhausted;
    default:
      return errc::internal;
  }
}

}  // namespace

error error_of(const response& r) {
  std::string message = r.body, name;
  rapidjson::Document d;
  if (json::parse_object(r.body, d)) {
    if (d.HasMember("message") && d["message"].IsString()) message = d["message"].GetString();
    if (d.HasMember("error") && d["error"].IsString()) name = d["error"].GetString();
  }
  if (r.status != 0)
    if (auto named = errc_from_name(name); named && *named != errc::ok && http_status_of(*named) == r.status)
      return {*named, message};
  return {code_of_status(r.status), message};
}

}  // namespace moonmq::transport
