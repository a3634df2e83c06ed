// json::put writes each member with the JSON type of its value; a string literal stays a string (it would otherwise
// convert to bool).
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

#include "json/writer.hpp"

using namespace moonmq;

TEST_CASE("json put: every value type keeps its JSON type", "[json]") {
  const std::string text = json::object([](json::writer& w) {
    json::put(w, "literal", "yes");
    json::put(w, "string", std::string("s"));
    json::put(w, "flag", true);
    json::put(w, "small", static_cast<std::int32_t>(-5));
    json::put(w, "count", static_cast<std::uint32_t>(7));
    json::put(w, "big", std::numeric_limits<std::uint64_t>::max());
    json::put(w, "ratio", 0.5);
  });
  CHECK(text ==
        R"({"literal":"yes","string":"s","flag":true,"small":-5,"count":7,"big":18446744073709551615,"ratio":0.5})");
}
