#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

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

TEST_CASE("folding agrees with the instruction and the table around each of its steps", "[crc32c]") {
  // Folding runs from 256 bytes: 256-byte steps, then 64-, then 16-byte ones, then the instruction for the last bytes.
  std::mt19937 rng(7);
  std::string data(70'100, '\0');  // the longest length from the furthest start
  for (auto& c : data) c = static_cast<char>(rng());
  std::vector<std::size_t> lengths{255, 256, 257, 263, 264, 271, 272, 287, 319, 320, 335, 511, 512, 513, 767, 1040,
                                   1088, 4095, 4096, 4097, 65'536, 69'990};
  for (std::size_t len = 256; len < 900; len += 5) lengths.push_back(len);
  for (std::size_t len : lengths)
    for (std::size_t start : {0u, 1u, 7u, 8u, 63u})
      for (std::uint32_t from : {0u, 0xdeadbeefu, 0xffffffffu}) {
        INFO("length " << len << " from byte " << start << " starting at " << from);
        const auto want = moonmq::crc32c_extend_portable(from, data.data() + start, len);
        REQUIRE(moonmq::crc32c_extend(from, data.data() + start, len) == want);
        REQUIRE(moonmq::crc32c_extend_instruction(from, data.data() + start, len) == want);
      }
}

TEST_CASE("crc32c_many agrees with one buffer at a time, for short, long and mixed buffers", "[crc32c]") {
  std::mt19937 rng(11);
  std::string data(20'000, '\0');
  for (auto& c : data) c = static_cast<char>(rng());
  const std::vector<std::vector<std::size_t>> groups{
      {1040, 1040, 1040, 1040}, {300, 256, 4000, 999}, {13, 1040, 7, 300}, {0, 5, 17, 64}, {2000}, {255, 256, 257},
      {100, 1040, 64, 700}};  // the last: four at a time for 64 bytes, then each on its own, folding from there
  for (const auto& sizes : groups) {
    std::vector<const void*> at;
    std::size_t offset = 3;
    for (std::size_t n : sizes) {
      at.push_back(data.data() + offset);
      offset += n + 1;
    }
    std::vector<std::uint32_t> got(sizes.size());
    moonmq::crc32c_many(at.data(), sizes.data(), got.data(), sizes.size());
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      INFO("buffer " << i << " of " << sizes.size() << ", " << sizes[i] << " bytes");
      REQUIRE(got[i] == moonmq::crc32c_extend_portable(0, at[i], sizes[i]));
    }
  }
}
