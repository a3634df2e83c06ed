// moonmqctl's shared output: the global options, the exit statuses, reading fields of a broker's JSON answer and
// printing an answer as a table or as the JSON itself. Every subcommand prints through these.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "broker_client.hpp"

namespace moonmq::ctl {

constexpr int exit_refused = 1, exit_usage = 2, exit_unreachable = 3;

struct options {
  std::string broker = "127.0.0.1:9092";
  std::string token;
  bool json = false;
  int timeout = 10;
};

std::string str(const rapidjson::Value& v, const char* k);
inline double num(const rapidjson::Value& v, const char* k) {
  return v.IsObject() && v.HasMember(k) && v[k].IsNumber() ? v[k].GetDouble() : 0;
}
inline bool flag(const rapidjson::Value& v, const char* k) {
  return v.IsObject() && v.HasMember(k) && v[k].IsBool() && v[k].GetBool();
}
const rapidjson::Value& array(const rapidjson::Value& v, const char* k);

/// A name as one path segment or query value: every byte but letters, digits and -._~ percent-encoded.
std::string encoded(const std::string& s);

/// Prints a failed answer and returns the exit status for it: a line of text on stderr, or with errors_as_json, a
/// JSON object {"error","message","status"} (status 0: the broker was not reached).
int failed(const answer& a);
/// Whether failed() writes JSON (--json).
void errors_as_json(bool on);
/// A usage mistake, printed like a failed answer ({"error":"usage"} with --json); returns exit_usage.
int usage_mistake(const std::string& message);

/// Runs one request: the JSON as is with --json, otherwise `human` on the parsed answer. A partly applied answer
/// (503 with a body listing what failed) is shown like a success, and the exit status still says it failed.
int show(const options& o, const answer& a, const std::function<void(const rapidjson::Document&)>& human);

void print_unreachable(const rapidjson::Value& d);

void print_applied(const rapidjson::Value& d);

/// "50M", "1.5GiB", "1048576" -> bytes; nullopt for anything else.
std::optional<std::uint64_t> parse_rate(std::string s);

std::string rate_text(std::uint64_t r);

/// Copy rates a watcher measured itself, by move (source, id), between two of its samples (bytes/s).
using measured_rates = std::map<std::pair<std::string, std::uint64_t>, double>;

/// The moves table. With `rates` (a watch), a move's rate and ETA are the watcher's own, and shown only once it has
/// two samples of that move (the broker's own figure may be a burst at first).
void print_moves(const rapidjson::Value& d, const measured_rates* rates = nullptr);

/// A broker's drain in a few words: "", "drained", "draining: 3 left, 1.2 GiB, ETA 2m10s".
std::string drain_text(const rapidjson::Value& b);

bool any_running(const std::string& body);

}  // namespace moonmq::ctl
