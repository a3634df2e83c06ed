#include "transport/tcp_stream.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "transport/http1.hpp"
#include "transport/tls_context.hpp"

namespace moonmq::transport {

namespace {

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/// Connects `fd` within `timeout`: a non-blocking connect, a poll, then back to blocking mode.
bool connect_within(int fd, const sockaddr* addr, socklen_t len, std::chrono::milliseconds timeout, int& err) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  if (::connect(fd, addr, len) != 0) {
    if (errno != EINPROGRESS) {
      err = errno;
      return false;
    }
    pollfd p{fd, POLLOUT, 0};
    int n;
    do n = ::poll(&p, 1, static_cast<int>(timeout.count()));
    while (n < 0 && errno == EINTR);
    if (n <= 0) {
      err = n == 0 ? ETIMEDOUT : errno;
      return false;
    }
    socklen_t elen = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
    if (err != 0) return false;
  }
  ::fcntl(fd, F_SETFL, flags);
  return true;
}

// OpenSSL's own socket BIO writes with write(), which raises SIGPIPE when the peer has gone and kills a process
// that did not ignore it; a library must not. This BIO sends with MSG_NOSIGNAL. A timeout (SO_RCVTIMEO/SO_SNDTIMEO)
// is a plain failure, never "retry".
int bio_write(BIO* b, const char* data, int size) {
  const int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(b)));
  BIO_clear_retry_flags(b);
  ssize_t n;
  do n = ::send(fd, data, static_cast<std::size_t>(size), MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return static_cast<int>(n);
}

int bio_read(BIO* b, char* data, int size) {
  const int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(b)));
  BIO_clear_retry_flags(b);
  ssize_t n;
  do n = ::recv(fd, data, static_cast<std::size_t>(size), 0);
  while (n < 0 && errno == EINTR);
  return static_cast<int>(n);
}

long bio_ctrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

int bio_create(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

BIO_METHOD* socket_bio_method() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "moonmq socket");
    BIO_meth_set_write(m, bio_write);
    BIO_meth_set_read(m, bio_read);
    BIO_meth_set_ctrl(m, bio_ctrl);
    BIO_meth_set_create(m, bio_create);
    return m;
  }();
  return method;
}

bool is_ip_address(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 || ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

tcp_stream::tcp_stream(int fd) : fd_(fd) { set_nodelay(fd_); }

tcp_stream::~tcp_stream() { close(); }

tcp_stream::tcp_stream(tcp_stream&& other) noexcept
    : fd_(other.fd_), ssl_(other.ssl_), broken_(other.broken_), timeout_(other.timeout_) {
  other.fd_ = -1;
  other.ssl_ = nullptr;
}

tcp_stream& tcp_stream::operator=(tcp_stream&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    ssl_ = other.ssl_;
    broken_ = other.broken_;
    timeout_ = other.timeout_;
    other.fd_ = -1;
    other.ssl_ = nullptr;
  }
  return *this;
}

status tcp_stream::start_tls_client(const tls_context& context, const std::string& host) {
  return handshake(context, true, host);
}

status tcp_stream::start_tls_server(const tls_context& context) { return handshake(context, false, {}); }

status tcp_stream::handshake(const tls_context& context, bool client, const std::string& host) {
  ERR_clear_error();
  ssl_ = SSL_new(context.native());
  if (!ssl_) return error{errc::internal, "cannot start TLS: " + tls_context::last_error()};
  BIO* bio = BIO_new(socket_bio_method());
  BIO_set_data(bio, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd_)));
  SSL_set_bio(ssl_, bio, bio);
  if (client) {
    if (!is_ip_address(host)) SSL_set_tlsext_host_name(ssl_, host.c_str());
    if (context.verifies_peer()) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
      if (is_ip_address(host))
        X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
      else
        X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
    }
  }
  if ((client ? SSL_connect(ssl_) : SSL_accept(ssl_)) == 1) return {};
  broken_ = true;
  std::string why = tls_context::last_error();
  if (const long v = SSL_get_verify_result(ssl_); v != X509_V_OK)
    why = std::string("certificate not accepted: ") + X509_verify_cert_error_string(v);
  else if (client && (why == "no detail from OpenSSL" || why.find("wrong version number") != std::string::npos ||
                      why.find("packet length too long") != std::string::npos ||
                      why.find("unexpected eof") != std::string::npos))
    why += " (the peer does not speak TLS here: is Cluster.Tls set on it too?)";
  return error{errc::unavailable, "TLS handshake failed: " + why};
}

result<tcp_stream> tcp_stream::connect(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string where = host + ":" + std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    return error{errc::unavailable, "cannot resolve " + where + ": " + ::gai_strerror(rc)};
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  int err = 0;
  for (auto* a = found; a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    if (connect_within(fd, a->ai_addr, a->ai_addrlen, timeout, err)) return tcp_stream(fd);
    ::close(fd);
  }
  return error{errc::unavailable, "cannot connect to " + where + ": " + std::strerror(err)};
}

void tcp_stream::set_timeout(std::chrono::milliseconds timeout) {
  timeout = std::max(timeout, std::chrono::milliseconds(1));  // a zero timeval would mean "block forever"
  if (timeout == timeout_ || fd_ < 0) return;
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  timeout_ = timeout;
}

bool tcp_stream::write_all(std::string_view head, std::string_view body) {
  if (ssl_) {
    // A small message goes out as one TLS record; a large body after its head without being copied.
    auto write = [this](std::string_view part) {
      std::size_t n = 0;
      if (part.empty() || SSL_write_ex(ssl_, part.data(), part.size(), &n) == 1) return true;
      broken_ = true;
      tls_failure_ = tls_context::last_error();
      return false;
    };
    if (head.size() + body.size() <= 16384) return write(std::string(head).append(body));
    return write(head) && write(body);
  }
  iovec iov[2] = {{const_cast<char*>(head.data()), head.size()}, {const_cast<char*>(body.data()), body.size()}};
  iovec* next = iov;
  int left = body.empty() ? 1 : 2;
  while (left > 0) {
    msghdr m{};
    m.msg_iov = next;
    m.msg_iovlen = static_cast<std::size_t>(left);
    const ssize_t n = ::sendmsg(fd_, &m, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    auto sent = static_cast<std::size_t>(n);
    while (left > 0 && sent >= next->iov_len) {
      sent -= next->iov_len;
      ++next;
      --left;
    }
    if (left > 0) {
      next->iov_base = static_cast<char*>(next->iov_base) + sent;
      next->iov_len -= sent;
    }
  }
  return true;
}

long tcp_stream::read_some(char* data, std::size_t size) {
  if (ssl_) {
    std::size_t n = 0;
    if (SSL_read_ex(ssl_, data, size, &n) == 1) return static_cast<long>(n);
    const int saved = errno;
    const int why = SSL_get_error(ssl_, 0);
    if (why == SSL_ERROR_ZERO_RETURN) return 0;  // close_notify, or a plain end of stream
    broken_ = true;
    if (why == SSL_ERROR_SSL) tls_failure_ = tls_context::last_error();
    ERR_clear_error();
    errno = why == SSL_ERROR_SYSCALL ? saved : EPROTO;  // a timeout stays EAGAIN
    return -1;
  }
  for (;;) {
    const ssize_t n = ::recv(fd_, data, size, 0);
    if (n < 0 && errno == EINTR) continue;
    return static_cast<long>(n);
  }
}

bool tcp_stream::idle_and_open() const {
  if (ssl_ && (broken_ || SSL_has_pending(ssl_))) return false;  // incl. bytes read ahead
  char c;
  const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

std::string tcp_stream::peek(std::size_t size) const {
  std::string out(size, '\0');
  for (;;) {
    const ssize_t n = ::recv(fd_, out.data(), size, MSG_PEEK);
    if (n < 0 && errno == EINTR) continue;
    out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    return out;
  }
}

void tcp_stream::shutdown_both() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void tcp_stream::close() {
  if (ssl_) {
    if (!broken_) SSL_shutdown(ssl_);  // close_notify; after a failure OpenSSL forbids it
    ERR_clear_error();                 // a close_notify the peer no longer takes is no news for the next call
    SSL_free(ssl_);
    ssl_ = nullptr;
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

message_reader::outcome message_reader::read_head(std::size_t limit, std::string& head) {
  std::size_t scanned = 0;
  for (;;) {
    // Rescan a few bytes before the new ones: the blank line may straddle two receives.
    auto end = http1::head_end(std::string_view(pending_).substr(scanned >= 3 ? scanned - 3 : 0));
    if (end != std::string_view::npos) {
      end += scanned >= 3 ? scanned - 3 : 0;
      if (end > limit) return outcome::too_large;
      head.assign(pending_, 0, end);
      pending_.erase(0, end);
      return outcome::ok;
    }
    if (pending_.size() >= limit) return outcome::too_large;
    scanned = pending_.size();
    char chunk[16384];
    const long n = stream_.read_some(chunk, sizeof chunk);
    if (n == 0) return pending_.empty() ? outcome::closed : outcome::failed;
    if (n < 0) return pending_.empty() && (errno == EAGAIN || errno == EWOULDBLOCK) ? outcome::closed : outcome::failed;
    pending_.append(chunk, static_cast<std::size_t>(n));
  }
}

std::vector<std::string> tcp_stream::peer_certificate_names() const {
  std::vector<std::string> names;
  if (!ssl_ || SSL_get_verify_result(ssl_) != X509_V_OK) return names;
  X509* cert = SSL_get1_peer_certificate(ssl_);
  if (!cert) return names;
  if (auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr))) {
    for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
      const GENERAL_NAME* n = sk_GENERAL_NAME_value(sans, i);
      if (n->type != GEN_DNS) continue;
      const auto* text = reinterpret_cast<const char*>(ASN1_STRING_get0_data(n->d.dNSName));
      names.emplace_back(text, static_cast<std::size_t>(ASN1_STRING_length(n->d.dNSName)));
    }
    GENERAL_NAMES_free(sans);
  }
  char cn[256];
  if (int len = X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn); len > 0)
    names.emplace_back(cn, static_cast<std::size_t>(len));
  X509_free(cert);
  return names;
}

bool message_reader::read_body(std::size_t length, std::string& body) {
  const std::size_t have = std::min(length, pending_.size());
  body.assign(pending_, 0, have);
  pending_.erase(0, have);
  // The buffer grows with what arrives (doubling, from 64 KiB): a declared length that the bytes never follow costs
  // nothing, and a real body is still received straight into the string that keeps it.
  constexpr std::size_t first_step = 64u << 10;
  for (std::size_t at = have; at < length;) {
    if (at == body.size()) body.resize(std::min(length, std::max(first_step, body.size() * 2)));
    const long n = stream_.read_some(body.data() + at, body.size() - at);
    if (n <= 0) return false;
    at += static_cast<std::size_t>(n);
  }
  return true;
}

bool message_reader::read_until_close(std::size_t limit, std::string& body) {
  body = std::move(pending_);
  pending_.clear();
  char chunk[65536];
  for (;;) {
    const long n = stream_.read_some(chunk, sizeof chunk);
    if (n == 0) return true;
    if (n < 0 || body.size() + static_cast<std::size_t>(n) > limit) return false;
    body.append(chunk, static_cast<std::size_t>(n));
  }
}

void message_reader::drain(std::size_t limit) {
  pending_.clear();
  char chunk[65536];
  for (std::size_t gone = 0; gone < limit;) {
    const long n = stream_.read_some(chunk, sizeof chunk);
    if (n <= 0) return;
    gone += static_cast<std::size_t>(n);
  }
}

}  // namespace moonmq::transport
