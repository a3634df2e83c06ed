// The fuzz targets: each takes arbitrary bytes to one parser that meets untrusted input and checks what must hold
// for every input (no crash, no undefined behaviour, no unbounded work, and the invariants named in each). They are
// plain functions so that the test suite replays every checked-in input through them too (test/unit/fuzz_replay_test);
// a libFuzzer build wraps one of them as LLVMFuzzerTestOneInput (fuzz/main.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace moonmq::fuzz {

using target = int (*)(const std::uint8_t* data, std::size_t size);

int http1_request(const std::uint8_t* data, std::size_t size);
int http1_response(const std::uint8_t* data, std::size_t size);
int json_reader(const std::uint8_t* data, std::size_t size);
int config_loader(const std::uint8_t* data, std::size_t size);
int record_frames(const std::uint8_t* data, std::size_t size);
int raft_message(const std::uint8_t* data, std::size_t size);
int planner_snapshot(const std::uint8_t* data, std::size_t size);
int txn_record(const std::uint8_t* data, std::size_t size);
int topic_metadata(const std::uint8_t* data, std::size_t size);
int kafka_request(const std::uint8_t* data, std::size_t size);

struct named_target {
  std::string_view name;
  target run;
};

/// Every target, by the name of its corpus directory (fuzz/corpus/NAME).
inline constexpr named_target all_targets[] = {
    {"http1_request", http1_request},   {"http1_response", http1_response}, {"json_reader", json_reader},
    {"config_loader", config_loader},   {"record_frames", record_frames},   {"raft_message", raft_message},
    {"planner_snapshot", planner_snapshot}, {"txn_record", txn_record},
    {"topic_metadata", topic_metadata}, {"kafka_request", kafka_request},
};

}  // namespace moonmq::fuzz
