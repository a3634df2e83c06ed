// SCRAM-SHA-256's server side (include/moonmq/kafka/scram.hpp) against RFC 7677's example exchange, and what it must
// refuse: a wrong proof, a changed nonce, channel binding, an authorization id that is not the user, malformed
// messages, a replayed final message, and an unknown user (challenged alike, refused at the proof).
#include <catch2/catch.hpp>

#include <vector>

#include "moonmq/kafka/scram.hpp"

using namespace moonmq::kafka;

namespace {

// RFC 7677 section 3: user "user", password "pencil".
const std::string client_first = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
const std::string server_nonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
const std::string server_first =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
const std::string client_final =
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
const std::string server_final = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

scram::credential pencil() { return scram::derive("pencil", *scram::unbase64("W22ZaJ0SNY7soEsUEjb6gQ=="), 4096); }

}  // namespace

TEST_CASE("scram: RFC 7677's exchange is answered byte for byte", "[kafka][scram]") {
  scram::server_exchange x;
  auto user = x.first(client_first);
  REQUIRE(user);
  CHECK(*user == "user");
  CHECK(x.challenge({pencil()}, server_nonce) == server_first);
  auto answer = x.finish(client_final);
  REQUIRE(answer);
  CHECK(*answer == server_final);
  CHECK(x.matched() == 0);
  // One answer per exchange: the same final message again is refused.
  CHECK_FALSE(x.finish(client_final));
}

TEST_CASE("scram: the proof may match any of the user's credentials, and says which", "[kafka][scram]") {
  const auto salt = *scram::unbase64("W22ZaJ0SNY7soEsUEjb6gQ==");
  scram::server_exchange x;
  REQUIRE(x.first(client_first));
  x.challenge({scram::derive("another-password", salt), pencil()}, server_nonce);
  auto answer = x.finish(client_final);
  REQUIRE(answer);
  CHECK(*answer == server_final);
  CHECK(x.matched() == 1);
}

TEST_CASE("scram: a wrong password, a changed nonce or binding, or a cut proof is refused", "[kafka][scram]") {
  auto attempt = [](const scram::credential& c, const std::string& final_message) {
    scram::server_exchange x;
    REQUIRE(x.first(client_first));
    x.challenge({c}, server_nonce);
    return x.finish(final_message).has_value();
  };
  CHECK(attempt(pencil(), client_final));
  const auto salt = *scram::unbase64("W22ZaJ0SNY7soEsUEjb6gQ==");
  CHECK_FALSE(attempt(scram::derive("pencil2", salt), client_final));
  CHECK_FALSE(attempt(scram::derive("pencil", salt, 8192), client_final));
  std::string other_nonce = client_final;
  other_nonce[10] = 'X';
  CHECK_FALSE(attempt(pencil(), other_nonce));
  // librdkafka 2.0.2 repeats its own nonce before the whole one: the proof is over what it sent.
  {
    scram::server_exchange x;
    REQUIRE(x.first(client_first));
    x.challenge({pencil()}, server_nonce);
    CHECK_FALSE(x.finish("c=biws,r=rOprNGfwEbeRWgbNEkqOrOprNGfwEbeRWgbNEkqO" + server_nonce + ",p=AAAA"));
  }
  // A nonce that merely ends with this exchange's (which Kafka would take) is refused.
  CHECK_FALSE(attempt(pencil(), "c=biws,r=zzrOprNGfwEbeRWgbNEkqO" + server_nonce +
                                    ",p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="));
  // Only the client's part of the nonce: the server's part is missing.
  CHECK_FALSE(attempt(pencil(), "c=biws,r=rOprNGfwEbeRWgbNEkqO,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="));
  std::string binding = client_final;
  binding.replace(0, 6, "c=eSws");  // "y,,": a client that could bind a channel
  CHECK_FALSE(attempt(pencil(), binding));
  CHECK_FALSE(attempt(pencil(), client_final.substr(0, client_final.size() - 4)));
  CHECK_FALSE(attempt(pencil(), client_final.substr(0, client_final.find(",p="))));
  std::string flipped = client_final;
  flipped[flipped.size() - 3] = flipped[flipped.size() - 3] == 'A' ? 'B' : 'A';
  CHECK_FALSE(attempt(pencil(), flipped));
}

TEST_CASE("scram: client-first messages that ask for what is not offered, or are malformed, are refused",
          "[kafka][scram]") {
  auto user_of = [](const std::string& message) { return scram::server_exchange{}.first(message); };
  CHECK(user_of("n,,n=user,r=abc") == std::optional<std::string>("user"));
  CHECK(user_of("n,a=user,n=user,r=abc") == std::optional<std::string>("user"));
  CHECK(user_of("n,,n=a=2Cb=3Dc,r=abc") == std::optional<std::string>("a,b=c"));  // escaped name
  CHECK_FALSE(user_of("n,a=admin,n=user,r=abc"));  // authorization id other than the user
  CHECK_FALSE(user_of("y,,n=user,r=abc"));
  CHECK_FALSE(user_of("p=tls-unique,,n=user,r=abc"));
  CHECK_FALSE(user_of("n,,n=user"));
  CHECK_FALSE(user_of("n,,r=abc,n=user"));
  CHECK_FALSE(user_of("n,,n=,r=abc"));
  CHECK_FALSE(user_of("n,,n=us=er,r=abc"));  // '=' not escaped
  CHECK_FALSE(user_of("n,,n=user,r="));
  CHECK_FALSE(user_of(std::string("n,,n=user,r=a\x01", 14)));
  CHECK_FALSE(user_of(""));
  // A final message before any challenge.
  scram::server_exchange x;
  CHECK_FALSE(x.finish(client_final));
}

TEST_CASE("scram: an unknown user is challenged like a known one and fails at the proof", "[kafka][scram]") {
  const auto a = scram::unknown_user("mallory", "secret");
  const auto b = scram::unknown_user("mallory", "secret");
  CHECK(a.salt == b.salt);  // a second try sees the same salt, as it would for a real user
  CHECK(a.salt.size() == 16);
  CHECK(a.iterations == scram::default_iterations);
  CHECK(scram::unknown_user("trudy", "secret").salt != a.salt);
  scram::server_exchange x;
  REQUIRE(x.first("n,,n=mallory,r=rOprNGfwEbeRWgbNEkqO"));
  const auto challenge = x.challenge({a}, server_nonce);
  CHECK(challenge.starts_with("r=rOprNGfwEbeRWgbNEkqO" + server_nonce + ",s="));
  CHECK(challenge.ends_with(",i=4096"));
  CHECK_FALSE(x.finish(client_final));
}

TEST_CASE("scram: base64 round-trips and refuses what is not base64", "[kafka][scram]") {
  for (const std::string bytes : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)})
    CHECK(scram::unbase64(scram::base64(bytes)) == std::optional<std::string>(bytes));
  CHECK(scram::base64("n,,") == "biws");
  CHECK_FALSE(scram::unbase64("abc"));
  CHECK_FALSE(scram::unbase64("ab=c"));
  CHECK_FALSE(scram::unbase64("a==="));
  CHECK_FALSE(scram::unbase64("ab,c"));
}
