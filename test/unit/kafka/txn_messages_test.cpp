// Kafka's transaction messages, field by field: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn (v0-1) and
// TxnOffsetCommit (v0-3, flexible in 3), and the bound on how many partitions one request may name.
#include <catch2/catch.hpp>

#include "moonmq/kafka/txn_messages.hpp"

using namespace moonmq;

namespace {
void str(kafka::writer& w, const std::string& s) { w.string(s, false); }
}  // namespace

TEST_CASE("kafka txn messages: AddPartitionsToTxn, AddOffsetsToTxn and EndTxn read the producer and what it names",
          "[kafka]") {
  kafka::writer w;
  str(w, "tx");
  w.i64(42);
  w.i16(3);
  w.array_count(1, false);
  str(w, "t");
  w.array_count(2, false);
  w.i32(0);
  w.i32(5);
  kafka::reader r(w.bytes());
  kafka::add_partitions_to_txn_request a;
  REQUIRE(kafka::decode(r, 1, a));
  CHECK(a.producer.transactional_id == "tx");
  CHECK(a.producer.producer_id == 42);
  CHECK(a.producer.producer_epoch == 3);
  REQUIRE(a.topics.size() == 1);
  CHECK(a.topics[0].partitions == std::vector<std::int32_t>{0, 5});

  kafka::writer e;
  str(e, "tx");
  e.i64(42);
  e.i16(3);
  e.i8(1);
  kafka::reader er(e.bytes());
  kafka::end_txn_request end;
  REQUIRE(kafka::decode(er, 0, end));
  CHECK(end.committed);

  kafka::writer out;
  kafka::add_partitions_to_txn_response resp;
  resp.topics.push_back({"t", {{0, 0}, {5, kafka::error_code::operation_not_attempted}}});
  kafka::encode(out, 1, resp);
  kafka::reader back(out.bytes());
  CHECK(back.i32() == 0);                 // throttle
  CHECK(back.array_count(false) == 1);
  CHECK(back.string(false) == "t");
  CHECK(back.array_count(false) == 2);
  CHECK(back.i32() == 0);
  CHECK(back.i16() == 0);
  CHECK(back.i32() == 5);
  CHECK(back.i16() == kafka::error_code::operation_not_attempted);
  CHECK(back.left() == 0);
}

TEST_CASE("kafka txn messages: TxnOffsetCommit v3 is flexible and carries the member, v2 the leader epoch", "[kafka]") {
  kafka::writer w;
  w.string("tx", true);
  w.string("g", true);
  w.i64(42);
  w.i16(3);
  w.i32(7);                // generation
  w.string("m-1", true);   // member
  w.nullable_string(std::nullopt, true);
  w.array_count(1, true);
  w.string("t", true);
  w.array_count(1, true);
  w.i32(2);
  w.i64(99);
  w.i32(-1);
  w.nullable_string(std::string("meta"), true);
  w.tagged_fields();
  w.tagged_fields();
  w.tagged_fields();
  kafka::reader r(w.bytes());
  kafka::txn_offset_commit_request t;
  REQUIRE(kafka::decode(r, 3, t));
  CHECK(r.left() == 0);
  CHECK(t.group_id == "g");
  CHECK(t.generation_id == 7);
  CHECK(t.member_id == "m-1");
  REQUIRE(t.topics.size() == 1);
  REQUIRE(t.topics[0].partitions.size() == 1);
  CHECK(t.topics[0].partitions[0].offset == 99);
  CHECK(t.topics[0].partitions[0].metadata == std::optional<std::string>("meta"));

  // More partitions than a request may name: malformed.
  kafka::writer big;
  str(big, "tx");
  big.i64(1);
  big.i16(0);
  big.array_count(2, false);
  for (int topic = 0; topic < 2; ++topic) {
    str(big, "t" + std::to_string(topic));
    big.array_count(kafka::max_txn_request_entries / 2 + 1, false);
    for (std::size_t i = 0; i < kafka::max_txn_request_entries / 2 + 1; ++i) big.i32(static_cast<std::int32_t>(i));
  }
  kafka::reader br(big.bytes());
  kafka::add_partitions_to_txn_request too_many;
  CHECK_FALSE(kafka::decode(br, 1, too_many));
}
