#include "moonmq/kafka/scram.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

namespace moonmq::kafka::scram {

namespace {

key hmac(const key& k, std::string_view data) {
  key out{};
  unsigned int size = 0;
  HMAC(EVP_sha256(), k.data(), static_cast<int>(k.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), out.data(), &size);
  return out;
}

key hmac(std::string_view k, std::string_view data) {
  key out{};
  unsigned int size = 0;
  HMAC(EVP_sha256(), k.data(), static_cast<int>(k.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), out.data(), &size);
  return out;
}

key sha256(const key& data) {
  key out{};
  SHA256(data.data(), data.size(), out.data());
  return out;
}

std::string_view as_text(const key& k) { return {reinterpret_cast<const char*>(k.data()), k.size()}; }

/// Splits `text` at the first ',' into its head and (after the comma) its rest.
std::pair<std::string_view, std::string_view> split(std::string_view text) {
  const auto comma = text.find(',');
  if (comma == std::string_view::npos) return {text, {}};
  return {text.substr(0, comma), text.substr(comma + 1)};
}

/// A saslname with "=2C" and "=3D" turned back into ',' and '='; none for any other '='.
std::optional<std::string> unescape(std::string_view name) {
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] != '=') {
      out += name[i];
      continue;
    }
    const auto code = name.substr(i + 1, 2);
    if (code == "2C")
      out += ',';
    else if (code == "3D")
      out += '=';
    else
      return std::nullopt;
    i += 2;
  }
  return out;
}

bool printable_nonce(std::string_view nonce) {
  if (nonce.empty()) return false;
  for (const char ch : nonce)
    if (ch < 0x21 || ch > 0x7e || ch == ',') return false;
  return true;
}

}  // namespace

credential derive(std::string_view password, std::string salt, std::uint32_t iterations) {
  credential c;
  c.salt = std::move(salt);
  c.iterations = iterations;
  key salted{};
  PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                    reinterpret_cast<const unsigned char*>(c.salt.data()), static_cast<int>(c.salt.size()),
                    static_cast<int>(iterations), EVP_sha256(), static_cast<int>(salted.size()), salted.data());
  c.stored_key = sha256(hmac(salted, "Client Key"));
  c.server_key = hmac(salted, "Server Key");
  return c;
}

credential unknown_user(std::string_view user, std::string_view secret) {
  credential c;
  const key salt = hmac(secret, std::string("salt:").append(user));
  c.salt.assign(as_text(salt).substr(0, 16));
  // Keys no password derives to in practice: a proof would have to hash to this, which is a preimage of SHA-256.
  c.stored_key = hmac(secret, std::string("stored:").append(user));
  c.server_key = hmac(secret, std::string("server:").append(user));
  return c;
}

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::optional<std::string> unbase64(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    const bool alphabet = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                          ch == '+' || ch == '/';
    const bool padding = ch == '=' && i + 2 >= text.size() && (i + 1 == text.size() || text[i + 1] == '=');
    if (!alphabet && !padding) return std::nullopt;
  }
  std::string out(3 * (text.size() / 4), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  std::size_t size = static_cast<std::size_t>(n);
  // EVP_DecodeBlock counts the padding's bytes as zeros.
  if (!text.empty() && text.back() == '=') --size;
  if (text.size() > 1 && text[text.size() - 2] == '=') --size;
  out.resize(size);
  return out;
}

std::optional<std::string> server_exchange::first(std::string_view client_first) {
  // gs2-header: "n," (no channel binding; "y" and "p" are refused), then an optional "a=AUTHZID", then ",".
  auto [binding, after_binding] = split(client_first);
  if (binding != "n") return std::nullopt;
  auto [authzid, bare] = split(after_binding);
  if (!authzid.empty() && !authzid.starts_with("a=")) return std::nullopt;
  gs2_header_ = std::string(client_first.substr(0, client_first.size() - bare.size()));
  client_first_bare_ = std::string(bare);
  auto [name_item, after_name] = split(bare);
  auto [nonce_item, extensions] = split(after_name);
  (void)extensions;  // none is defined for SCRAM-SHA-256 here; they are part of the signed message all the same
  if (!name_item.starts_with("n=") || !nonce_item.starts_with("r=")) return std::nullopt;
  auto name = unescape(name_item.substr(2));
  if (!name || name->empty()) return std::nullopt;
  if (!authzid.empty()) {
    auto requested = unescape(authzid.substr(2));
    if (!requested || *requested != *name) return std::nullopt;
  }
  client_nonce_ = std::string(nonce_item.substr(2));
  if (!printable_nonce(client_nonce_)) return std::nullopt;
  user_ = *name;
  return user_;
}

std::string server_exchange::challenge(std::vector<credential> candidates, std::string_view server_nonce) {
  candidates_ = std::move(candidates);
  const credential& c = candidates_.front();
  nonce_ = client_nonce_ + std::string(server_nonce);
  server_first_ = "r=" + nonce_ + ",s=" + base64(c.salt) + ",i=" + std::to_string(c.iterations);
  challenged_ = true;
  return server_first_;
}

std::optional<std::string> server_exchange::finish(std::string_view client_final) {
  if (!challenged_) return std::nullopt;
  challenged_ = false;  // one answer per exchange
  const auto proof_at = client_final.rfind(",p=");
  if (proof_at == std::string_view::npos) return std::nullopt;
  const auto without_proof = client_final.substr(0, proof_at);
  auto [binding_item, after_binding] = split(without_proof);
  auto [nonce_item, extensions] = split(after_binding);
  (void)extensions;
  if (binding_item != "c=" + base64(gs2_header_)) return std::nullopt;
  // The nonce this exchange made, or (librdkafka 2.0.2) the client's nonce followed by it: that client repeats its own
  // part, and Kafka, which checks only that the nonce ends with the one it made, accepts it. Nothing else.
  const auto echoed = nonce_item.substr(2);
  if (nonce_item.substr(0, 2) != "r=" || (echoed != nonce_ && echoed != client_nonce_ + nonce_)) return std::nullopt;
  const auto proof = unbase64(client_final.substr(proof_at + 3));
  if (!proof || proof->size() != key{}.size()) return std::nullopt;
  std::string auth_message = client_first_bare_;
  auth_message.append(",").append(server_first_).append(",").append(without_proof);
  std::optional<std::size_t> match;
  for (std::size_t c = 0; c < candidates_.size(); ++c) {  // every candidate checked, in constant time each
    const key client_signature = hmac(candidates_[c].stored_key, auth_message);
    key client_key{};
    for (std::size_t i = 0; i < client_key.size(); ++i)
      client_key[i] = static_cast<unsigned char>(static_cast<unsigned char>((*proof)[i]) ^ client_signature[i]);
    const key derived = sha256(client_key);
    if (CRYPTO_memcmp(derived.data(), candidates_[c].stored_key.data(), derived.size()) == 0 && !match) match = c;
  }
  if (!match) return std::nullopt;
  matched_ = *match;
  return "v=" + base64(as_text(hmac(candidates_[*match].server_key, auth_message)));
}

}  // namespace moonmq::kafka::scram
