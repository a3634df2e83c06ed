#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <csignal>

int main(int argc, char* argv[]) {
  // A peer that resets a TLS connection must fail the request, not kill the test run (OpenSSL writes with write()).
  std::signal(SIGPIPE, SIG_IGN);
  return Catch::Session().run(argc, argv);
}
