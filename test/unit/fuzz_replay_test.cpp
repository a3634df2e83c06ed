// Every checked-in fuzz input (the seed corpora, and every crash a fuzz run found, kept in fuzz/corpus as a
// regression) goes through its target on every test run, under the sanitizers too (make sanitize).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "targets/targets.hpp"

TEST_CASE("fuzz corpora: every checked-in input passes through its target", "[fuzz]") {
  namespace fs = std::filesystem;
  std::size_t replayed = 0;
  for (const auto& t : moonmq::fuzz::all_targets) {
    const fs::path dir = fs::path(MOONMQ_FUZZ_CORPUS) / std::string(t.name);
    INFO(dir.string());
    REQUIRE(fs::is_directory(dir));
    std::size_t here = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
      std::ifstream in(entry.path(), std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      INFO(entry.path().string());
      CHECK(t.run(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()) == 0);
      ++here;
    }
    CHECK(here >= 2);  // every target has seeds
    replayed += here;
  }
  CHECK(replayed >= 14);
}
