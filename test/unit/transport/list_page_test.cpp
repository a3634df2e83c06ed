#include "moonmq/transport/list_page.hpp"

#include <catch2/catch.hpp>

using moonmq::transport::list_page;

TEST_CASE("list page: limit defaults, bounds and refusals, and after is any name", "[transport][list_page]") {
  auto p = list_page::from({});
  REQUIRE(p);
  CHECK(p->limit == list_page::default_limit);
  CHECK(p->after.empty());
  p = list_page::from({{"limit", "3"}, {"after", "g 1"}});
  REQUIRE(p);
  CHECK(p->limit == 3);
  CHECK(p->after == "g 1");
  CHECK(list_page::from({{"limit", "10000"}}));
  for (const char* bad : {"0", "10001", "-1", "", "3x", "1e3", "99999999999999999999999"})
    CHECK_FALSE(list_page::from({{"limit", bad}}));
  // As a peer is asked: the same page back.
  auto again = list_page::from(p->params());
  REQUIRE(again);
  CHECK(again->limit == 3);
  CHECK(again->after == "g 1");
}
