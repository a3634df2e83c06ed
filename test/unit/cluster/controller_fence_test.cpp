#include <catch2/catch.hpp>

#include <fstream>

#include "moonmq/cluster/file_controller_fence.hpp"
#include "moonmq/storage/file_state_file.hpp"
#include "support/process.hpp"

using namespace moonmq;
using namespace moonmq::cluster;

namespace {

std::unique_ptr<controller_fence> open_at(const std::string& dir, const std::string& self) {
  auto f = open_file_controller_fence(broker_id(self), storage::make_file_state_file(dir + "/controller-epoch.json"));
  REQUIRE(f);
  return std::move(*f);
}

controller_claim claim_of(std::uint64_t e, const std::string& id) { return {epoch(e), broker_id(id)}; }

}  // namespace

TEST_CASE("fence: a claim takes the next epoch above the highest seen", "[fence]") {
  test::temp_dir dir;
  auto f = open_at(dir.path(), "b1");
  CHECK(f->highest().claim_epoch == epoch(0));
  CHECK(*f->claim() == epoch(1));
  REQUIRE(*f->observe(claim_of(5, "b2")));
  CHECK(*f->claim() == epoch(6));
  CHECK(*f->own_claim() == claim_of(6, "b1"));
}

TEST_CASE("fence: an older epoch is refused and a newer one is observed", "[fence]") {
  test::temp_dir dir;
  auto f = open_at(dir.path(), "b3");
  REQUIRE(f->check(claim_of(4, "b1")));
  CHECK(f->highest() == claim_of(4, "b1"));
  REQUIRE(f->check(claim_of(4, "b1")));  // the same claim again: admitted
  auto stale = f->check(claim_of(3, "b2"));
  CHECK(stale.code() == errc::conflict);
  CHECK_THAT(stale.message(), Catch::Contains("older than epoch 4"));
  REQUIRE(f->check(claim_of(9, "b2")));
  CHECK(f->check(claim_of(4, "b1")).code() == errc::conflict);
}

TEST_CASE("fence: equal epochs are ordered by controller id", "[fence]") {
  test::temp_dir dir;
  auto f = open_at(dir.path(), "b9");
  REQUIRE(f->check(claim_of(2, "b2")));
  auto tie = f->check(claim_of(2, "b1"));
  CHECK(tie.code() == errc::conflict);
  // Not "epoch 2 is older than epoch 2": the refusal says why an equal epoch loses.
  CHECK_THAT(tie.message(), Catch::Contains("loses to b2's claim of the same epoch"));
  CHECK(f->check(claim_of(2, "b3")));
}

TEST_CASE("fence: a claimant that has seen a newer claim knows it was superseded", "[fence]") {
  test::temp_dir dir;
  auto f = open_at(dir.path(), "b1");
  CHECK_FALSE(f->superseded());  // never claimed
  REQUIRE(f->claim());
  CHECK_FALSE(f->superseded());
  CHECK_FALSE(*f->observe(claim_of(1, "a0")));  // older: ignored
  CHECK_FALSE(f->superseded());
  REQUIRE(*f->observe(claim_of(2, "b2")));
  CHECK(f->superseded());
}

TEST_CASE("fence: the highest epoch survives a restart", "[fence]") {
  test::temp_dir dir;
  {
    auto f = open_at(dir.path(), "b1");
    REQUIRE(f->claim());
    REQUIRE(f->check(claim_of(7, "b2")));
  }
  auto f = open_at(dir.path(), "b1");
  CHECK(f->highest() == claim_of(7, "b2"));
  CHECK_FALSE(f->own_claim().has_value());  // a restarted broker must claim again
  CHECK(f->check(claim_of(6, "b1")).code() == errc::conflict);
  CHECK(*f->claim() == epoch(8));
}

TEST_CASE("fence: a claim that could not be persisted is not made", "[fence]") {
  auto file = std::make_unique<storage::memory_state_file>("controller-epoch.json");
  auto* raw = file.get();
  auto f = open_file_controller_fence(broker_id("b1"), std::move(file));
  REQUIRE(f);
  raw->fail_next_replace();
  CHECK_FALSE((*f)->claim());
  CHECK_FALSE((*f)->own_claim().has_value());
  CHECK((*f)->highest().claim_epoch == epoch(0));
}

TEST_CASE("fence: a corrupt epoch file stops start-up", "[fence][crash]") {
  test::temp_dir dir;
  std::ofstream(dir.path() + "/controller-epoch.json") << "{\"epoch\": -3, \"controller\": \"b1\"}";
  auto f =
      open_file_controller_fence(broker_id("b1"), storage::make_file_state_file(dir.path() + "/controller-epoch.json"));
  REQUIRE_FALSE(f);
  CHECK(f.code() == errc::corrupt);
  CHECK_THAT(f.message(), Catch::Contains("controller-epoch.json"));
}

TEST_CASE("fence: an epoch never wraps: claims above the highest there may be are refused, and at it claims stop",
          "[fence]") {
  test::temp_dir dir;
  auto f = open_at(dir.path(), "b1");
  auto above = f->check(claim_of(max_controller_epoch + 1, "b2"));
  CHECK(above.code() == errc::invalid_argument);
  CHECK(f->highest().claim_epoch == epoch(0));
  REQUIRE(f->check(claim_of(max_controller_epoch, "b2")));
  auto next = f->claim();
  REQUIRE_FALSE(next);
  CHECK_THAT(next.message(), Catch::Contains("never wraps"));
  CHECK(f->highest().claim_epoch == epoch(max_controller_epoch));  // and it survives a restart as it was
  CHECK(open_at(dir.path(), "b1")->highest().claim_epoch == epoch(max_controller_epoch));
}
