// Multi-process tests driven by fault points (docs/fault-points.md): a real moonmqd crashes at a named step of a move,
// exactly there, and after its restart the partition has one server and every acknowledged record.
#include <catch2/catch.hpp>

#include <filesystem>
#include <rapidjson/document.h>

#include <thread>

#include "moonmq/core/fault_points.hpp"
#include "support/daemon_process.hpp"
#include "support/e2e_cluster.hpp"
#include "support/eventually.hpp"

using namespace moonmq::test;
using namespace std::chrono_literals;

namespace {

/// Partition 0 on `b`: the status of its first read (200 when `b` serves it) and the records (offset, value).
std::pair<int, std::vector<std::pair<std::uint64_t, std::string>>> read_partition(const moonmqd_process& b) {
  std::vector<std::pair<std::uint64_t, std::string>> out;
  auto c = b.api();
  c.set_connection_timeout(1s);
  std::uint64_t offset = 0;
  for (;;) {
    auto r = c.Get(("/v1/topics/t/partitions/0/records?max_bytes=1048576&offset=" + std::to_string(offset)).c_str());
    if (!r) return {0, {}};
    if (r->status != 200) return {r->status, {}};
    auto d = parse(r->body);
    for (const auto& rec : d["records"].GetArray()) out.emplace_back(rec["offset"].GetUint64(), rec["value"].GetString());
    if (d["next_offset"].GetUint64() == offset || d["next_offset"].GetUint64() == d["end_offset"].GetUint64()) break;
    offset = d["next_offset"].GetUint64();
  }
  return {200, out};
}

/// Produces `values` to t-0 through `b`; the acknowledged (offset, value) pairs.
std::vector<std::pair<std::uint64_t, std::string>> produce(const moonmqd_process& b, const std::vector<std::string>& values) {
  std::string body = "{\"partition\":0,\"records\":[";
  for (std::size_t i = 0; i < values.size(); ++i) body += (i ? "," : "") + std::string("{\"value\":\"") + values[i] + "\"}";
  auto r = b.api().Post("/v1/topics/t/records", body + "]}", "application/json");
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  auto d = parse(r->body);
  std::vector<std::pair<std::uint64_t, std::string>> acked;
  for (rapidjson::SizeType i = 0; i < d["offsets"].Size(); ++i) acked.emplace_back(d["offsets"][i].GetUint64(), values[i]);
  return acked;
}

/// Two brokers; b1 holds 20 batches of topic t (returned as acknowledged) and crashes at `step` of a move to b2.
/// Returns after b1 is gone, with its faults cleared for the restart.
std::vector<std::pair<std::uint64_t, std::string>> crash_source_at(const char* step, moonmqd_process& b1,
                                                                   moonmqd_process& b2, int* signal_out) {
  b1.configure({&b1, &b2});
  b2.configure({&b1, &b2});
  b1.faults = std::string(step) + "=crash";
  b1.start();
  b2.start();
  REQUIRE(b1.api().Post("/v1/topics", R"({"name":"t","partitions":1,"placement":"local"})", "application/json")->status == 200);
  std::vector<std::pair<std::uint64_t, std::string>> acked;
  for (int i = 0; i < 20; ++i) {
    auto more = produce(b1, {"a" + std::to_string(i) + std::string(2000, 'x'), "b" + std::to_string(i)});
    acked.insert(acked.end(), more.begin(), more.end());
  }
  REQUIRE(b1.api().Post("/v1/reassignments", R"({"topic":"t","partition":0,"dest":"b2"})", "application/json"));
  REQUIRE(b1.wait_for_end(std::chrono::seconds(20), signal_out));  // it stopped at the step, as kill -9 would
  b1.faults.clear();
  return acked;
}

}  // namespace

TEST_CASE("e2e fault points: the source crashes at each step of a move, and after its restart the partition has exactly "
          "one server, which holds every acknowledged record and takes new ones",
          "[e2e][crash][faults]") {
  REQUIRE(moonmq::faults::compiled_in());
  // Each step, and who must serve after recovery: the source until the drain is journaled (an undecided or
  // undrained cutover is rolled back), the destination from then on (the move only goes forward).
  const std::pair<const char*, const char*> steps[] = {
      {"reassigner.after_reserve", "b1"}, {"reassigner.after_copy", "b1"},  {"reassigner.before_cutover", "b1"},
      {"reassigner.after_cutover", "b1"}, {"reassigner.after_drain", "b2"}, {"reassigner.before_confirm", "b2"},
      {"reassigner.after_confirm", "b2"}};
  for (const auto& [step, server] : steps) {
    DYNAMIC_SECTION(step) {
      temp_dir dir;
      moonmqd_process b1("b1", dir.path()), b2("b2", dir.path());
      int sig = 0;
      auto acked = crash_source_at(step, b1, b2, &sig);
      CHECK(sig == SIGKILL);
      // What recovery decides, alone: the hand-driven move is not resumed here (as a move the balance loop started
      // is not); the next test case keeps it and checks the resumed move.
      std::filesystem::remove(b1.data_dir + "/move-requests.json");
      b1.start();
      // Recovery resolves the move one way or the other; meanwhile never both serve.
      int b1_status = 0, b2_status = 0;
      std::vector<std::pair<std::uint64_t, std::string>> held;
      eventually(
          [&] {
            auto [s1, r1] = read_partition(b1);
            auto [s2, r2] = read_partition(b2);
            // The two reads are not at one instant: a cutover between them is b1 then b2 serving, not both at once.
            // Both serve at once only when b1 still serves after b2 answered (a broker serves one stretch of time).
            CHECK_FALSE((s1 == 200 && s2 == 200 && read_partition(b1).first == 200));
            b1_status = s1;
            b2_status = s2;
            if ((s1 == 200 && s2 == 421) || (s2 == 200 && s1 == 421)) {
              held = s1 == 200 ? r1 : r2;
              return true;
            }
            return false;
          },
          30s);
      INFO("b1 answers " << b1_status << ", b2 answers " << b2_status);
      REQUIRE(((b1_status == 200) != (b2_status == 200)));
      CHECK((b1_status == 200 ? "b1" : "b2") == std::string(server));
      CHECK(held == acked);
      // The server takes new records, also through the other broker.
      auto& owner = b1_status == 200 ? b1 : b2;
      auto& other = b1_status == 200 ? b2 : b1;
      auto more = produce(other, {"after"});
      acked.insert(acked.end(), more.begin(), more.end());
      CHECK(read_partition(owner).second == acked);
    }
  }
}

TEST_CASE("e2e fault points: with the hand-driven move kept, the restarted source resumes it to the destination, "
          "never with two servers", "[e2e][faults][resume]") {
  for (const char* step : {"reassigner.after_copy", "reassigner.after_cutover", "reassigner.after_drain"}) {
    DYNAMIC_SECTION(step) {
      temp_dir dir;
      moonmqd_process b1("b1", dir.path()), b2("b2", dir.path());
      auto acked = crash_source_at(step, b1, b2, nullptr);
      b1.start();
      // Recovery, then the resumed move: b2 ends up serving everything, and at no moment do both serve.
      std::vector<std::pair<std::uint64_t, std::string>> held;
      const bool settled = eventually(
          [&] {
            auto [s1, r1] = read_partition(b1);
            auto [s2, r2] = read_partition(b2);
            // The two reads are not at one instant: a cutover between them is b1 then b2 serving, not both at once.
            // Both serve at once only when b1 still serves after b2 answered (a broker serves one stretch of time).
            CHECK_FALSE((s1 == 200 && s2 == 200 && read_partition(b1).first == 200));
            if (s1 != 421 || s2 != 200) return false;
            held = r2;
            return true;
          },
          30s);
      INFO("b1's log:\n" << slurp(b1.log_path) << "\nmove-requests.json: " << slurp(b1.data_dir + "/move-requests.json"));
      REQUIRE(settled);
      CHECK(held == acked);
    }
  }
}

TEST_CASE("e2e fault points: a bad MOONMQ_FAULTS stops moonmqd at start with exit 2 naming the point",
          "[e2e][faults]") {
  temp_dir dir;
  moonmqd_process b1("b1", dir.path());
  b1.configure({&b1});
  b1.faults = "reassigner.after_cpoy=crash";
  CHECK_THROWS_WITH(b1.start(), Catch::Contains("unknown fault point 'reassigner.after_cpoy'"));
}

TEST_CASE("e2e fault points: a point reached while moonmqd starts ends it as kill -9 does, and the harness sees "
          "SIGKILL",
          "[e2e][faults]") {
  // The first controller claim writes the fence while the broker starts (the torture harness once took this for a
  // failed start and reported the reaped process as a crash with signal 0).
  temp_dir dir;
  moonmqd_process b1("b1", dir.path());
  b1.configure({&b1}, "", R"("Autobalance":{"Enabled":true,"IntervalSeconds":3})");
  b1.faults = "fence.before_write=crash@1";
  CHECK_THROWS_WITH(b1.start(), Catch::Contains("exited at start-up"));
  CHECK(b1.start_up_signal == SIGKILL);
  b1.faults.clear();
  b1.start();  // and it starts without the point
  CHECK(b1.running());
}
