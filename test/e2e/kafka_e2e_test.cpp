// The Kafka listener with real clients (librdkafka through confluent-kafka and kcat, kafka-python, kafkajs) against three
// moonmqd (docs/kafka.md): topics made by CreateTopics, records read back exactly as produced, an idempotent producer
// that keeps producing while a partition moves, and hostile frames refused without harm.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rapidjson/document.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "support/certificates.hpp"
#include "support/daemon_process.hpp"
#include "support/eventually.hpp"
#include "support/kafka_clients.hpp"
#include "support/process.hpp"

using namespace moonmq::test;

namespace {

/// What clients.py's consumer printed: every key k<i> of `count` read exactly once, on partition i % `partitions`,
/// in order within its partition.
void check_read_once_in_order(const std::string& out, int count, int partitions) {
  std::map<std::string, int> times;
  std::map<int, int> last_index;
  for (const auto& m : json_lines(out)) {
    const std::string key = m["key"].GetString();
    const int i = std::stoi(key.substr(1));
    ++times[key];
    const int p = m["partition"].GetInt();
    CHECK(p == i % partitions);
    if (last_index.count(p)) CHECK(i > last_index[p]);  // in order, nothing read twice within a partition
    last_index[p] = i;
  }
  CHECK(times.size() == static_cast<std::size_t>(count));
  for (const auto& [key, n] : times)
    if (n != 1) FAIL(key << " read " << n << " times");
}

/// A connection to the Kafka port that sends nothing yet (-1 when it could not connect).
int silent_connection(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// A raw connection to the Kafka port: sends `bytes`, returns what came back before the broker closed or 2 s passed.
std::string raw_exchange(std::uint16_t port, const std::string& bytes) {
  const int fd = silent_connection(port);
  if (fd < 0) return "connect failed";
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  (void)!::write(fd, bytes.data(), bytes.size());
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return got;
}

std::string be32(std::uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * (3 - i))) & 0xff);
  return s;
}

/// Whether the broker closed `fd` (a read finds the end, without waiting).
bool closed_by_broker(int fd) {
  char byte;
  const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/// Reads exactly `n` bytes from `fd` (2 s at most); what came.
std::string read_exactly(int fd, std::size_t n) {
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string got;
  char buf[4096];
  while (got.size() < n) {
    const ssize_t r = ::read(fd, buf, std::min(sizeof buf, n - got.size()));
    if (r <= 0) break;
    got.append(buf, static_cast<std::size_t>(r));
  }
  return got;
}

/// ApiVersions v0 with correlation id 7: the size, key 18, version 0, correlation 7, client id "t".
std::string api_versions_request() {
  std::string body = std::string("\x00\x12\x00\x00", 4) + be32(7) + std::string("\x00\x01t", 3);
  return be32(static_cast<std::uint32_t>(body.size())) + body;
}

}  // namespace

TEST_CASE("e2e kafka: real clients create a topic, produce and read back keys, values, headers and timestamps",
          "[e2e][kafka]") {
  kafka_cluster c;
  auto made = client({"create", c.bootstrap(c.b2), "kt", "3"});
  INFO(made.out << made.err);
  REQUIRE(made.exit_code == 0);
  CHECK_THAT(made.out, Catch::Contains("\"created\": \"kt\"") && Catch::Contains("\"refused\": \"kt\""));

  auto produced = client({"produce", c.bootstrap(c.b1), "kt", "300"});
  INFO(produced.out << produced.err);
  REQUIRE(produced.exit_code == 0);
  const auto acks = json_lines(produced.out);
  REQUIRE(acks.size() == 300);

  auto consumed = client({"consume", c.bootstrap(c.b3), "kt", "3"});
  INFO(consumed.err);
  REQUIRE(consumed.exit_code == 0);
  const auto seen = json_lines(consumed.out);
  REQUIRE(seen.size() == 300);
  std::map<std::string, int> times;
  std::map<int, std::int64_t> last_offset;
  for (const auto& m : seen) {
    const std::string key = m["key"].GetString();
    const int i = std::stoi(key.substr(1));
    ++times[key];
    CHECK(m["partition"].GetInt() == i % 3);
    CHECK(std::string(m["value"].GetString()) == "value-" + std::to_string(i));
    CHECK(m["timestamp"].GetInt64() == 1000 + i);
    REQUIRE(m["headers"].Size() == 1);
    CHECK(std::string(m["headers"][0][1].GetString()) == "x" + std::to_string(i));
    // Offsets increase within a partition.
    const int p = m["partition"].GetInt();
    if (last_offset.count(p)) CHECK(m["offset"].GetInt64() > last_offset[p]);
    last_offset[p] = m["offset"].GetInt64();
  }
  CHECK(times.size() == 300);
  // Every record is where its delivery report said it went: the offsets the producer was told are the ones a
  // consumer reads (a batch's records are numbered base, base+1, …).
  std::map<std::string, std::pair<int, std::int64_t>> told;
  for (const auto& a : acks) told[a["key"].GetString()] = {a["partition"].GetInt(), a["offset"].GetInt64()};
  for (const auto& m : seen)
    CHECK(told[m["key"].GetString()] == std::pair<int, std::int64_t>{m["partition"].GetInt(), m["offset"].GetInt64()});
  // A consumer that seeks to a record inside a batch (its delivery-reported offset) starts at that very record.
  std::set<std::pair<int, std::int64_t>> reported;
  for (const auto& [key, at] : told) reported.insert(at);
  std::optional<std::pair<std::string, std::pair<int, std::int64_t>>> inside;
  for (const auto& [key, at] : told)
    if (reported.count({at.first, at.second - 1})) inside = {key, at};
  REQUIRE(inside);
  auto sought = run_process({"/usr/bin/kcat", "-b", c.bootstrap(c.b2), "-C", "-t", "kt", "-p",
                             std::to_string(inside->second.first), "-o", std::to_string(inside->second.second), "-c", "1",
                             "-e", "-q", "-f", "%o %k\n"});
  CHECK(sought.out == std::to_string(inside->second.second) + " " + inside->first + "\n");

  // Batches come whole, as from a Kafka broker, even past the consumer's limit per partition: a consumer allowed
  // 1000 bytes a partition gets each stored batch in one piece (a batch is a run of consecutive delivery-reported
  // offsets), and every record once.
  std::map<int, std::vector<std::int64_t>> reported_in;
  for (const auto& [key, at] : told) reported_in[at.first].push_back(at.second);
  std::vector<std::size_t> batch_sizes;
  auto& in_one = reported_in[1];
  std::sort(in_one.begin(), in_one.end());
  for (std::size_t i = 0; i < in_one.size(); ++i)
    if (i == 0 || in_one[i] != in_one[i - 1] + 1)
      batch_sizes.push_back(1);
    else
      ++batch_sizes.back();
  REQUIRE(*std::max_element(batch_sizes.begin(), batch_sizes.end()) >= 20);  // more than 1000 bytes of frames
  auto small = run_process({"/usr/bin/kcat", "-b", c.bootstrap(c.b2), "-C", "-t", "kt", "-p", "1", "-o", "beginning",
                            "-e", "-X", "fetch.message.max.bytes=1000", "-d", "fetch", "-f", "%o\n"});
  INFO(small.err.substr(0, 3000));
  CHECK(small.exit_code == 0);
  CHECK(std::count(small.out.begin(), small.out.end(), '\n') == static_cast<long>(in_one.size()));
  // Each response ends where a batch ends (it may hold several small ones), and the largest batch came in one.
  std::set<std::size_t> batch_ends;
  std::size_t sum = 0;
  for (auto n : batch_sizes) batch_ends.insert(sum += n);
  std::size_t received = 0, largest = 0;
  static const std::regex enqueue("Enqueue ([0-9]+) message");
  for (auto m = std::sregex_iterator(small.err.begin(), small.err.end(), enqueue); m != std::sregex_iterator(); ++m) {
    const std::size_t n = std::stoul((*m)[1].str());
    if (n == 0) continue;
    received += n;
    largest = std::max(largest, n);
    CHECK(batch_ends.count(received) == 1);
  }
  CHECK(received == in_one.size());
  CHECK(largest >= *std::max_element(batch_sizes.begin(), batch_sizes.end()));

  // kcat reads the same records; kafka-python's version probe, produce and read back work too.
  auto kcat = run_process({"/usr/bin/kcat", "-b", c.bootstrap(c.b2), "-C", "-t", "kt", "-p", "0", "-o", "beginning", "-e",
                           "-f", "%k=%s;%h\n"});
  CHECK(kcat.exit_code == 0);
  CHECK_THAT(kcat.out, Catch::Contains("k0=value-0;h=x0") && Catch::Contains("k297=value-297;h=x297"));
  auto kp = client({"kafka-python", c.bootstrap(c.b1), "kt"});
  INFO(kp.out << kp.err);
  REQUIRE(kp.exit_code == 0);
  CHECK_THAT(kp.out, Catch::Contains("\"value\": \"from kafka-python\"") && Catch::Contains("\"timestamp\": 4242") &&
                         Catch::Contains("[\"src\", \"kp\"]"));

  // kafkajs creates a topic, produces with an idempotent producer, reads metadata and offsets; librdkafka reads its
  // records back. (A kafkajs consumer needs consumer groups: issue 31.)
  auto js = run_process({"/usr/bin/node", kafkajs, "produce", c.bootstrap(c.b3), "js", "3", "60"});
  INFO(js.out << js.err);
  REQUIRE(js.exit_code == 0);
  const auto js_lines = json_lines(js.out);
  int batches = 0, partitions_listed = 0;
  for (const auto& l : js_lines) {
    if (l.HasMember("baseOffset")) {
      ++batches;
      CHECK(l["error"].GetInt() == 0);
    }
    if (l.HasMember("offsets")) {
      ++partitions_listed;
      CHECK(std::stoll(l["high"].GetString()) > 0);
    }
  }
  CHECK(batches == 18);  // six sends of ten records, each over three partitions
  CHECK(partitions_listed == 3);
  auto js_read = client({"consume", c.bootstrap(c.b1), "js", "3"});
  INFO(js_read.err);
  REQUIRE(js_read.exit_code == 0);
  const auto js_seen = json_lines(js_read.out);
  REQUIRE(js_seen.size() == 60);
  std::set<std::string> js_values;
  for (const auto& m : js_seen) {
    js_values.insert(m["value"].GetString());
    CHECK(m["partition"].GetInt() == std::stoi(std::string(m["key"].GetString()).substr(1)) % 3);
    REQUIRE(m["headers"].Size() == 1);
    CHECK(std::string(m["headers"][0][0].GetString()) == "via");
    CHECK(std::string(m["headers"][0][1].GetString()) == "kafkajs");
  }
  CHECK(js_values.size() == 60);
  CHECK(js_values.count("kafkajs-59") == 1);

  // An offset past a batch's numbers but inside its bytes (where "the end less N" often lands: offsets are byte
  // positions) starts at the next batch's first record: the rest of the batch it falls in is all numbered lower.
  // With 200 bytes allowed a partition (a few of these records), the first read returns only that rest, and a second
  // read is needed: the reactor does it (a probe in the listener saw it there, once, when this was written).
  std::optional<std::pair<int, std::int64_t>> gap;  // one past a batch's last number
  std::int64_t next_batch = 0;                        // the next batch's first
  std::map<int, std::vector<std::int64_t>> js_offsets;  // six batches a partition
  for (const auto& m : js_seen) js_offsets[m["partition"].GetInt()].push_back(m["offset"].GetInt64());
  for (auto& [partition, offsets] : js_offsets) {
    std::sort(offsets.begin(), offsets.end());
    for (std::size_t i = 1; i < offsets.size() && !gap; ++i)
      if (offsets[i] != offsets[i - 1] + 1) {
        gap = {partition, offsets[i - 1] + 1};
        next_batch = offsets[i];
      }
  }
  REQUIRE(gap);
  auto after_gap = run_process({"/usr/bin/kcat", "-b", c.bootstrap(c.b2), "-C", "-t", "js", "-p",
                                std::to_string(gap->first), "-o", std::to_string(gap->second), "-c", "1", "-e", "-q",
                                "-X", "fetch.message.max.bytes=200", "-f", "%o\n"});
  CHECK(after_gap.out == std::to_string(next_batch) + "\n");

  // Every compression codec a Kafka client may choose: kcat (librdkafka) compresses, the broker stores the records
  // uncompressed, and they read back the same.
  for (const std::string codec : {"gzip", "snappy", "lz4", "zstd"}) {
    std::string lines;
    for (int i = 0; i < 20; ++i) lines += codec + "-" + std::to_string(i) + ":" + std::string(200, 'c') + "\n";
    auto sent = run_process({"/usr/bin/kcat", "-b", c.bootstrap(c.b1), "-P", "-t", "kt", "-p", "2", "-K:", "-z", codec},
                            lines);
    INFO(codec << ": " << sent.err);
    CHECK(sent.exit_code == 0);
  }
  auto compressed = run_process({"/usr/bin/kcat", "-b", c.bootstrap(c.b2), "-C", "-t", "kt", "-p", "2", "-o", "beginning",
                                 "-e", "-q", "-f", "%k=%S\n"});
  for (const std::string codec : {"gzip", "snappy", "lz4", "zstd"})
    CHECK_THAT(compressed.out, Catch::Contains(codec + "-0=200\n") && Catch::Contains(codec + "-19=200\n"));

  // acks=0 (no answer) and acks=1 through kcat: the records are there all the same.
  for (const std::string acks : {"0", "1"}) {
    auto sent = run_process({"/usr/bin/kcat", "-b", c.bootstrap(c.b1), "-P", "-t", "kt", "-p", "0", "-K:", "-X",
                             "acks=" + acks},
                            "acks" + acks + "-a:x\nacks" + acks + "-b:y\n");
    INFO(sent.err);
    CHECK(sent.exit_code == 0);
  }
  CHECK(eventually(
      [&] {
        auto read = run_process({"/usr/bin/kcat", "-b", c.bootstrap(c.b3), "-C", "-t", "kt", "-p", "0", "-o", "beginning",
                                 "-e", "-q", "-f", "%k=%s\n"});
        return read.out.find("acks0-a=x\nacks0-b=y\n") != std::string::npos &&
               read.out.find("acks1-a=x\nacks1-b=y\n") != std::string::npos;
      },
      std::chrono::seconds(10)));
}

TEST_CASE("e2e kafka: an idempotent producer keeps producing while partitions move, and loses or repeats nothing",
          "[e2e][kafka]") {
  kafka_cluster c;
  REQUIRE(client({"create", c.bootstrap(c.b1), "km", "3"}).exit_code == 0);
  process_result produced;
  std::thread producer([&] { produced = client({"produce", c.bootstrap(c.b1), "km", "3000", "12"}); });
  // Every partition moves once, to the next broker, while the producer runs.
  std::map<std::string, std::string> next{{"b1", "b2"}, {"b2", "b3"}, {"b3", "b1"}};
  std::vector<moonmqd_process*> all{&c.b1, &c.b2, &c.b3};
  for (int p = 0; p < 3; ++p) {
    std::string owner;
    for (auto* b : all) {
      auto r = b->api().Get(("/v1/topics/km/partitions/" + std::to_string(p) + "/records?max_bytes=1").c_str());
      if (r && r->status == 200) owner = b->id;
    }
    REQUIRE(!owner.empty());
    auto r = c.b1.api().Post("/v1/reassignments",
                             "{\"topic\":\"km\",\"partition\":" + std::to_string(p) + ",\"dest\":\"" + next[owner] + "\"}",
                             "application/json");
    REQUIRE(r);
    INFO(r->body);
    REQUIRE(r->status / 100 == 2);
    const bool moved = eventually(
        [&] {
          for (auto* b : all)
            if (b->id == next[owner]) {
              auto got = b->api().Get(("/v1/topics/km/partitions/" + std::to_string(p) + "/records?max_bytes=1").c_str());
              return got && got->status == 200;
            }
          return false;
        },
        std::chrono::seconds(30));
    REQUIRE(moved);
  }
  producer.join();
  INFO(produced.out.substr(produced.out.size() > 2000 ? produced.out.size() - 2000 : 0) << produced.err);
  REQUIRE(produced.exit_code == 0);
  REQUIRE(json_lines(produced.out).size() == 3000);

  auto consumed = client({"consume", c.bootstrap(c.b2), "km", "3"});
  REQUIRE(consumed.exit_code == 0);
  check_read_once_in_order(consumed.out, 3000, 3);
}

TEST_CASE("e2e kafka: the balance loop moves partitions and a broker is killed -9 under an idempotent producer, while "
          "an assign-mode consumer follows: nothing is lost, repeated or reordered",
          "[e2e][kafka]") {
  temp_dir dir;
  moonmqd_process b1{"b1", dir.path()}, b2{"b2", dir.path()}, b3{"b3", dir.path()};
  std::vector<moonmqd_process*> all{&b1, &b2, &b3};
  for (auto* b : all) b->kafka_port = free_port();
  b1.configure(all, "",
               "\"Autobalance\":{\"Enabled\":true,\"IntervalSeconds\":1,\"DryRun\":false,"
               "\"Goals\":[{\"Name\":\"PARTITION_COUNT\"}]}");
  b2.configure(all);
  b3.configure(all);
  for (auto* b : all) b->start();
  auto made = b1.api().Post("/v1/topics", R"({"name":"kl","partitions":6,"placement":"local"})", "application/json");
  REQUIRE(made);
  REQUIRE(made->status / 100 == 2);
  auto bootstrap = [](const moonmqd_process& b) { return "127.0.0.1:" + std::to_string(b.kafka_port); };
  auto serves = [](moonmqd_process& b, int p) {
    auto r = b.api().Get(("/v1/topics/kl/partitions/" + std::to_string(p) + "/records?max_bytes=1").c_str());
    return r && r->status == 200;
  };

  process_result produced, consumed;
  std::thread consumer([&] { consumed = client({"consume", bootstrap(b2), "kl", "6", "15"}); });
  std::thread producer([&] { produced = client({"produce", bootstrap(b1), "kl", "3000", "20", "6"}); });
  // The loop spreads the six partitions from b1; once b3 serves one, b3 is killed -9 and started again.
  const bool b3_took_one = eventually(
      [&] {
        for (int p = 0; p < 6; ++p)
          if (serves(b3, p)) return true;
        return false;
      },
      std::chrono::seconds(30));
  CHECK(b3_took_one);
  b3.kill9();
  b3.start();
  producer.join();
  consumer.join();

  INFO(produced.out.substr(produced.out.size() > 2000 ? produced.out.size() - 2000 : 0) << produced.err);
  REQUIRE(produced.exit_code == 0);
  REQUIRE(json_lines(produced.out).size() == 3000);
  int moved_off_b1 = 0;
  for (int p = 0; p < 6; ++p) moved_off_b1 += serves(b1, p) ? 0 : 1;
  CHECK(moved_off_b1 >= 2);

  INFO(consumed.err.substr(consumed.err.size() > 2000 ? consumed.err.size() - 2000 : 0));
  REQUIRE(consumed.exit_code == 0);
  check_read_once_in_order(consumed.out, 3000, 6);
}

TEST_CASE("e2e kafka: Metadata names every broker at the address it advertises itself, when configuration does not",
          "[e2e][kafka]") {
  temp_dir dir;
  moonmqd_process b1{"b1", dir.path()}, b2{"b2", dir.path()}, b3{"b3", dir.path()};
  std::vector<moonmqd_process*> all{&b1, &b2, &b3};
  for (auto* b : all) {
    b->kafka_port = free_port();
    b->name_peers_kafka = false;
  }
  for (auto* b : all) b->configure(all);
  for (auto* b : all) b->start();
  const std::string bootstrap = "127.0.0.1:" + std::to_string(b1.kafka_port);
  REQUIRE(client({"create", bootstrap, "kn", "3"}).exit_code == 0);
  auto listed = run_process({"/usr/bin/kcat", "-L", "-m", "10", "-b", bootstrap, "-t", "kn"});
  INFO(listed.out << listed.err);
  for (auto* b : all) CHECK_THAT(listed.out, Catch::Contains("127.0.0.1:" + std::to_string(b->kafka_port)));
  CHECK_THAT(listed.out, !Catch::Contains("Leader not available"));
  // Every partition, wherever it lives, takes records and gives them back.
  auto produced = client({"produce", bootstrap, "kn", "30"});
  INFO(produced.err);
  REQUIRE(produced.exit_code == 0);
  auto consumed = client({"consume", bootstrap, "kn", "3"});
  REQUIRE(consumed.exit_code == 0);
  check_read_once_in_order(consumed.out, 30, 3);
}

TEST_CASE("e2e kafka: topic admin from confluent-kafka's AdminClient and kafkajs: grow, describe configs, delete",
          "[e2e][kafka]") {
  kafka_cluster c;
  REQUIRE(client({"create", c.bootstrap(c.b1), "ka", "3"}).exit_code == 0);
  auto a = client({"admin", c.bootstrap(c.b2), "ka"});
  INFO(a.out << a.err);
  REQUIRE(a.exit_code == 0);
  const auto lines = json_lines(a.out);
  REQUIRE(lines.size() == 13);
  CHECK_THAT(std::string(lines[0]["create_with_config"].GetString()), Catch::Contains("INVALID_CONFIG"));
  CHECK(std::string(lines[1]["grow"].GetString()) == "ok");
  CHECK_THAT(std::string(lines[2]["shrink"].GetString()), Catch::Contains("INVALID_PARTITIONS"));
  CHECK(lines[3]["partitions"].GetInt() == 5);
  CHECK(std::string(lines[4]["topic_configs"]["retention.ms"].GetString()) == "-1");
  CHECK(std::string(lines[4]["topic_configs"]["cleanup.policy"].GetString()) == "delete");
  CHECK(lines[4]["read_only"].GetBool());
  CHECK(std::string(lines[5]["broker_configs"]["advertised.listeners"].GetString()).starts_with("PLAINTEXT://127.0.0.1:"));
  CHECK_THAT(std::string(lines[6]["describe_missing"].GetString()), Catch::Contains("UNKNOWN_TOPIC"));
  CHECK(std::string(lines[7]["delete"].GetString()) == "ok");
  CHECK_THAT(std::string(lines[8]["delete_again"].GetString()), Catch::Contains("UNKNOWN_TOPIC"));
  CHECK_FALSE(lines[9]["listed_after_delete"].GetBool());
  // Explicit assignments name the owners (node ids 1..3 are b1..b3): partition 0 on b3, 1 on b1, 2 on b2, and the
  // partition added by CreatePartitions on b1; a node id the cluster does not have is refused.
  CHECK(std::string(lines[10]["placed"].GetString()) == "ok");
  CHECK(std::string(lines[11]["grown"].GetString()) == "ok");
  std::vector<int> leaders;
  for (const auto& l : lines[11]["leaders"].GetArray()) leaders.push_back(l.GetInt());
  CHECK(leaders == std::vector<int>{3, 1, 2, 1});
  CHECK_THAT(std::string(lines[12]["bad_assignment"].GetString()), Catch::Contains("INVALID_REPLICA_ASSIGNMENT"));
  // Every broker sees the topic's five partitions gone; the name can be made again.
  REQUIRE(client({"create", c.bootstrap(c.b3), "ka", "2"}).exit_code == 0);

  // kafkajs: CreatePartitions, DescribeConfigs, DeleteTopics.
  REQUIRE(client({"create", c.bootstrap(c.b1), "kj", "2"}).exit_code == 0);
  auto js = run_process({"/usr/bin/node", kafkajs, "admin", c.bootstrap(c.b3), "kj"});
  INFO(js.out << js.err);
  REQUIRE(js.exit_code == 0);
  CHECK_THAT(js.out, Catch::Contains("{\"before\":2,\"after\":3}") && Catch::Contains("\"retention.ms\":\"-1\"") &&
                         Catch::Contains("{\"listed\":false}"));
}

TEST_CASE("e2e kafka: hostile frames close the connection and harm nothing", "[e2e][kafka]") {
  kafka_cluster c;
  const std::uint16_t port = c.b1.kafka_port;
  // A size beyond the limit before authentication (64 KiB): closed before anything is allocated.
  CHECK(raw_exchange(port, be32(200u << 20)).empty());
  // An API this broker does not answer (key 999), and a version out of range (Metadata v99): closed.
  CHECK(raw_exchange(port, be32(10) + std::string("\x03\xe7\x00\x00", 4) + be32(1) + std::string("\x00\x00", 2)).empty());
  CHECK(raw_exchange(port, be32(10) + std::string("\x00\x03\x00\x63", 4) + be32(1) + std::string("\x00\x00", 2)).empty());
  // A truncated request (a header cut short): closed.
  CHECK(raw_exchange(port, be32(3) + std::string("\x00\x12\x00", 3)).empty());
  // ApiVersions v99 gets the v0 answer with UNSUPPORTED_VERSION (35), KIP-511.
  std::string body = std::string("\x00\x12\x00\x63", 4) + be32(9) + std::string("\x00\x00", 2);
  auto answer = raw_exchange(port, be32(static_cast<std::uint32_t>(body.size())) + body);
  REQUIRE(answer.size() > 10);
  CHECK(answer.substr(4, 4) == be32(9));
  CHECK(answer.substr(8, 2) == std::string("\x00\x23", 2));
  // OffsetForLeaderEpoch v3 for partition 0 of a new topic, on every broker: the owner answers with the log's end
  // (0), the others NOT_LEADER_OR_FOLLOWER; a current epoch newer than the owner's is UNKNOWN_LEADER_EPOCH there.
  REQUIRE(client({"create", "127.0.0.1:" + std::to_string(port), "ke", "1"}).exit_code == 0);
  auto epoch_end = [](std::uint16_t to, std::int32_t current) {
    std::string req = std::string("\x00\x17\x00\x03", 4) + be32(5) + std::string("\x00\x01t", 3) + be32(0xffffffff) +
                      be32(1) + std::string("\x00\x02ke", 4) + be32(1) + be32(0) + be32(static_cast<std::uint32_t>(current)) +
                      be32(0);
    const auto got = raw_exchange(to, be32(static_cast<std::uint32_t>(req.size())) + req);
    // size, correlation, throttle, [topic "ke" [error partition epoch end_offset]]
    if (got.size() != 4 + 4 + 4 + 4 + 4 + 4 + 2 + 4 + 4 + 8) return std::pair<int, std::string>{-1, got};
    const int error = (static_cast<unsigned char>(got[24]) << 8) | static_cast<unsigned char>(got[25]);
    return std::pair<int, std::string>{error, got.substr(34, 8)};
  };
  std::map<int, int> answers;
  for (auto* b : {&c.b1, &c.b2, &c.b3}) {
    const auto [error, end] = epoch_end(b->kafka_port, -1);
    ++answers[error];
    if (error == 0) {
      CHECK(end == std::string(8, '\0'));
      CHECK(epoch_end(b->kafka_port, 1 << 30).first == 75);
    }
  }
  INFO("answers: " << [&] {
    std::string all;
    for (const auto& [error, n] : answers) all += std::to_string(error) + "x" + std::to_string(n) + " ";
    return all;
  }());
  CHECK(answers == std::map<int, int>{{0, 1}, {6, 2}});

  // Batches a client wrote by hand: a bad CRC is CORRUPT_MESSAGE (2), the control bit INVALID_RECORD (87), a good one
  // is appended. A batch is checked before its partition's owner is, so the brokers that do not own it refuse the
  // two bad batches alike and answer the good one NOT_LEADER_OR_FOLLOWER (6). Only the good record is in the log.
  std::multiset<int> owner_codes, other_codes;
  for (auto* b : {&c.b1, &c.b2, &c.b3}) {
    auto raw = client({"raw-batches", "127.0.0.1:" + std::to_string(b->kafka_port), "ke", "0"});
    INFO(raw.out << raw.err);
    REQUIRE(raw.exit_code == 0);
    const auto lines = json_lines(raw.out);
    REQUIRE(lines.size() == 3);
    for (int i = 0; i < 3; ++i) CHECK(lines[static_cast<std::size_t>(i)]["correlation"].GetInt() == i);
    if (lines[2]["error"].GetInt() == 0) {
      CHECK(lines[0]["error"].GetInt() == 2);
      CHECK(lines[1]["error"].GetInt() == 87);
      owner_codes.insert(0);
    } else {
      for (const auto& l : lines) other_codes.insert(l["error"].GetInt());
    }
  }
  CHECK(owner_codes.size() == 1);
  CHECK(other_codes == std::multiset<int>{2, 2, 87, 87, 6, 6});
  auto log = run_process({"/usr/bin/kcat", "-b", c.bootstrap(c.b1), "-C", "-t", "ke", "-p", "0", "-o", "beginning", "-e",
                          "-q", "-f", "%k=%s\n"});
  CHECK(log.out == "raw=good raw batch\n");

  // Pipelined requests (ApiVersions, Metadata v1, ApiVersions in one write) are answered in their order.
  auto request = [](std::int16_t key, std::int16_t version, std::int32_t correlation, const std::string& body) {
    std::string r;
    r += static_cast<char>(key >> 8);
    r += static_cast<char>(key & 0xff);
    r += static_cast<char>(version >> 8);
    r += static_cast<char>(version & 0xff);
    r += be32(static_cast<std::uint32_t>(correlation)) + std::string("\x00\x01t", 3) + body;
    return be32(static_cast<std::uint32_t>(r.size())) + r;
  };
  // The correlation ids of the answers, in the order they came (each below 256).
  auto order_of = [](const std::string& answers) {
    std::vector<std::uint32_t> order;
    for (std::size_t at = 0; at + 8 <= answers.size();) {
      const auto size = (static_cast<std::uint32_t>(static_cast<unsigned char>(answers[at])) << 24) |
                        (static_cast<std::uint32_t>(static_cast<unsigned char>(answers[at + 1])) << 16) |
                        (static_cast<std::uint32_t>(static_cast<unsigned char>(answers[at + 2])) << 8) |
                        static_cast<unsigned char>(answers[at + 3]);
      order.push_back(static_cast<unsigned char>(answers[at + 7]));
      at += 4 + size;
    }
    return order;
  };
  const auto three = raw_exchange(port, request(18, 0, 11, "") + request(3, 1, 12, be32(0xffffffff)) +
                                            request(18, 0, 13, ""));
  CHECK(order_of(three) == std::vector<std::uint32_t>{11, 12, 13});

  // The next request is read while one is handled, but answered after it: a Fetch v4 that waits 400 ms for data on
  // an empty partition of b1's, then ApiVersions, in one write, come back in that order.
  REQUIRE(c.b1.api().Post("/v1/topics", R"({"name":"pl","partitions":1,"placement":"local"})", "application/json")
              ->status == 200);
  std::string fetch = be32(0xffffffff) + be32(400) + be32(1) + be32(1 << 20) + std::string("\x00", 1);  // read_uncommitted
  fetch += be32(1) + std::string("\x00\x02pl", 4) + be32(1) + be32(0) + std::string(8, '\0') + be32(1 << 20);
  const auto waited = raw_exchange(port, request(1, 4, 21, fetch) + request(18, 0, 22, ""));
  CHECK(order_of(waited) == std::vector<std::uint32_t>{21, 22});

  // The broker still answers.
  auto ok = raw_exchange(port, api_versions_request());
  REQUIRE(ok.size() > 10);
  CHECK(ok.substr(8, 2) == std::string("\x00\x00", 2));
}

TEST_CASE("e2e kafka: SASL PLAIN and SCRAM-SHA-256 over TLS, with the token's role, from librdkafka, kcat and kafka-python",
          "[e2e][kafka][security]") {
  temp_dir dir;
  const auto certs = make_certificates(dir.path());
  moonmqd_process b("b1", dir.path());
  b.kafka_port = free_port();
  b.kafka_extra = "\"Tls\": {\"CertFile\": \"" + certs.node_cert() + "\", \"KeyFile\": \"" + certs.node_key() +
                  "\", \"Verify\": \"none\"}";
  const std::string client_token = "client-token-0123456789", admin_token = "admin-token-0123456789ab";
  b.configure({&b}, "",
              R"("Auth": {"Tokens": [{"Name": "app", "Token": ")" + client_token +
                  R"(", "Role": "client"}, {"Name": "ops", "Token": ")" + admin_token + R"(", "Role": "admin"}]})");
  b.start();
  auto settings = [&](const std::string& mechanism, const std::string& user, const std::string& password) {
    return R"({"bootstrap.servers": "127.0.0.1:)" + std::to_string(b.kafka_port) +
           R"(", "security.protocol": "SASL_SSL", "ssl.ca.location": ")" + certs.ca() + R"(", "sasl.mechanism": ")" +
           mechanism + R"(", "sasl.username": ")" + user + R"(", "sasl.password": ")" + password + "\"}";
  };

  // A client token may not create topics; an admin token may, with either mechanism.
  auto refused = client({"create", settings("SCRAM-SHA-256", "app", client_token), "st", "3"});
  INFO(refused.out << refused.err);
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.out, Catch::Contains("AUTHORIZATION"));
  auto made = client({"create", settings("SCRAM-SHA-256", "ops", admin_token), "st", "3"});
  INFO(made.out << made.err);
  REQUIRE(made.exit_code == 0);

  // A client token produces with SCRAM and reads back with PLAIN.
  auto produced = client({"produce", settings("SCRAM-SHA-256", "app", client_token), "st", "60"});
  INFO(produced.out << produced.err);
  REQUIRE(produced.exit_code == 0);
  CHECK(json_lines(produced.out).size() == 60);
  auto consumed = client({"consume", settings("PLAIN", "app", client_token), "st", "3"});
  INFO(consumed.err);
  REQUIRE(consumed.exit_code == 0);
  CHECK(json_lines(consumed.out).size() == 60);

  // kafka-python: SaslHandshake v0 and bare SCRAM messages, over TLS.
  auto kp = client({"kafka-python", settings("SCRAM-SHA-256", "app", client_token), "st"});
  INFO(kp.out << kp.err);
  CHECK(kp.exit_code == 0);
  CHECK_THAT(kp.out, Catch::Contains("\"value\": \"from kafka-python\""));

  // kafkajs: SaslHandshake v1 and SaslAuthenticate with SCRAM-SHA-256, over TLS, with the admin token.
  auto js = run_process({"/usr/bin/node", kafkajs, "produce", settings("SCRAM-SHA-256", "ops", admin_token), "js", "2", "20"});
  INFO(js.out << js.err);
  CHECK(js.exit_code == 0);
  CHECK_THAT(js.out, Catch::Contains("{\"created\":true}") && Catch::Contains("{\"offsets\":1,"));

  // Authentication and a request above the unauthenticated limit (a 100 KiB record), pipelined in one write: the
  // produce is read only once the client is authenticated, and so under MaxRequestBytes, not 64 KiB.
  auto piped = client({"raw-sasl-pipeline", "127.0.0.1:" + std::to_string(b.kafka_port), certs.ca(), "st", "app",
                       client_token});
  INFO(piped.out << piped.err);
  REQUIRE(piped.exit_code == 0);
  const auto piped_answers = json_lines(piped.out);
  REQUIRE(piped_answers.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(piped_answers[i]["correlation"].GetInt() == static_cast<int>(i) + 1);
    CHECK(piped_answers[i]["error"].GetInt() == 0);
  }

  // A wrong password, an unknown user, and a token's password under another user's name are refused by both
  // mechanisms.
  for (const auto& mechanism : {std::string("SCRAM-SHA-256"), std::string("PLAIN")})
    for (const auto& [user, password] : std::vector<std::pair<std::string, std::string>>{
             {"app", "wrong-password-0123456"}, {"nobody", client_token}, {"ops", client_token}}) {
      auto kcat = run_process({"/usr/bin/kcat", "-L", "-m", "2", "-b", "127.0.0.1:" + std::to_string(b.kafka_port), "-X",
                               "security.protocol=SASL_SSL", "-X", "ssl.ca.location=" + certs.ca(), "-X",
                               "sasl.mechanisms=" + mechanism, "-X", "sasl.username=" + user, "-X",
                               "sasl.password=" + password});
      INFO(mechanism << " " << user << ": " << kcat.out << kcat.err);
      CHECK(kcat.exit_code != 0);
      CHECK_THAT(kcat.err, Catch::Contains("uthentication failed"));
    }
  auto listed = run_process({"/usr/bin/kcat", "-L", "-m", "5", "-b", "127.0.0.1:" + std::to_string(b.kafka_port), "-X",
                             "security.protocol=SASL_SSL", "-X", "ssl.ca.location=" + certs.ca(), "-X",
                             "sasl.mechanisms=SCRAM-SHA-256", "-X", "sasl.username=app", "-X",
                             "sasl.password=" + client_token});
  INFO(listed.err);
  CHECK(listed.exit_code == 0);
  CHECK_THAT(listed.out, Catch::Contains("topic \"st\" with 3 partitions"));

  // Plain Kafka bytes on the TLS port get no Kafka answer.
  CHECK(raw_exchange(b.kafka_port, api_versions_request()).find(be32(7)) == std::string::npos);

  // Verify "required": a client must present a certificate the CA signed, and still authenticates with SASL.
  b.kill9();
  b.kafka_extra = "\"Tls\": {\"CertFile\": \"" + certs.node_cert() + "\", \"KeyFile\": \"" + certs.node_key() +
                  "\", \"CaFile\": \"" + certs.ca() + "\", \"Verify\": \"required\"}";
  b.configure({&b}, "",
              R"("Auth": {"Tokens": [{"Name": "app", "Token": ")" + client_token +
                  R"(", "Role": "client"}, {"Name": "ops", "Token": ")" + admin_token + R"(", "Role": "admin"}]})");
  b.start();
  std::vector<std::string> list{"/usr/bin/kcat", "-L", "-m", "3", "-b", "127.0.0.1:" + std::to_string(b.kafka_port),
                                "-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location=" + certs.ca(), "-X",
                                "sasl.mechanisms=SCRAM-SHA-256", "-X", "sasl.username=app", "-X",
                                "sasl.password=" + client_token};
  auto without_certificate = run_process(list);
  CHECK(without_certificate.exit_code != 0);
  auto rogue = list;
  rogue.insert(rogue.end(), {"-X", "ssl.certificate.location=" + certs.rogue_cert(), "-X",
                             "ssl.key.location=" + certs.rogue_key()});
  CHECK(run_process(rogue).exit_code != 0);
  auto with_certificate = list;
  with_certificate.insert(with_certificate.end(), {"-X", "ssl.certificate.location=" + certs.node_cert(), "-X",
                                                   "ssl.key.location=" + certs.node_key()});
  auto admitted = run_process(with_certificate);
  INFO(admitted.err);
  CHECK(admitted.exit_code == 0);
  CHECK_THAT(admitted.out, Catch::Contains("topic \"st\" with 3 partitions"));
}

TEST_CASE("e2e kafka: connections that do not authenticate are evicted past the cap and closed at the deadline, "
          "and an authenticated one is neither",
          "[e2e][kafka][security]") {
  temp_dir dir;
  moonmqd_process b("b1", dir.path());
  b.kafka_port = free_port();
  const std::string token = "client-token-0123456789";
  b.configure({&b}, "",
              R"("Auth": {"Tokens": [{"Name": "app", "Token": ")" + token +
                  R"(", "Role": "client"}]}, "Limits": {"MaxUnauthenticatedConnections": 4, "AuthTimeoutMs": 1500})");
  b.start();

  // One connection authenticates first, the way kafka-python does: SaslHandshake v0 for PLAIN, then a bare token.
  const int authenticated = silent_connection(b.kafka_port);
  REQUIRE(authenticated >= 0);
  const std::string handshake = std::string("\x00\x11\x00\x00", 4) + be32(1) + std::string("\x00\x01t\x00\x05PLAIN", 10);
  const std::string framed = be32(static_cast<std::uint32_t>(handshake.size())) + handshake;
  REQUIRE(::write(authenticated, framed.data(), framed.size()) == static_cast<ssize_t>(framed.size()));
  const std::string handshake_answer = read_exactly(authenticated, 4 + 4 + 2 + 4 + 2 + 5 + 2 + 13);
  REQUIRE(handshake_answer.size() >= 10);
  CHECK(handshake_answer.substr(8, 2) == std::string("\x00\x00", 2));
  const std::string plain = std::string("\0app\0", 5) + token;
  const std::string bare = be32(static_cast<std::uint32_t>(plain.size())) + plain;
  REQUIRE(::write(authenticated, bare.data(), bare.size()) == static_cast<ssize_t>(bare.size()));
  CHECK(read_exactly(authenticated, 4) == std::string(4, '\0'));

  // Six that never authenticate, against a cap of four: the two oldest are closed as the newer ones arrive.
  std::vector<int> silent;
  for (int i = 0; i < 6; ++i) {
    silent.push_back(silent_connection(b.kafka_port));
    REQUIRE(silent.back() >= 0);
  }
  CHECK(eventually([&] { return closed_by_broker(silent[0]) && closed_by_broker(silent[1]); }, std::chrono::seconds(5)));
  for (int i = 2; i < 6; ++i) CHECK_FALSE(closed_by_broker(silent[static_cast<std::size_t>(i)]));
  CHECK_FALSE(closed_by_broker(authenticated));

  // An authenticated client is served meanwhile; then the deadline closes every silent one, and only those.
  auto listed = run_process({"/usr/bin/kcat", "-L", "-m", "5", "-b", "127.0.0.1:" + std::to_string(b.kafka_port), "-X",
                             "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN", "-X",
                             "sasl.username=app", "-X", "sasl.password=" + token});
  INFO(listed.err);
  CHECK(listed.exit_code == 0);
  CHECK(eventually(
      [&] {
        for (int fd : silent)
          if (!closed_by_broker(fd)) return false;
        return true;
      },
      std::chrono::seconds(10)));
  CHECK_FALSE(closed_by_broker(authenticated));
  const std::string probe = api_versions_request();
  REQUIRE(::write(authenticated, probe.data(), probe.size()) == static_cast<ssize_t>(probe.size()));
  const std::string answer = read_exactly(authenticated, 10);
  REQUIRE(answer.size() == 10);
  CHECK(answer.substr(4, 4) == be32(7));
  for (int fd : silent) ::close(fd);
  ::close(authenticated);
}

namespace {

/// A group as GET /v1/groups/{g} describes it: member id -> its partitions (of any topic).
std::map<std::string, std::set<int>> group_members(moonmqd_process& b, const std::string& group) {
  std::map<std::string, std::set<int>> out;
  auto r = b.api().Get(("/v1/groups/" + group).c_str());
  if (!r || r->status != 200) return out;
  rapidjson::Document d;
  d.Parse(r->body.c_str());
  if (d.HasParseError() || !d.HasMember("members")) return out;
  for (const auto& m : d["members"].GetArray()) {
    auto& held = out[m["member_id"].GetString()];
    for (const auto& tp : m["assignment"].GetArray()) held.insert(tp["partition"].GetInt());
  }
  return out;
}

/// Every one of `partitions` held by exactly one of exactly `members` members, and each member holding its share.
bool balanced(const std::map<std::string, std::set<int>>& group, std::size_t members, int partitions) {
  if (group.size() != members) return false;
  std::multiset<int> held;
  for (const auto& [id, parts] : group) {
    if (parts.size() < static_cast<std::size_t>(partitions) / members) return false;
    held.insert(parts.begin(), parts.end());
  }
  if (held.size() != static_cast<std::size_t>(partitions)) return false;
  for (int p = 0; p < partitions; ++p)
    if (held.count(p) != 1) return false;
  return true;
}

}  // namespace

TEST_CASE("e2e kafka: consumer group protocol by hand: member id required, no member leads, stale generations and "
          "unknown members refused",
          "[e2e][kafka]") {
  kafka_cluster c;
  REQUIRE(client({"create", c.bootstrap(c.b1), "kr", "3"}).exit_code == 0);
  auto raw = client({"raw-group", c.bootstrap(c.b2), "kraw", "kr"});
  INFO(raw.out << raw.err);
  REQUIRE(raw.exit_code == 0);
  const auto got = json_lines(raw.out);
  REQUIRE(got.size() == 1);
  const auto& o = got[0];
  CHECK(o["first_join"].GetInt() == 79);  // MEMBER_ID_REQUIRED
  CHECK(o["join"].GetInt() == 0);
  CHECK_FALSE(o["leader_is_member"].GetBool());
  CHECK(o["sync"].GetInt() == 0);
  CHECK(o["heartbeat"].GetInt() == 0);
  CHECK(o["commit"].GetInt() == 0);
  // Commits of partitions other brokers serve are relayed there, and OffsetFetch of every partition finds them all.
  CHECK(o["commits_elsewhere"][0].GetInt() == 0);
  CHECK(o["commits_elsewhere"][1].GetInt() == 0);
  REQUIRE(o["fetch_all"].Size() == 3);
  for (int p = 0; p < 3; ++p) {
    CHECK(std::string(o["fetch_all"][p][0].GetString()) == "kr");
    CHECK(o["fetch_all"][p][1].GetInt() == p);
    CHECK(o["fetch_all"][p][2].GetInt() == 0);
    // Commit metadata round-trips, through the relay and back.
    CHECK(std::string(o["fetch_all"][p][3].GetString()) == (p == 0 ? "" : "meta-" + std::to_string(p)));
  }
  CHECK(o["stale_heartbeat"].GetInt() == 22);         // ILLEGAL_GENERATION
  CHECK(o["stale_commit"].GetInt() == 22);
  CHECK(o["unknown_member_commit"].GetInt() == 25);   // UNKNOWN_MEMBER_ID
  CHECK(o["memberless_commit"].GetInt() == 25);
  CHECK(o["unknown_member_sync"].GetInt() == 25);
  CHECK(o["leave"].GetInt() == 0);
  CHECK(o["heartbeat_after_leave"].GetInt() == 25);
}

TEST_CASE("e2e kafka: three librdkafka consumers share a group over three brokers: each partition held by one, a "
          "crashed member's partitions reassigned after its session, a closed one's at once, nothing skipped",
          "[e2e][kafka]") {
  kafka_cluster c;
  REQUIRE(client({"create", c.bootstrap(c.b1), "kg", "6"}).exit_code == 0);
  std::vector<moonmqd_process*> all{&c.b1, &c.b2, &c.b3};
  for (auto* b : all) {
    int served = 0;
    for (int p = 0; p < 6; ++p) {
      auto r = b->api().Get(("/v1/topics/kg/partitions/" + std::to_string(p) + "/records?max_bytes=1").c_str());
      served += r && r->status == 200 ? 1 : 0;
    }
    CHECK(served == 2);  // the partitions are spread, so members fetch from every broker
  }
  process_result produced, crashed, closed, stays;
  std::thread producer([&] { produced = client({"produce", c.bootstrap(c.b1), "kg", "1800", "18", "6"}); });
  std::thread a([&] { crashed = client({"group", c.bootstrap(c.b1), "g1", "kg", "8", "300", "crash"}); });
  std::thread b([&] { closed = client({"group", c.bootstrap(c.b2), "g1", "kg", "8", "600", "close"}); });
  std::thread s([&] { stays = client({"group", c.bootstrap(c.b3), "g1", "kg", "8"}); });
  // All three in the group, each partition with exactly one of them.
  CHECK(eventually([&] { return balanced(group_members(c.b2, "g1"), 3, 6); }, std::chrono::seconds(20)));
  a.join();
  // The crashed member is removed at its session timeout (6 s) and its partitions go to the others.
  const auto crash_at = std::chrono::steady_clock::now();
  CHECK(eventually([&] { return balanced(group_members(c.b3, "g1"), 2, 6) || balanced(group_members(c.b3, "g1"), 1, 6); },
                   std::chrono::seconds(20)));
  CHECK(std::chrono::steady_clock::now() - crash_at > std::chrono::seconds(3));
  b.join();
  const auto close_at = std::chrono::steady_clock::now();
  CHECK(eventually([&] { return balanced(group_members(c.b1, "g1"), 1, 6); }, std::chrono::seconds(20)));
  // A member that leaves is replaced within a few heartbeats, well before a session timeout would have passed.
  CHECK(std::chrono::steady_clock::now() - close_at < std::chrono::seconds(5));
  producer.join();
  s.join();
  INFO(produced.err << crashed.err << closed.err << stays.err);
  REQUIRE(produced.exit_code == 0);
  REQUIRE(closed.exit_code == 0);
  REQUIRE(stays.exit_code == 0);
  std::map<std::string, int> times;
  for (const auto* out : {&crashed.out, &closed.out, &stays.out})
    for (const auto& m : json_lines(*out)) {
      if (m.HasMember("commit_error")) FAIL("a commit failed: " << m["commit_error"].GetString());
      if (m.HasMember("key")) ++times[m["key"].GetString()];
    }
  CHECK(times.size() == 1800);  // every record consumed
  int repeated = 0;
  for (const auto& [key, n] : times) repeated += n - 1;
  // Only what the crashed member consumed after its last commit is read again (10 records per partition at most).
  CHECK(repeated <= 60);
}

TEST_CASE("e2e kafka: librdkafka, kafkajs and kafka-python consumers in one group share the partitions and read "
          "every record",
          "[e2e][kafka]") {
  kafka_cluster c;
  REQUIRE(client({"create", c.bootstrap(c.b1), "kx", "6"}).exit_code == 0);
  process_result produced, rdkafka, python, js;
  std::thread producer([&] { produced = client({"produce", c.bootstrap(c.b1), "kx", "1200", "12", "6"}); });
  std::thread a([&] { rdkafka = client({"group", c.bootstrap(c.b1), "gx", "kx", "8"}); });
  std::thread b([&] { python = client({"kafka-python-group", c.bootstrap(c.b2), "gx", "kx", "8"}); });
  std::thread j([&] { js = run_process({"/usr/bin/node", kafkajs, "group", c.bootstrap(c.b3), "gx", "kx", "8"}); });
  CHECK(eventually([&] { return balanced(group_members(c.b1, "gx"), 3, 6); }, std::chrono::seconds(30)));
  for (auto* t : {&producer, &a, &b, &j}) t->join();
  INFO(produced.err << rdkafka.err << python.err << js.out << js.err);
  REQUIRE(produced.exit_code == 0);
  REQUIRE(rdkafka.exit_code == 0);
  REQUIRE(python.exit_code == 0);
  REQUIRE(js.exit_code == 0);
  std::map<std::string, int> times;
  std::map<std::string, int> by_client;
  for (const auto& [name, out] : {std::pair{"librdkafka", &rdkafka.out}, {"kafka-python", &python.out},
                                  {"kafkajs", &js.out}})
    for (const auto& m : json_lines(*out))
      if (m.HasMember("key")) {
        ++times[m["key"].GetString()];
        ++by_client[name];
      }
  CHECK(times.size() == 1200);
  for (const auto& [key, n] : times) CHECK(n == 1);  // nobody left or crashed: nothing read twice
  CHECK(by_client.size() == 3);                      // each client had its share
}

TEST_CASE("e2e kafka: a partition moved under a consumer group changes no member's generation, and a group whose "
          "coordinator is killed -9 goes on from its committed offsets",
          "[e2e][kafka]") {
  kafka_cluster c;
  REQUIRE(client({"create", c.bootstrap(c.b1), "kv", "6"}).exit_code == 0);
  std::vector<moonmqd_process*> all{&c.b1, &c.b2, &c.b3};
  process_result produced, first, second;
  std::thread producer([&] { produced = client({"produce", c.bootstrap(c.b1), "kv", "2400", "24", "6"}); });
  std::thread a([&] { first = client({"group", c.bootstrap(c.b1), "gv", "kv", "10"}); });
  std::thread b([&] { second = client({"group", c.bootstrap(c.b2), "gv", "kv", "10"}); });
  REQUIRE(eventually([&] { return balanced(group_members(c.b1, "gv"), 2, 6); }, std::chrono::seconds(30)));
  auto epochs = [&] {
    std::map<std::string, std::uint64_t> out;
    auto r = c.b1.api().Get("/v1/groups/gv");
    if (!r || r->status != 200) return out;
    rapidjson::Document d;
    d.Parse(r->body.c_str());
    for (const auto& m : d["members"].GetArray()) out[m["member_id"].GetString()] = m["member_epoch"].GetUint64();
    return out;
  };
  const auto before = epochs();
  // Two partitions move to the next broker.
  auto owner_of = [&](int p) {
    for (auto* br : all) {
      auto r = br->api().Get(("/v1/topics/kv/partitions/" + std::to_string(p) + "/records?max_bytes=1").c_str());
      if (r && r->status == 200) return br;
    }
    return static_cast<moonmqd_process*>(nullptr);
  };
  for (int p : {0, 1}) {
    auto* from = owner_of(p);
    REQUIRE(from);
    moonmqd_process* to = from == &c.b1 ? &c.b2 : from == &c.b2 ? &c.b3 : &c.b1;
    auto r = c.b1.api().Post("/v1/reassignments",
                             "{\"topic\":\"kv\",\"partition\":" + std::to_string(p) + ",\"dest\":\"" + to->id + "\"}",
                             "application/json");
    REQUIRE(r);
    REQUIRE(r->status / 100 == 2);
    REQUIRE(eventually([&] { return owner_of(p) == to; }, std::chrono::seconds(30)));
  }
  CHECK(epochs() == before);  // no member was asked to rejoin for the moves
  // The group's coordinator dies and comes back; the members keep consuming from their committed offsets.
  auto r = c.b1.api().Get("/v1/groups/gv");
  REQUIRE(r);
  rapidjson::Document d;
  d.Parse(r->body.c_str());
  const std::string coordinator = d["coordinator"].GetString();
  moonmqd_process* dead = coordinator == "b1" ? &c.b1 : coordinator == "b2" ? &c.b2 : &c.b3;
  dead->kill9();
  dead->start();
  for (auto* t : {&producer, &a, &b}) t->join();
  INFO(produced.err << first.err << second.err);
  REQUIRE(produced.exit_code == 0);
  REQUIRE(first.exit_code == 0);
  REQUIRE(second.exit_code == 0);
  std::map<std::string, int> times;
  for (const auto* out : {&first.out, &second.out})
    for (const auto& m : json_lines(*out)) {
      if (m.HasMember("key")) ++times[m["key"].GetString()];
    }
  CHECK(times.size() == 2400);
  int repeated = 0;
  for (const auto& [key, n] : times) repeated += n - 1;
  CHECK(repeated <= 60);  // at most what was consumed and not yet committed when something changed
}

TEST_CASE("e2e kafka: librdkafka members that offer only cooperative-sticky share a group: each partition held by one, "
          "handed over when one leaves, every record read",
          "[e2e][kafka]") {
  kafka_cluster c;
  REQUIRE(client({"create", c.bootstrap(c.b1), "kc", "6"}).exit_code == 0);
  process_result produced, first, second;
  std::thread producer([&] { produced = client({"produce", c.bootstrap(c.b1), "kc", "1200", "12", "6"}); });
  std::thread a([&] {
    first = client({"group", c.bootstrap(c.b1), "gc", "kc", "8", "300", "close", "cooperative-sticky"});
  });
  std::thread b([&] { second = client({"group", c.bootstrap(c.b2), "gc", "kc", "8", "0", "close", "cooperative-sticky"}); });
  CHECK(eventually([&] { return balanced(group_members(c.b3, "gc"), 2, 6); }, std::chrono::seconds(30)));
  a.join();
  CHECK(eventually([&] { return balanced(group_members(c.b3, "gc"), 1, 6); }, std::chrono::seconds(20)));
  producer.join();
  b.join();
  INFO(produced.err << first.out.substr(0, 3000) << first.err << second.err);
  REQUIRE(produced.exit_code == 0);
  REQUIRE(first.exit_code == 0);
  REQUIRE(second.exit_code == 0);
  std::map<std::string, int> times;
  for (const auto* out : {&first.out, &second.out})
    for (const auto& m : json_lines(*out)) {
      if (m.HasMember("commit_error")) FAIL("a commit failed: " << m["commit_error"].GetString());
      if (m.HasMember("key")) ++times[m["key"].GetString()];
    }
  CHECK(times.size() == 1200);
  for (const auto& [key, n] : times) CHECK(n == 1);  // nobody crashed: handed over at commits, nothing read twice
}

TEST_CASE("e2e kafka: records of transactions made over HTTP read over Kafka: read_committed sees the committed ones "
          "only, read_uncommitted sees all",
          "[e2e][kafka]") {
  kafka_cluster c;
  auto made = c.b1.api().Post("/v1/topics", R"({"name":"kmix","partitions":1,"placement":"local"})", "application/json");
  REQUIRE(made);
  REQUIRE(made->status / 100 == 2);
  auto r = c.b1.api().Post("/v1/producers", R"({"transactional_id":"mixed"})", "application/json");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  rapidjson::Document d;
  d.Parse(r->body.c_str());
  const std::uint64_t id = d["producer_id"].GetUint64();
  std::uint32_t epoch = d["producer_epoch"].GetUint();
  // Three transactions (commit, abort, commit), then one left open.
  auto txn = [&](const std::vector<std::string>& values, std::optional<bool> commit) {
    std::string records;
    for (const auto& v : values) records += (records.empty() ? "" : ",") + std::string("{\"value\":\"") + v + "\"}";
    auto p = c.b1.api().Post("/v1/topics/kmix/records",
                             "{\"partition\":0,\"records\":[" + records + "],\"producer\":{\"id\":" + std::to_string(id) +
                                 ",\"epoch\":" + std::to_string(epoch) +
                                 ",\"sequence\":0},\"transaction\":{\"transactional_id\":\"mixed\"}}",
                             "application/json");
    REQUIRE(p);
    INFO(p->body);
    REQUIRE(p->status == 200);
    if (!commit) return;
    auto e = c.b1.api().Post(*commit ? "/v1/transactions/mixed/commit" : "/v1/transactions/mixed/abort",
                             "{\"producer_id\":" + std::to_string(id) + ",\"producer_epoch\":" + std::to_string(epoch) +
                                 ",\"wait\":true}",
                             "application/json");
    REQUIRE(e);
    INFO(e->body);
    REQUIRE(e->status == 200);
    rapidjson::Document ed;
    ed.Parse(e->body.c_str());
    epoch = ed["producer_epoch"].GetUint();
  };
  txn({"c1", "c2"}, true);
  txn({"a1"}, false);
  txn({"c3"}, true);
  txn({"o1"}, std::nullopt);
  auto read = [&](const char* isolation) {
    auto got = run_process({"/usr/bin/kcat", "-b", c.bootstrap(c.b2), "-C", "-t", "kmix", "-p", "0", "-o", "beginning",
                            "-e", "-q", "-X", std::string("isolation.level=") + isolation, "-f", "%s\n"});
    INFO(got.err);
    CHECK(got.exit_code == 0);
    return got.out;
  };
  CHECK(read("read_committed") == "c1\nc2\nc3\n");  // nothing aborted, nothing of the open transaction
  CHECK(read("read_uncommitted") == "c1\nc2\na1\nc3\no1\n");
}

TEST_CASE("e2e kafka: a member over HTTP and a librdkafka member in one group never hold the same partition, and "
          "the HTTP member holds only what its broker serves",
          "[e2e][kafka]") {
  kafka_cluster c;
  REQUIRE(client({"create", c.bootstrap(c.b1), "kh", "6"}).exit_code == 0);
  auto serves = [](moonmqd_process& b, int p) {
    auto r = b.api().Get(("/v1/topics/kh/partitions/" + std::to_string(p) + "/records?max_bytes=1").c_str());
    return r && r->status == 200;
  };
  // The HTTP member, through b1, heartbeating every 200 ms with what it holds, on a thread of its own.
  std::atomic<bool> stop{false};
  std::mutex held_mu;
  std::set<int> http_held;
  std::thread http([&] {
    std::string id;
    std::uint64_t epoch = 0;
    std::set<int> held;
    while (!stop) {
      std::string body;
      if (id.empty()) {
        body = R"({"topics":["kh"]})";
      } else {
        std::string owned;
        for (int p : held) owned += (owned.empty() ? "" : ",") + std::string("{\"topic\":\"kh\",\"partition\":") +
                                    std::to_string(p) + "}";
        body = "{\"member_id\":\"" + id + "\",\"member_epoch\":" + std::to_string(epoch) + ",\"owned\":[" + owned + "]}";
      }
      auto r = c.b1.api().Post(id.empty() ? "/v1/groups/gh/join" : "/v1/groups/gh/heartbeat", body, "application/json");
      if (r && r->status == 200) {
        rapidjson::Document d;
        d.Parse(r->body.c_str());
        id = d["member_id"].GetString();
        epoch = d["member_epoch"].GetUint64();
        held.clear();
        for (const auto& p : d["assignment"].GetArray()) held.insert(p["partition"].GetInt());
        std::lock_guard lock(held_mu);
        http_held = held;
      } else if (r && (r->status == 404 || r->status == 409)) {
        id.clear();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    if (!id.empty()) c.b1.api().Post("/v1/groups/gh/leave", "{\"member_id\":\"" + id + "\"}", "application/json");
  });
  process_result kafka;
  std::thread k([&] { kafka = client({"group", c.bootstrap(c.b2), "gh", "kh", "6"}); });
  std::thread producer([&] { (void)client({"produce", c.bootstrap(c.b3), "kh", "300", "3", "6"}); });
  // Both members in, every partition held by exactly one of them; the HTTP member's only on b1.
  // (Not evenly: the HTTP member can take only b1's two partitions.)
  auto each_once = [&] {
    const auto g = group_members(c.b2, "gh");
    std::multiset<int> held;
    for (const auto& [id, parts] : g) held.insert(parts.begin(), parts.end());
    if (g.size() != 2 || held.size() != 6) return false;
    for (int p = 0; p < 6; ++p)
      if (held.count(p) != 1) return false;
    return true;
  };
  const bool shared = eventually(each_once, std::chrono::seconds(30));
  CHECK(shared);
  for (int round = 0; round < 10; ++round) {  // and it stays so: checked a few times a second for a while
    const auto g = group_members(c.b2, "gh");
    std::multiset<int> held;
    for (const auto& [id, parts] : g) held.insert(parts.begin(), parts.end());
    for (int p = 0; p < 6; ++p) CHECK(held.count(p) <= 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  {
    std::lock_guard lock(held_mu);
    CHECK_FALSE(http_held.empty());
    for (int p : http_held) CHECK(serves(c.b1, p));
  }
  producer.join();
  k.join();
  stop = true;
  http.join();
  INFO(kafka.err);
  CHECK(kafka.exit_code == 0);
}
