// The OpenSSL context of one side of the inter-broker connections, built from `Cluster.Tls`.
//
// Server: presents CertFile/KeyFile; with `Verify: required` and a CaFile it asks every client for a certificate and
// refuses the handshake without one the CA signed (mutual TLS). Client: presents CertFile/KeyFile when given (for a
// listener that requires it); with `Verify: required` it checks the listener's certificate against the CaFile and
// against the address it dialled (an IP address against the certificate's IP SANs, a name against its DNS names).
// Internal to lib/ (and its tests); OpenSSL stays out of the header.
// Thread safety: immutable once created; one context serves every connection of its side.
#pragma once

#include <memory>

#include "moonmq/core/result.hpp"
#include "moonmq/transport/http_transport.hpp"

struct ssl_ctx_st;

namespace moonmq::transport {

class tls_context {
 public:
  enum class side { client, server };

  /// Loads the files of `options`; an error names the file that could not be read or used.
  static result<std::shared_ptr<tls_context>> create(const tls_options& options, side which);

  ~tls_context();
  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;

  ssl_ctx_st* native() const noexcept { return ctx_; }
  /// The client checks the listener's certificate and name.
  bool verifies_peer() const noexcept { return verify_; }

  /// The first error on OpenSSL's queue of this thread, as text (and the queue cleared).
  static std::string last_error();

 private:
  tls_context(ssl_ctx_st* ctx, bool verify) : ctx_(ctx), verify_(verify) {}
  ssl_ctx_st* ctx_;
  bool verify_;
};

}  // namespace moonmq::transport
