// A blocking TCP connection (TCP_NODELAY, no SIGPIPE) with send/receive timeouts, optionally under TLS, and a reader
// that frames HTTP/1.1 messages on it without copying bodies twice: a body is received straight into the string that
// holds it.
// Internal to lib/ (and its tests).
// Thread safety: one thread uses a stream at a time; shutdown_both() may be called from another to wake it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>
#include <string_view>

#include "moonmq/core/result.hpp"

struct ssl_st;

namespace moonmq::transport {

class tls_context;

class tcp_stream {
 public:
  tcp_stream() = default;
  /// Takes ownership of a connected socket (sets TCP_NODELAY).
  explicit tcp_stream(int fd);
  ~tcp_stream();
  tcp_stream(tcp_stream&& other) noexcept;
  tcp_stream& operator=(tcp_stream&& other) noexcept;
  tcp_stream(const tcp_stream&) = delete;
  tcp_stream& operator=(const tcp_stream&) = delete;

  /// Connects to host:port (a name is resolved) within `timeout`.
  static result<tcp_stream> connect(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout);

  /// Runs the TLS handshake as the client, checking the listener's certificate against `host` when the context
  /// verifies; from then on every byte is under TLS. Call after set_timeout (the handshake obeys it).
  status start_tls_client(const tls_context& context, const std::string& host);
  /// Runs the TLS handshake as the server (a client without a trusted certificate fails it under mutual TLS).
  status start_tls_server(const tls_context& context);

  /// Under TLS, the names in the peer's certificate when it was verified (its DNS subject alternative names, then
  /// its common name); empty without TLS or without a verified certificate.
  std::vector<std::string> peer_certificate_names() const;

  bool is_open() const noexcept { return fd_ >= 0; }
  int fd() const noexcept { return fd_; }

  /// The longest a single send or receive may block (set on the socket only when it changes).
  void set_timeout(std::chrono::milliseconds timeout);
  /// Sends all of `head` and then all of `body` (one sendmsg when the socket takes it); false on error or timeout.
  bool write_all(std::string_view head, std::string_view body = {});
  /// Receives at least one byte into [data, data + size): the count, 0 when the peer closed, -1 on error or timeout.
  long read_some(char* data, std::size_t size);
  /// For a connection that sat idle: the peer has neither closed it nor sent anything unasked.
  bool idle_and_open() const;
  /// The first bytes the peer sent, left in place (waits for them within the timeout; before TLS only): up to
  /// `size`, empty when the peer sent nothing or closed.
  std::string peek(std::size_t size) const;
  /// Wakes a thread blocked on this stream (its call fails); the descriptor stays until close().
  void shutdown_both();
  /// What OpenSSL said when a TLS read or write failed (e.g. the peer's alert refusing this side's certificate,
  /// which under TLS 1.3 arrives after the handshake), or empty.
  const std::string& tls_failure() const noexcept { return tls_failure_; }
  void close();

 private:
  status handshake(const tls_context& context, bool client, const std::string& host);

  int fd_ = -1;
  ssl_st* ssl_ = nullptr;
  bool broken_ = false;  ///< a TLS call failed: no close_notify, no reuse
  std::string tls_failure_;
  std::chrono::milliseconds timeout_{-1};
};

/// Reads HTTP/1.1 message heads and bodies from a stream, keeping bytes received past the current message for the
/// next one (pipelined requests).
class message_reader {
 public:
  explicit message_reader(tcp_stream& stream) : stream_(stream) {}

  enum class outcome { ok, closed, too_large, failed };
  /// Reads up to the blank line ending a head (at most `limit` bytes) into `head`. `closed`: the peer closed the
  /// connection before sending a byte of it (the normal end of a keep-alive connection).
  outcome read_head(std::size_t limit, std::string& head);
  /// Reads exactly `length` body bytes into `body`.
  bool read_body(std::size_t length, std::string& body);
  /// Reads until the peer closes the connection (a response without Content-Length), at most `limit` bytes.
  bool read_until_close(std::size_t limit, std::string& body);
  /// Discards what arrives until the peer closes, a receive times out or `limit` bytes went (a refused body).
  void drain(std::size_t limit);
  /// Bytes received that belong to a message not read yet.
  bool buffered() const noexcept { return !pending_.empty(); }

 private:
  tcp_stream& stream_;
  std::string pending_;
};

}  // namespace moonmq::transport
