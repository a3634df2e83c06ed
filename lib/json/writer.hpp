// Small helpers for writing JSON answers with RapidJSON. Internal to lib/ and daemon/.
#pragma once

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <concepts>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace moonmq::json {

using writer = rapidjson::Writer<rapidjson::StringBuffer>;

/// A JSON object whose members `fill(writer&)` writes.
template <typename F>
std::string object(F&& fill) {
  rapidjson::StringBuffer buf;
  writer w(buf);
  w.StartObject();
  fill(w);
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

/// A string member.
inline void put(writer& w, const char* key, const std::string& value) {
  w.Key(key);
  w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
}

/// A string member from a literal (without this overload a literal would convert to bool).
inline void put(writer& w, const char* key, const char* value) {
  w.Key(key);
  w.String(value);
}

inline void put(writer& w, const char* key, bool value) {
  w.Key(key);
  w.Bool(value);
}

/// A whole-number member, signed or not.
template <std::integral T>
  requires(!std::same_as<T, bool> && !std::same_as<T, char>)
void put(writer& w, const char* key, T value) {
  w.Key(key);
  if constexpr (std::is_signed_v<T>)
    w.Int64(static_cast<std::int64_t>(value));
  else
    w.Uint64(static_cast<std::uint64_t>(value));
}

/// `key` as an array of strings.
inline void put(writer& w, const char* key, const std::vector<std::string>& values) {
  w.Key(key);
  w.StartArray();
  for (const auto& v : values) w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
  w.EndArray();
}

inline void put(writer& w, const char* key, double value) {
  w.Key(key);
  w.Double(value);
}

}  // namespace moonmq::json
