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
