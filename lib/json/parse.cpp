#include "json/parse.hpp"

#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "moonmq/core/utf8.hpp"

namespace moonmq::json {

namespace {

/// Passes SAX events on to the document being built, refusing nesting past max_depth and repeated keys, and keeping
/// the path of the value being read for error messages.
class checking_handler {
 public:
  explicit checking_handler(rapidjson::Document& doc) : doc_(doc) {}

  bool Null() { return value() && doc_.Null(); }
  bool Bool(bool b) { return value() && doc_.Bool(b); }
  bool Int(int i) { return value() && doc_.Int(i); }
  bool Uint(unsigned u) { return value() && doc_.Uint(u); }
  bool Int64(std::int64_t i) { return value() && doc_.Int64(i); }
  bool Uint64(std::uint64_t u) { return value() && doc_.Uint64(u); }
  bool Double(double d) { return value() && doc_.Double(d); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool copy) { return value() && doc_.RawNumber(s, n, copy); }
  bool String(const char* s, rapidjson::SizeType n, bool copy) {
    return value() && well_formed(s, n) && doc_.String(s, n, copy);
  }

  bool StartObject() { return open(true) && doc_.StartObject(); }
  bool StartArray() { return open(false) && doc_.StartArray(); }
  bool EndObject(rapidjson::SizeType n) {
    if (!levels_.empty() && !distinct(levels_.back())) {
      problem_ = "a key appears twice in one object";
      return false;
    }
    close();
    return doc_.EndObject(n);
  }
  bool EndArray(rapidjson::SizeType n) {
    close();
    return doc_.EndArray(n);
  }
  bool Key(const char* s, rapidjson::SizeType n, bool copy) {
    level& l = levels_.back();
    l.key.assign(s, n);
    if (!well_formed(s, n)) return false;
    // Repeated keys: by name while an object is small (the error names the key), then by 64-bit hash, checked when
    // the object ends (8 bytes a key, whatever the keys' length).
    if (l.names.size() < names_kept) {
      if (std::find(l.names.begin(), l.names.end(), l.key) != l.names.end()) {
        problem_ = "key '" + l.key + "' appears twice in one object";
        return false;
      }
      l.names.push_back(l.key);
    } else {
      l.hashes.push_back(hash_of(l.key));
    }
    return doc_.Key(s, n, copy);
  }

  /// What the handler refused, if it refused anything.
  const std::string& problem() const { return problem_; }

  /// Where the parser is: "records[2].value", or "" at the top.
  std::string path() const {
    std::string p;
    for (const auto& l : levels_) {
      if (l.object) {
        if (l.key.empty()) continue;
        if (!p.empty()) p += '.';
        p += l.key;
      } else if (l.index > 0) {
        p += "[" + std::to_string(l.index - 1) + "]";
      }
    }
    return p;
  }

 private:
  static constexpr std::size_t names_kept = 64;

  struct level {
    bool object = false;
    std::size_t index = 0;  ///< arrays: values seen so far
    std::string key;        ///< objects: the current key
    std::vector<std::string> names;     ///< the first names_kept keys
    std::vector<std::uint64_t> hashes;  ///< the hashes of the keys after them
  };

  static std::uint64_t hash_of(std::string_view s) {
    std::uint64_t h = 14695981039346656037ull;  // FNV-1a
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
  }

  /// Whether the keys kept by hash differ from each other and from the keys kept by name.
  static bool distinct(level& l) {
    if (l.hashes.empty()) return true;
    for (const auto& n : l.names) l.hashes.push_back(hash_of(n));
    std::sort(l.hashes.begin(), l.hashes.end());
    return std::adjacent_find(l.hashes.begin(), l.hashes.end()) == l.hashes.end();
  }

  /// RapidJSON checks the raw bytes; an escape can still make a surrogate ("\uDC00"), which this refuses.
  bool well_formed(const char* s, rapidjson::SizeType n) {
    if (valid_utf8(std::string_view(s, n))) return true;
    problem_ = "not valid UTF-8";
    return false;
  }

  /// A value begins: counted in its array.
  bool value() {
    if (!levels_.empty() && !levels_.back().object) ++levels_.back().index;
    return true;
  }
  bool open(bool object) {
    value();
    if (levels_.size() >= max_depth) {
      problem_ = "nested deeper than " + std::to_string(max_depth) + " levels";
      return false;
    }
    levels_.push_back(level{object, 0, {}, {}, {}});
    return true;
  }
  void close() {
    if (!levels_.empty()) levels_.pop_back();
  }

  rapidjson::Document& doc_;
  std::vector<level> levels_;
  std::string problem_;
};

constexpr unsigned parse_flags = rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag;

}  // namespace

status parse_document(std::string_view text, rapidjson::Document& doc, std::string_view what) {
  std::string problem, path;
  rapidjson::ParseResult failed;
  auto generate = [&](rapidjson::Document& d) {
    checking_handler h(d);
    rapidjson::MemoryStream ms(text.data(), text.size());
    rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> in(ms);
    rapidjson::Reader reader;
    failed = reader.Parse<parse_flags>(in, h);
    problem = h.problem();
    path = h.path();
    return !failed.IsError();
  };
  doc.Populate(generate);
  if (!failed.IsError()) return {};
  std::string where = path.empty() ? std::string() : " (at '" + path + "')";
  if (problem == "not valid UTF-8")
    return {errc::invalid_argument, std::string(what) + ": " +
                                        (path.empty() ? std::string("a string") : "field '" + path + "'") +
                                        " is not valid UTF-8"};
  if (!problem.empty()) return {errc::invalid_argument, std::string(what) + ": " + problem + where};
  if (failed.Code() == rapidjson::kParseErrorStringInvalidEncoding)
    return {errc::invalid_argument, std::string(what) + ": " +
                                        (path.empty() ? std::string("a string") : "field '" + path + "'") +
                                        " is not valid UTF-8 (byte " + std::to_string(failed.Offset()) + ")"};
  return {errc::invalid_argument, std::string(what) + ": not valid JSON at byte " + std::to_string(failed.Offset()) +
                                      ": " + rapidjson::GetParseError_En(failed.Code())};
}

bool parse_object(std::string_view text, rapidjson::Document& doc) {
  return parse_document(text, doc, "answer") && doc.IsObject();
}

}  // namespace moonmq::json
