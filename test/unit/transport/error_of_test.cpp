// A peer's refusal read back as an error, one way for every caller.
#include <catch2/catch.hpp>

#include "moonmq/transport/message.hpp"

using namespace moonmq;
using transport::error_of;
using transport::response;

TEST_CASE("error_of: the body's code when the status agrees, else the status's, and no answer is unavailable",
          "[transport]") {
  // A code this side knows, with its own status: taken, with the body's message.
  auto fenced = error_of({409, R"({"error":"producer_fenced","message":"epoch 3 < 4"})"});
  CHECK(fenced.code == errc::producer_fenced);
  CHECK(fenced.message == "epoch 3 < 4");
  // A name this side does not know: the status decides.
  CHECK(error_of({409, R"({"error":"stale_member_epoch","message":"m"})"}).code == errc::conflict);
  CHECK(error_of({404, R"({"error":"unknown_member","message":"m"})"}).code == errc::not_found);
  CHECK(error_of({503, R"({"error":"coordinator_unavailable","message":"m"})"}).code == errc::unavailable);
  // A known name under another status is not believed: the status decides.
  CHECK(error_of({500, R"({"error":"producer_fenced"})"}).code == errc::internal);
  // Statuses alone, and bodies that are not JSON (kept as the message).
  CHECK(error_of({400, "bad"}).code == errc::invalid_argument);
  CHECK(error_of({416, ""}).code == errc::offset_out_of_range);
  CHECK(error_of({421, ""}).code == errc::not_owner);
  CHECK(error_of({429, ""}).code == errc::resource_exhausted);
  CHECK(error_of({502, "gateway"}).message == "gateway");
  auto silent = error_of({0, "peer b2: partitioned"});
  CHECK(silent.code == errc::unavailable);
  CHECK(silent.message == "peer b2: partitioned");
}
