// The one JSON reader: no input exhausts the stack, and what the project refuses is refused with its place named.
#include <catch2/catch.hpp>

#include "json/parse.hpp"

using namespace moonmq;

namespace {

status parse(const std::string& text) {
  rapidjson::Document d;
  return json::parse_document(text, d, "body");
}

}  // namespace

TEST_CASE("json: nesting of any depth is refused without recursion, within the limit it is read", "[json]") {
  for (const std::string open : {"[", "{\"a\":"}) {
    std::string text;  // 1 MB of it
    while (text.size() < (1u << 20)) text += open;
    auto s = parse(text);
    REQUIRE_FALSE(s);
    CHECK(s.code() == errc::invalid_argument);
    CHECK_THAT(s.message(), Catch::Contains("nested deeper than 64"));
  }
  std::string deep(64, '[');
  deep += std::string(64, ']');
  CHECK(parse(deep));
  CHECK_FALSE(parse("[" + deep + "]"));
}

TEST_CASE("json: a key repeated in one object is refused naming it, the same key in two objects is fine", "[json]") {
  auto s = parse(R"({"topic":"a","records":[{"value":"x","value":"y"}]})");
  REQUIRE_FALSE(s);
  CHECK_THAT(s.message(), Catch::Contains("key 'value' appears twice"));
  CHECK_THAT(s.message(), Catch::Contains("records[0]"));
  CHECK(parse(R"({"a":{"k":1},"b":{"k":2},"c":[{"k":1},{"k":2}]})"));
}

TEST_CASE("json: invalid UTF-8 is refused naming the field", "[json]") {
  auto s = parse("{\"records\":[{\"value\":\"ok\"},{\"value\":\"bad \xff\xfe\"}]}");
  REQUIRE_FALSE(s);
  CHECK_THAT(s.message(), Catch::Contains("'records[1].value' is not valid UTF-8"));
  CHECK(parse("{\"value\":\"caf\xc3\xa9 \xe2\x82\xac\"}"));  // valid multi-byte text
  // An escape that makes a lone surrogate is not UTF-8 either (RapidJSON lets it through on its own).
  auto surrogate = parse(R"({"group":"a\udc00b"})");
  REQUIRE_FALSE(surrogate);
  CHECK_THAT(surrogate.message(), Catch::Contains("'group' is not valid UTF-8"));
  CHECK(parse(R"({"emoji":"\ud83d\ude00"})"));  // a pair is fine
}

TEST_CASE("json: a repeated key is found in an object of any size", "[json]") {
  std::string big = "{";
  for (int i = 0; i < 5000; ++i) big += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  CHECK(parse(big + "\"last\":0}"));
  auto dup = parse(big + "\"k4321\":0}");
  REQUIRE_FALSE(dup);
  CHECK_THAT(dup.message(), Catch::Contains("appears twice"));
}

TEST_CASE("json: text that is not one JSON value is refused with its byte offset", "[json]") {
  for (const char* bad : {"", "{", "{\"a\":1} trailing", "[1,]", "nul", "\"unterminated"}) {
    INFO(bad);
    auto s = parse(bad);
    REQUIRE_FALSE(s);
    CHECK_THAT(s.message(), Catch::StartsWith("body: not valid JSON at byte"));
  }
  rapidjson::Document d;
  CHECK_FALSE(json::parse_object("[1,2]", d));
  CHECK(json::parse_object("{\"a\":[1,2]}", d));
  CHECK(d["a"].Size() == 2);
}
