// Committed-offset throughput: the offsets log (append one checksummed frame and fdatasync it per commit, compact
// when grown) against the plain baseline it replaced, in the same run and directory: the whole table written as one
// document to a state file per commit (write a temporary file, fsync, rename, fsync the directory). Both hold the same
// number of (group, partition) pairs before the timed commits. One JSON object per measurement.
//
//   offset_commit [PAIRS] [COMMITS] [DIR]    (defaults: 10000 pairs, 2000 commits, a directory under /var/tmp)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "moonmq/storage/durable_offset_store.hpp"
#include "moonmq/storage/file_state_file.hpp"

using namespace moonmq;
using namespace moonmq::storage;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "offset_commit: %s\n", what.c_str());
  std::exit(1);
}

topic_partition pair_of(std::size_t i) { return {"topic-" + std::to_string(i % 50), static_cast<std::int32_t>(i / 50)}; }

/// The plain baseline: every commit writes the whole table as one JSON document through a state file.
double run_document(const std::string& dir, std::size_t pairs, std::size_t commits) {
  auto file = make_file_state_file(dir + "/document.json");
  offset_table table;
  for (std::size_t i = 0; i < pairs; ++i) table.set("group-" + std::to_string(i % 7), pair_of(i), i);
  auto write = [&] {
    std::string doc = "{\"version\":1,\"offsets\":[";
    bool first = true;
    for (const auto& [k, v] : table.entries()) {
      doc += (first ? "" : ",") + std::string("{\"group\":\"") + std::get<0>(k) + "\",\"topic\":\"" + std::get<1>(k) +
             "\",\"partition\":" + std::to_string(std::get<2>(k)) + ",\"offset\":" + std::to_string(v) + "}";
      first = false;
    }
    if (!file->replace(doc + "]}")) die("state file write failed");
  };
  write();
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t c = 0; c < commits; ++c) {
    table.set("group-" + std::to_string(c % 7), pair_of(c % pairs), pairs + c);
    write();
  }
  return static_cast<double>(commits) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double run_log(const std::string& dir, std::size_t pairs, std::size_t commits) {
  auto store = open_durable_offset_store(dir + "/log");
  if (!store) die(store.message());
  for (std::size_t i = 0; i < pairs; ++i)
    if (!(*store)->commit("group-" + std::to_string(i % 7), pair_of(i), i)) die("commit failed");
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t c = 0; c < commits; ++c)
    if (!(*store)->commit("group-" + std::to_string(c % 7), pair_of(c % pairs), pairs + c)) die("commit failed");
  return static_cast<double>(commits) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t pairs = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10000;
  const std::size_t commits = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 2000;
  std::string dir;
  if (argc > 3) {
    dir = argv[3];
  } else {
    char tmpl[] = "/var/tmp/moonmq-offsets-XXXXXX";
    if (!mkdtemp(tmpl)) die("mkdtemp");
    dir = tmpl;
  }
  const double log = run_log(dir, pairs, commits);
  const double doc = run_document(dir, pairs, std::min<std::size_t>(commits, 300));
  std::system(("rm -rf '" + dir + "'").c_str());
  std::printf("{\"bench\":\"offset_commit\",\"pairs\":%zu,\"commits\":%zu,\"log_commits_s\":%.0f,"
              "\"document_commits_s\":%.0f,\"ratio\":%.1f}\n",
              pairs, commits, log, doc, log / doc);
  return 0;
}
