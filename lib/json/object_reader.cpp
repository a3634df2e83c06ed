#include "json/object_reader.hpp"

#include <rapidjson/error/en.h>

#include <cmath>
#include <limits>

namespace moonmq::json {

const char* type_name(const rapidjson::Value& v) {
  switch (v.GetType()) {
    case rapidjson::kNullType:
      return "null";
    case rapidjson::kFalseType:
    case rapidjson::kTrueType:
      return "a boolean";
    case rapidjson::kObjectType:
      return "an object";
    case rapidjson::kArrayType:
      return "an array";
    case rapidjson::kStringType:
      return "a string";
    case rapidjson::kNumberType:
      return "a number";
  }
  return "?";
}

object_reader::object_reader(const rapidjson::Value& v, std::string path) : v_(v), path_(std::move(path)) {
  if (!v_.IsObject())
    error_ = status{errc::invalid_argument,
                    (path_.empty() ? std::string("document") : path_) + ": expected an object, got " + type_name(v_)};
}

std::string object_reader::child_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

bool object_reader::has(std::string_view key) const {
  return v_.IsObject() && v_.FindMember(rapidjson::StringRef(key.data(), key.size())) != v_.MemberEnd();
}

const rapidjson::Value* object_reader::find(std::string_view key, bool required) {
  if (!ok()) return nullptr;
  known_.emplace(key);
  auto it = v_.FindMember(rapidjson::StringRef(key.data(), key.size()));
  if (it == v_.MemberEnd()) {
    if (required) fail(key, "is required");
    return nullptr;
  }
  return &it->value;
}

const rapidjson::Value* object_reader::member(std::string_view key) { return find(key, false); }

bool object_reader::fail(std::string_view key, std::string_view message) {
  if (ok()) error_ = status{errc::invalid_argument, child_path(key) + ": " + std::string(message)};
  return false;
}

bool object_reader::fail_here(std::string_view message) {
  if (ok()) error_ = status{errc::invalid_argument, (path_.empty() ? "document" : path_) + ": " + std::string(message)};
  return false;
}

bool object_reader::get(std::string_view key, std::string& out, bool required) {
  const auto* m = find(key, required);
  if (!m) return ok();
  if (!m->IsString()) return fail(key, std::string("expected a string, got ") + type_name(*m));
  out.assign(m->GetString(), m->GetStringLength());
  return true;
}

bool object_reader::get(std::string_view key, bool& out, bool required) {
  const auto* m = find(key, required);
  if (!m) return ok();
  if (!m->IsBool()) return fail(key, std::string("expected true or false, got ") + type_name(*m));
  out = m->GetBool();
  return true;
}

bool object_reader::get(std::string_view key, double& out, bool required) {
  const auto* m = find(key, required);
  if (!m) return ok();
  if (!m->IsNumber()) return fail(key, std::string("expected a number, got ") + type_name(*m));
  double d = m->GetDouble();
  if (!std::isfinite(d)) return fail(key, "expected a finite number");
  out = d;
  return true;
}

bool object_reader::get(std::string_view key, std::optional<double>& out) {
  double d = 0;
  const bool present = has(key);
  if (!get(key, d, false)) return false;
  if (present) out = d;
  return true;
}

bool object_reader::get(std::string_view key, std::uint32_t& out, bool required) {
  const auto* m = find(key, required);
  if (!m) return ok();
  if (!m->IsUint()) return fail(key, std::string("expected a whole number from 0 to 4294967295, got ") + type_name(*m));
  out = m->GetUint();
  return true;
}

bool object_reader::get(std::string_view key, std::int64_t& out, bool required) {
  const auto* m = find(key, required);
  if (!m) return ok();
  if (!m->IsInt64()) return fail(key, std::string("expected a whole number, got ") + type_name(*m));
  out = m->GetInt64();
  return true;
}

bool object_reader::get(std::string_view key, std::uint64_t& out, bool required) {
  const auto* m = find(key, required);
  if (!m) return ok();
  if (!m->IsUint64()) return fail(key, std::string("expected a whole number >= 0, got ") + type_name(*m));
  out = m->GetUint64();
  return true;
}

bool object_reader::get(std::string_view key, std::vector<std::string>& out, bool required) {
  const auto* m = find(key, required);
  if (!m) return ok();
  if (!m->IsArray()) return fail(key, std::string("expected an array of strings, got ") + type_name(*m));
  std::vector<std::string> values;
  for (rapidjson::SizeType i = 0; i < m->Size(); ++i) {
    const auto& e = (*m)[i];
    if (!e.IsString())
      return fail(std::string(key) + "[" + std::to_string(i) + "]",
                  std::string("expected a string, got ") + type_name(e));
    values.emplace_back(e.GetString(), e.GetStringLength());
  }
  out = std::move(values);
  return true;
}

bool object_reader::non_negative(std::string_view key, double value) {
  if (value < 0) return fail(key, "must not be negative");
  return true;
}

status object_reader::finish() {
  if (!ok()) return error_;
  for (auto it = v_.MemberBegin(); it != v_.MemberEnd(); ++it) {
    std::string_view k(it->name.GetString(), it->name.GetStringLength());
    if (!known_.count(k)) return error_ = status{errc::invalid_argument, child_path(k) + ": unknown key"};
  }
  return error_;
}

}  // namespace moonmq::json
