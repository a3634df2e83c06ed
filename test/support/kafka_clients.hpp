// Real Kafka clients against three moonmqd with Kafka listeners, for the Kafka end-to-end tests: the cluster, and
// test/e2e/kafka/clients.py (confluent-kafka, kafka-python) and kafkajs_client.js run as processes whose JSON lines
// are read back.
#pragma once

#include <rapidjson/document.h>

#include <sstream>
#include <string>
#include <vector>

#include "support/daemon_process.hpp"
#include "support/process.hpp"

namespace moonmq::test {

inline const std::string clients = std::string(MOONMQ_SOURCE_DIR) + "/test/e2e/kafka/clients.py";

struct kafka_cluster {
  kafka_cluster() {
    std::vector<moonmqd_process*> all{&b1, &b2, &b3};
    for (auto* b : all) b->kafka_port = free_port();
    for (auto* b : all) b->configure(all);
    for (auto* b : all) b->start();
  }
  std::string bootstrap(const moonmqd_process& b) const { return "127.0.0.1:" + std::to_string(b.kafka_port); }
  temp_dir dir;
  moonmqd_process b1{"b1", dir.path()}, b2{"b2", dir.path()}, b3{"b3", dir.path()};
};

inline std::vector<rapidjson::Document> json_lines(const std::string& out) {
  std::vector<rapidjson::Document> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;
    rapidjson::Document d;
    d.Parse(line.c_str());
    if (!d.HasParseError()) lines.push_back(std::move(d));
  }
  return lines;
}

inline const std::string kafkajs = std::string(MOONMQ_SOURCE_DIR) + "/test/e2e/kafka/kafkajs_client.js";

inline process_result client(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"/usr/bin/python3", clients};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv);
}

}  // namespace moonmq::test
