// The fetch front end on a thread that must not wait (frontend::fetch_request::never_wait, the Kafka listener's
// reactor): it answers exactly what a fetch that may wait answers, and refuses (errc::would_block) where it would
// wait for the brokers or for the producer table to read the log, instead of waiting.
#include <catch2/catch.hpp>

#include "support/in_process_cluster.hpp"

using namespace moonmq;
using namespace moonmq::test;

TEST_CASE("fetch front end: a fetch that must not wait answers as one that may, and refuses where it would wait",
          "[frontend]") {
  in_process_cluster c(3, 4096);
  const topic_partition tp{"orders", 0};
  REQUIRE(c[1].store.ensure_topic("orders", 1));
  for (int i = 0; i < 5; ++i) REQUIRE(c.produce(1, tp, {rec(std::string(100, 'a' + i))}));
  auto here = c[1].fetch_frontend();
  for (const bool read_committed : {false, true}) {
    INFO("read_committed " << read_committed);
    auto at_once = here.fetch({tp, 1, 1 << 20, read_committed, false, true});
    auto waiting = here.fetch({tp, 1, 1 << 20, read_committed});
    REQUIRE(waiting);
    REQUIRE(at_once);
    CHECK(at_once->offset == waiting->offset);
    CHECK(at_once->read.bytes.view() == waiting->read.bytes.view());
    CHECK(at_once->records.size() == 4);
    CHECK(at_once->next_offset == waiting->next_offset);
    CHECK(at_once->last_stable_offset == waiting->last_stable_offset);
  }
  // Bytes the producer table has not read (a copied batch): read_committed would have it read them first.
  REQUIRE(c[1].store.append_at(tp, *c[1].store.end_offset(tp), storage::encode_frame(rec("copied"))));
  CHECK(here.fetch({tp, 0, 1 << 20, true, false, true}).code() == errc::would_block);
  CHECK(here.fetch({tp, 0, 1 << 20, false, false, true}));  // read_uncommitted needs no table
  REQUIRE(here.fetch({tp, 0, 1 << 20, true}));             // a thread that may wait reads them
  CHECK(here.fetch({tp, 0, 1 << 20, true, false, true}));
  // A broker that does not hold the topic would ask the brokers who serves it.
  CHECK(c[2].fetch_frontend().fetch({tp, 0, 1 << 20, false, false, true}).code() == errc::would_block);
}
