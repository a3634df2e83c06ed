// Raft messages and proposals on the wire: what is written reads back the same, and a malformed body is refused with
// an error naming the field at fault (the Raft routes answer 400 with it).
#include <catch2/catch.hpp>

#include "raft/message_json.hpp"

using namespace moonmq;
using namespace moonmq::raft;

namespace {

message sample() {
  message m;
  m.type = message_type::append;
  m.from = "b1";
  m.to = "b2";
  m.term = 7;
  m.prev_index = 41;
  m.prev_term = 6;
  m.commit = 40;
  m.entries = {{7, 42, entry_kind::owner, R"({"topic":"orders","partition":3,"broker":"b2"})"},
               {7, 43, entry_kind::controller, "b1"}};
  m.snap = snapshot{30, 5, "{\"owners\":[]}"};
  return m;
}

std::string refusal(const std::string& body) {
  auto m = wire::decode(body);
  return m ? std::string("accepted") : m.message();
}

/// The sample's JSON with `from` replaced by `to` (exactly once).
std::string altered(const std::string& from, const std::string& to) {
  std::string body = wire::encode(sample());
  const auto at = body.find(from);
  REQUIRE(at != std::string::npos);
  return body.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("raft wire: a message with entries and a snapshot reads back the same", "[raft][wire]") {
  const message m = sample();
  auto back = wire::decode(wire::encode(m));
  REQUIRE(back);
  CHECK(back->type == m.type);
  CHECK(back->from == "b1");
  CHECK(back->to == "b2");
  CHECK(back->term == 7);
  CHECK(back->prev_index == 41);
  CHECK(back->commit == 40);
  CHECK(back->entries == m.entries);
  CHECK(back->snap == m.snap);
  message vote;
  vote.type = message_type::pre_vote_reply;
  vote.accepted = true;
  auto v = wire::decode(wire::encode(vote));
  REQUIRE(v);
  CHECK(v->type == message_type::pre_vote_reply);
  CHECK(v->accepted);
  CHECK_FALSE(v->snap);
}

TEST_CASE("raft wire: a malformed message is refused naming the field", "[raft][wire]") {
  CHECK_THAT(refusal("{oops"), Catch::Contains("not valid JSON"));
  CHECK_THAT(refusal("[]"), Catch::Contains("expected an object"));
  CHECK_THAT(refusal(altered("\"append\"", "\"gossip\"")),
             Catch::Contains("type: 'gossip' is not a Raft message type"));
  CHECK_THAT(refusal(altered("\"term\":7,", "\"term\":-7,")), Catch::Contains("term: expected a whole number"));
  CHECK_THAT(refusal(altered("\"commit\":40,", "")), Catch::Contains("commit: is required"));
  CHECK_THAT(refusal(altered("\"accepted\":false", "\"accepted\":0")), Catch::Contains("accepted:"));
  CHECK_THAT(refusal(altered("\"kind\":2", "\"kind\":9")), Catch::Contains("entries[0].kind: expected 1"));
  CHECK_THAT(refusal(altered("\"index\":43", "\"index\":\"43\"")), Catch::Contains("entries[1].index:"));
  CHECK_THAT(refusal(altered("\"data\":\"b1\"", "\"data\":\"b1\",\"extra\":1")),
             Catch::Contains("entries[1].extra: unknown key"));
  CHECK_THAT(refusal(altered("\"snapshot\":{\"index\":30", "\"snapshot\":{\"index\":true")),
             Catch::Contains("snapshot.index:"));
  CHECK_THAT(refusal(altered("\"entries\":[", "\"entries\":7,\"x\":[")), Catch::Contains("entries: expected an array"));
}

TEST_CASE("raft wire: proposals and the leader's answer read back, and bad ones name the field", "[raft][wire]") {
  auto p = wire::decode_proposal(wire::encode(wire::proposal{entry_kind::owner, "{\"topic\":\"t\"}"}));
  REQUIRE(p);
  CHECK(p->kind == entry_kind::owner);
  CHECK(p->data == "{\"topic\":\"t\"}");
  CHECK_THAT(wire::decode_proposal(R"({"kind":4,"data":""})").message(), Catch::Contains("kind: expected 1"));
  CHECK_THAT(wire::decode_proposal(R"({"kind":1})").message(), Catch::Contains("data: is required"));
  CHECK_THAT(wire::decode_proposal(R"({"kind":1,"data":"x","more":1})").message(),
             Catch::Contains("more: unknown key"));
  auto i = wire::decode_appended(wire::encode_appended(12345678901234ull));
  REQUIRE(i);
  CHECK(*i == 12345678901234ull);
  CHECK_FALSE(wire::decode_appended(R"({"index":-1})"));
}
