// moonmqctl's connection to one broker's client API: plain HTTP with an optional bearer token. Every answer is kept
// whole (status and body); a broker that cannot be reached is an answer with status 0 and the reason.
// Thread safety: one client per thread.
#pragma once

#include <httplib.h>

#include <string>

namespace moonmq::ctl {

struct answer {
  int status = 0;  ///< HTTP status; 0 = no answer
  std::string body;

  bool ok() const { return status >= 200 && status < 300; }
};

class broker_client {
 public:
  /// `address`: host:port or http://host:port.
  broker_client(std::string address, std::string token, int timeout_seconds)
      : address_(strip(std::move(address))), token_(std::move(token)), http_(address_) {
    http_.set_connection_timeout(timeout_seconds, 0);
    http_.set_read_timeout(timeout_seconds, 0);
    http_.set_write_timeout(timeout_seconds, 0);
    if (!token_.empty()) http_.set_bearer_token_auth(token_);
  }

  const std::string& address() const { return address_; }

  answer get(const std::string& path) { return wrap(http_.Get(path)); }
  answer post(const std::string& path, const std::string& body = "{}") {
    return wrap(http_.Post(path, body, "application/json"));
  }
  answer put(const std::string& path, const std::string& body) {
    return wrap(http_.Put(path, body, "application/json"));
  }
  answer del(const std::string& path) { return wrap(http_.Delete(path)); }

 private:
  /// What went wrong, in words (httplib's own names are one word: "Connection").
  static std::string why(httplib::Error e) {
    switch (e) {
      case httplib::Error::Connection:
        return "could not connect (is a broker listening there, and is the port its client API's?)";
      case httplib::Error::ConnectionTimeout:
        return "timed out connecting";
      case httplib::Error::Read:
        return "the connection broke, or no answer came in time, while reading the answer";
      case httplib::Error::Write:
        return "the connection broke while sending the request";
      case httplib::Error::SSLConnection:
      case httplib::Error::SSLServerVerification:
        return "TLS failed (" + httplib::to_string(e) + ")";
      default:
        return httplib::to_string(e);
    }
  }

  static std::string strip(std::string a) {
    if (a.rfind("http://", 0) == 0) a.erase(0, 7);
    while (!a.empty() && a.back() == '/') a.pop_back();
    return a;
  }

  answer wrap(const httplib::Result& r) {
    if (!r) return {0, "cannot reach " + address_ + ": " + why(r.error())};
    return {r->status, r->body};
  }

  std::string address_;
  std::string token_;
  httplib::Client http_;
};

}  // namespace moonmq::ctl
