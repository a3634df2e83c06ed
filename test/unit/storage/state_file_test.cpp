#include <catch2/catch.hpp>

#include <fstream>

#include "moonmq/storage/file_state_file.hpp"
#include "support/process.hpp"

using namespace moonmq;
using namespace moonmq::storage;

TEST_CASE("a state file that was never written reads as absent", "[state_file]") {
  test::temp_dir dir;
  auto f = make_file_state_file(dir.path() + "/doc.json");
  auto r = f->read();
  REQUIRE(r);
  CHECK_FALSE(r->has_value());
}

TEST_CASE("a replaced state file reads back the new document", "[state_file]") {
  test::temp_dir dir;
  auto f = make_file_state_file(dir.path() + "/doc.json");
  REQUIRE(f->replace("one"));
  REQUIRE(f->replace("two"));
  CHECK(**f->read() == "two");
  CHECK(test::slurp(dir.path() + "/doc.json") == "two");
  CHECK_FALSE(std::ifstream(dir.path() + "/doc.json.tmp").good());  // the temp file was renamed away
}

TEST_CASE("a temp file left by a crash before the rename does not replace the document", "[state_file][crash]") {
  test::temp_dir dir;
  auto f = make_file_state_file(dir.path() + "/doc.json");
  REQUIRE(f->replace("acknowledged"));
  std::ofstream(dir.path() + "/doc.json.tmp") << "half-writ";
  auto reopened = make_file_state_file(dir.path() + "/doc.json");
  CHECK(**reopened->read() == "acknowledged");
  REQUIRE(reopened->replace("next"));
  CHECK(**reopened->read() == "next");
}

TEST_CASE("a state file in a missing directory fails with an error naming it", "[state_file]") {
  test::temp_dir dir;
  auto f = make_file_state_file(dir.path() + "/nope/doc.json");
  auto s = f->replace("x");
  CHECK_FALSE(s);
  CHECK_THAT(s.message(), Catch::Contains(dir.path() + "/nope/doc.json.tmp"));
}
