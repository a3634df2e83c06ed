#include "moonmq/core/fault_points.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <iterator>

using namespace moonmq;

namespace {
/// Clears the configuration when a test ends, also on failure (other tests run in the same process).
struct cleared {
  ~cleared() { faults::clear(); }
};
}  // namespace

TEST_CASE("fault points: the spec is parsed strictly and nothing changes on a mistake", "[faults]") {
  cleared guard;
  REQUIRE(faults::compiled_in());  // the test build carries them
  REQUIRE(faults::configure("txn.after_prepare=error"));
  for (const char* bad : {"txn.after_prepar=error", "txn.after_prepare", "txn.after_prepare=explode",
                          "txn.after_prepare=pause=", "txn.after_prepare=pause=x", "txn.after_prepare=error@0",
                          "txn.after_prepare=error@", "txn.after_prepare=pause=3600001"}) {
    INFO(bad);
    auto s = faults::configure(bad);
    CHECK(s.code() == errc::invalid_argument);
  }
  CHECK_THAT(faults::configure("reassigner.after_cpoy=crash").message(),
             Catch::Contains("unknown fault point 'reassigner.after_cpoy'"));
  // The earlier configuration still holds.
  CHECK(faults::hit("txn.after_prepare").code() == errc::io_error);
  // Empty items and an empty spec are fine.
  CHECK(faults::configure(",,"));
  CHECK(faults::hit("txn.after_prepare"));
}

TEST_CASE("fault points: error fires on every hit or only the N-th, and hits are counted", "[faults]") {
  cleared guard;
  REQUIRE(faults::configure("log.before_fsync=error@3,raft.before_send=pause=1"));
  CHECK(faults::hit("log.before_fsync"));
  CHECK(faults::hit("log.before_fsync"));
  auto third = faults::hit("log.before_fsync");
  CHECK(third.code() == errc::io_error);
  CHECK_THAT(third.message(), Catch::Contains("log.before_fsync"));
  CHECK(faults::hit("log.before_fsync"));
  CHECK(faults::hits("log.before_fsync") == 4);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(faults::hit("raft.before_send"));
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(1));
  CHECK(faults::hits("txn.after_prepare") == 0);  // hit by nobody
  faults::clear();
  CHECK(faults::hits("log.before_fsync") == 0);
  CHECK(faults::hit("log.before_fsync"));
}

TEST_CASE("fault points: every name is documented", "[faults]") {
  std::ifstream doc(MOONMQ_SOURCE_DIR "/docs/fault-points.md");
  REQUIRE(doc);
  const std::string text((std::istreambuf_iterator<char>(doc)), std::istreambuf_iterator<char>());
  for (auto name : faults::names) {
    INFO(name);
    CHECK(text.find("`" + std::string(name) + "`") != std::string::npos);
  }
}
