// Small helpers for writing JSON answers with RapidJSON. Internal to lib/ and daemon/.
#pragma once

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <string>

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

}  // namespace moonmq::json
