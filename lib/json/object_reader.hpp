// Strict reading of JSON objects with RapidJSON: every key must be known, every value of the expected type, and the
// first fault is reported with the full path of the key ("Server.Autobalance.Goals[1].Deviation: expected a number").
// Used by every parser in lib/ (configuration, planner snapshots, request bodies). Internal to lib/.
// Thread safety: a reader is used by one thread.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "json/parse.hpp"
#include "moonmq/core/result.hpp"

namespace moonmq::json {

/// The name of a JSON value's type, for messages ("a string", "an array", ...).
const char* type_name(const rapidjson::Value& v);

/// Reads one JSON object. Each getter marks its key as known; `finish()` reports the first unknown key.
/// Getters return false and record the error on a type fault; after the first error, every call is a no-op.
class object_reader {
 public:
  object_reader(const rapidjson::Value& v, std::string path);

  bool ok() const noexcept { return error_.ok(); }
  const status& first_error() const noexcept { return error_; }
  const std::string& path() const noexcept { return path_; }

  bool has(std::string_view key) const;
  /// The raw member (and marks it known), or nullptr.
  const rapidjson::Value* member(std::string_view key);

  bool get(std::string_view key, std::string& out, bool required = false);
  bool get(std::string_view key, bool& out, bool required = false);
  bool get(std::string_view key, double& out, bool required = false);
  bool get(std::string_view key, std::optional<double>& out);
  bool get(std::string_view key, std::uint32_t& out, bool required = false);
  bool get(std::string_view key, std::int64_t& out, bool required = false);
  bool get(std::string_view key, std::uint64_t& out, bool required = false);
  bool get(std::string_view key, std::vector<std::string>& out, bool required = false);

  /// Requires a number >= 0 at `key` (if present).
  bool non_negative(std::string_view key, double value);
  /// Records a fault at `key` with `message` and returns false.
  bool fail(std::string_view key, std::string_view message);
  /// Records a fault that is not about one key.
  bool fail_here(std::string_view message);
  /// The path of a child key, for nested readers.
  std::string child_path(std::string_view key) const;

  /// Reports the first key that no getter asked for; returns the overall status.
  status finish();

 private:
  const rapidjson::Value* find(std::string_view key, bool required);

  const rapidjson::Value& v_;
  std::string path_;
  std::set<std::string, std::less<>> known_;
  status error_;
};

/// Parses `text` as one object (`what` names it in errors) and reads it into a T: `read(reader, out)` asks for its
/// fields and returns its own verdict; then a key it did not ask for is refused. The shape of every request reader.
template <typename T, typename Read>
result<T> read_object(std::string_view text, std::string_view what, Read&& read) {
  rapidjson::Document d;
  if (auto s = parse_document(text, d, what); !s) return s.err();
  object_reader r(d, "");
  T out{};
  if (status s = read(r, out); !s) return s.err();
  if (auto s = r.finish(); !s) return s.err();
  return out;
}

}  // namespace moonmq::json
