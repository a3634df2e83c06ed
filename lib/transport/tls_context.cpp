#include "transport/tls_context.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <fstream>

namespace moonmq::transport {

std::string tls_context::last_error() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "no detail from OpenSSL";
  char text[256];
  ERR_error_string_n(e, text, sizeof text);
  return text;
}

result<std::shared_ptr<tls_context>> tls_context::create(const tls_options& o, side which) {
  const bool server = which == side::server;
  const bool needs_pair = server || !o.cert_file.empty();
  if (needs_pair)
    for (const auto* f : {&o.cert_file, &o.key_file})
      if (f->empty() || !std::ifstream(*f)) return error{errc::invalid_argument, "cannot read TLS file '" + *f + "'"};
  if (!o.ca_file.empty() && !std::ifstream(o.ca_file))
    return error{errc::invalid_argument, "cannot read TLS file '" + o.ca_file + "'"};
  SSL_CTX* ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (!ctx) return error{errc::internal, "cannot create a TLS context: " + last_error()};
  std::shared_ptr<tls_context> out(new tls_context(ctx, o.verify_peer));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // Blocking sockets: a record that needs another read is read, not returned as "want read".
  SSL_CTX_set_mode(ctx, SSL_MODE_AUTO_RETRY);
  // Every message has a Content-Length, so a connection cut without close_notify is caught by the framing; OpenSSL 3
  // would otherwise report the end of an idle kept-alive connection as an error.
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  // Read whatever has arrived, not a record's 5-byte header and then its body: one recv per message, not two.
  SSL_CTX_set_read_ahead(ctx, 1);
  // No session tickets: connections are long-lived, and a ticket arriving on an idle client connection would look
  // like unasked-for data and get the connection dropped.
  if (server) SSL_CTX_set_num_tickets(ctx, 0);
  if (needs_pair) {
    if (SSL_CTX_use_certificate_chain_file(ctx, o.cert_file.c_str()) != 1)
      return error{errc::invalid_argument, "TLS certificate " + o.cert_file + " could not be loaded: " + last_error()};
    if (SSL_CTX_use_PrivateKey_file(ctx, o.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
      return error{errc::invalid_argument, "TLS key " + o.key_file + " could not be loaded: " + last_error()};
    if (SSL_CTX_check_private_key(ctx) != 1)
      return error{errc::invalid_argument, "TLS key " + o.key_file + " does not match " + o.cert_file};
  }
  if (!o.ca_file.empty() && SSL_CTX_load_verify_locations(ctx, o.ca_file.c_str(), nullptr) != 1)
    return error{errc::invalid_argument, "TLS CA " + o.ca_file + " could not be loaded: " + last_error()};
  if (server && o.verify_peer && !o.ca_file.empty()) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(o.ca_file.c_str())) SSL_CTX_set_client_CA_list(ctx, names);
  } else if (!server && o.verify_peer) {
    if (o.ca_file.empty()) SSL_CTX_set_default_verify_paths(ctx);  // the system's trusted CAs
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  return out;
}

tls_context::~tls_context() { SSL_CTX_free(ctx_); }

}  // namespace moonmq::transport
