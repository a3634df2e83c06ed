#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "moonmq/core/crc32c.hpp"

TEST_CASE("crc32c matches the standard check value", "[crc32c]") {
  CHECK(moonmq::crc32c("123456789") == 0xE3069283u);
  CHECK(moonmq::crc32c("") == 0u);
}

TEST_CASE("the instruction and the table agree on every length and alignment", "[crc32c]") {
  std::mt19937 rng(3);
  std::string data(300, '\0');
  for (auto& c : data) c = static_cast<char>(rng());
  for (std::size_t start = 0; start < 9; ++start)
    for (std::size_t len = 0; len + start <= data.size(); len += 7)
      REQUIRE(moonmq::crc32c_extend(0, data.data() + start, len) ==
              moonmq::crc32c_extend_portable(0, data.data() + start, len));
}

TEST_CASE("crc32c can be extended piecewise", "[crc32c]") {
  std::string a = "hello, ", b = "world";
  CHECK(moonmq::crc32c_extend(moonmq::crc32c(a), b.data(), b.size()) == moonmq::crc32c(a + b));
}

TEST_CASE("the instruction's three blocks at a time agree with the table, from any starting value", "[crc32c]") {
  // Three blocks run side by side from 768 bytes (3 x 256) and from 12 KiB (3 x 4096) on; lengths around both.
  std::mt19937 rng(5);
  std::string data(50'000, '\0');
  for (auto& c : data) c = static_cast<char>(rng());
  for (std::size_t len : {767u, 768u, 769u, 1024u, 1031u, 12'287u, 12'288u, 12'289u, 25'000u, 49'990u})
    for (std::size_t start : {0u, 3u, 8u})
      for (std::uint32_t from : {0u, 0xdeadbeefu}) {
        INFO("length " << len << " from byte " << start);
        REQUIRE(moonmq::crc32c_extend(from, data.data() + start, len) ==
                moonmq::crc32c_extend_portable(from, data.data() + start, len));
      }
}
