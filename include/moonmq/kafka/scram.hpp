// SCRAM-SHA-256 (RFC 5802, RFC 7677), the server's side, as Kafka's SASL mechanism "SCRAM-SHA-256" carries it: the
// client-first message names the user and a nonce, the server answers with its nonce, the user's salt and iteration
// count, the client proves it knows the password, and the server proves it knows the credential.
//
// Pure: the server's nonce is passed in, and no password is kept — a `credential` holds only the salt, the iteration
// count and the two keys derived from the password. A user the server does not know gets a credential that no proof
// matches, built from the user's name, so an unknown user and a wrong password look alike to the client.
// Thread safety: a credential is a plain value; one exchange belongs to one connection.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace moonmq::kafka::scram {

inline constexpr std::string_view mechanism = "SCRAM-SHA-256";
/// What credentials are derived with: Kafka's (and kafkajs's) minimum; librdkafka accepts up to 1,000,000.
inline constexpr std::uint32_t default_iterations = 4096;

using key = std::array<unsigned char, 32>;

struct credential {
  std::string salt;  ///< raw bytes
  std::uint32_t iterations = default_iterations;
  key stored_key{};  ///< H(HMAC(SaltedPassword, "Client Key"))
  key server_key{};  ///< HMAC(SaltedPassword, "Server Key")
};

/// Derives the credential of `password` (PBKDF2-HMAC-SHA-256 over `salt`, raw bytes).
credential derive(std::string_view password, std::string salt, std::uint32_t iterations = default_iterations);

/// A credential no proof matches, the same for the same `user` and `secret` (so a second try sees the same salt).
credential unknown_user(std::string_view user, std::string_view secret);

std::string base64(std::string_view bytes);
/// Strict standard base64 with padding; none when `text` is not.
std::optional<std::string> unbase64(std::string_view text);

/// One server-side exchange: first(), then (with the user's credential) challenge(), then finish().
class server_exchange {
 public:
  /// Reads client-first-message (`n,,n=USER,r=NONCE[,…]`); the user's name, unescaped, or none when the message is
  /// malformed or asks for channel binding or an authorization id that is not the user.
  std::optional<std::string> first(std::string_view client_first);
  /// The server-first-message: `r=CLIENTNONCE+server_nonce,s=SALT,i=ITERATIONS`. `server_nonce` must be printable
  /// ASCII without ','. `candidates` (at least one) are the user's credentials, all with one salt and iteration
  /// count (a user may hold several passwords); the proof may match any of them.
  std::string challenge(std::vector<credential> candidates, std::string_view server_nonce);
  /// Reads client-final-message and checks its channel binding, nonce and proof. The server-final-message
  /// (`v=SIGNATURE`) when the proof is right, none otherwise.
  std::optional<std::string> finish(std::string_view client_final);

  const std::string& user() const noexcept { return user_; }
  /// After finish() succeeded: which candidate the proof matched.
  std::size_t matched() const noexcept { return matched_; }

 private:
  std::string gs2_header_;
  std::string client_first_bare_;
  std::string client_nonce_;
  std::string user_;
  std::string server_first_;
  std::string nonce_;
  std::vector<credential> candidates_;
  std::size_t matched_ = 0;
  bool challenged_ = false;
};

}  // namespace moonmq::kafka::scram
