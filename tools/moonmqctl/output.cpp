// moonmqctl's shared output (declared and documented in output.hpp): JSON field readers, the failed/show pair every
// subcommand answers through, and the printers for rates, moves, drains and partly applied requests.
#include "output.hpp"

#include <cctype>
#include <cstdlib>
#include <iostream>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "table.hpp"

namespace moonmq::ctl {

std::string str(const rapidjson::Value& v, const char* k) {
  if (!v.IsObject() || !v.HasMember(k)) return "";
  const auto& m = v[k];
  if (m.IsString()) return m.GetString();
  if (m.IsBool()) return m.GetBool() ? "yes" : "no";
  if (m.IsUint64()) return std::to_string(m.GetUint64());
  if (m.IsInt64()) return std::to_string(m.GetInt64());
  if (m.IsNumber()) return std::to_string(m.GetDouble());
  return "";
}
const rapidjson::Value& array(const rapidjson::Value& v, const char* k) {
  static const rapidjson::Value empty(rapidjson::kArrayType);
  return v.IsObject() && v.HasMember(k) && v[k].IsArray() ? v[k] : empty;
}

std::string encoded(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

namespace {
bool json_errors = false;

/// One error as a JSON line on stderr; `peer`, when given, is the broker's `peer` object (who did not answer, why).
void json_error(const std::string& error, const std::string& message, int status,
                const rapidjson::Value* peer = nullptr) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("error");
  w.String(error.c_str(), static_cast<rapidjson::SizeType>(error.size()));
  w.Key("message");
  w.String(message.c_str(), static_cast<rapidjson::SizeType>(message.size()));
  w.Key("status");
  w.Int(status);
  if (peer) {
    w.Key("peer");
    peer->Accept(w);
  }
  w.EndObject();
  std::cerr << buf.GetString() << "\n";
}
}  // namespace

void errors_as_json(bool on) { json_errors = on; }

int usage_mistake(const std::string& message) {
  if (json_errors)
    json_error("usage", message, 0);
  else
    std::cerr << "moonmqctl: " << message << "\n";
  return exit_usage;
}

int failed(const answer& a) {
  if (a.status == 0) {
    if (json_errors)
      json_error("unreachable", a.body, 0);
    else
      std::cerr << "moonmqctl: " << a.body << "\n";
    return exit_unreachable;
  }
  rapidjson::Document d;
  d.Parse(a.body.c_str(), a.body.size());
  const bool structured = !d.HasParseError() && d.IsObject() && d.HasMember("message");
  const rapidjson::Value* peer = structured && d.HasMember("peer") && d["peer"].IsObject() ? &d["peer"] : nullptr;
  if (json_errors)
    json_error(structured ? str(d, "error") : "http_" + std::to_string(a.status), structured ? str(d, "message") : a.body,
               a.status, peer);
  else if (structured)
    std::cerr << "moonmqctl: " << a.status << " " << str(d, "error") << ": " << str(d, "message")
              << (peer ? " (" + str(*peer, "id") + ": " + str(*peer, "error") + ": " + str(*peer, "message") + ")"
                       : std::string())
              << "\n";
  else
    std::cerr << "moonmqctl: HTTP " << a.status << ": " << a.body << "\n";
  return exit_refused;
}

int show(const options& o, const answer& a, const std::function<void(const rapidjson::Document&)>& human) {
  if (!a.ok() && !(a.status == 503 && a.body.find("\"applied\"") != std::string::npos)) return failed(a);
  if (o.json) {
    std::cout << a.body << "\n";
  } else {
    rapidjson::Document d;
    d.Parse(a.body.c_str(), a.body.size());
    if (d.HasParseError() || !d.IsObject()) {
      std::cerr << "moonmqctl: the broker's answer is not JSON: " << a.body << "\n";
      return exit_refused;
    }
    human(d);
  }
  return a.ok() ? 0 : failed(a);
}

void print_unreachable(const rapidjson::Value& d) {
  for (const auto& u : array(d, "unreachable").GetArray())
    std::cout << "warning: " << str(u, "broker") << " did not answer (" << str(u, "error")
              << "); what it holds is not shown\n";
}

void print_applied(const rapidjson::Value& d) {
  std::string applied;
  for (const auto& b : array(d, "applied").GetArray()) applied += (applied.empty() ? "" : ", ") + std::string(b.GetString());
  std::cout << "applied on: " << (applied.empty() ? "none" : applied) << "\n";
  for (const auto& f : array(d, "failed").GetArray())
    std::cout << "NOT applied on " << str(f, "broker") << ": " << str(f, "error") << "\n";
}

std::optional<std::uint64_t> parse_rate(std::string s) {
  double mult = 1;
  auto strip = [&](const std::string& suffix, double m) {
    if (s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0) {
      s.resize(s.size() - suffix.size());
      mult = m;
      return true;
    }
    return false;
  };
  strip("/s", 1);
  strip("B", 1);
  (void)(strip("Ki", 1024.0) || strip("Mi", 1024.0 * 1024) || strip("Gi", 1024.0 * 1024 * 1024) ||
         strip("K", 1024.0) || strip("M", 1024.0 * 1024) || strip("G", 1024.0 * 1024 * 1024));
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (*end != '\0' || v < 0) return std::nullopt;
  return static_cast<std::uint64_t>(v * mult);
}

std::string rate_text(std::uint64_t r) { return r == 0 ? "unlimited" : human_bytes(static_cast<double>(r)) + "/s"; }

void print_moves(const rapidjson::Value& d, const measured_rates* rates) {
  table t({"ID", "SOURCE", "PARTITION", "DEST", "STEP", "PROGRESS", "COPIED", "RATE", "ETA", "NOTE"});
  for (const auto& m : array(d, "reassignments").GetArray()) {
    const bool finished = flag(m, "finished");
    std::string note = str(m, "error");
    if (flag(m, "stalled")) note = "STALLED: " + str(m, "stalled_reason");
    else if (!finished && flag(m, "cancel_requested")) note = "cancelling";
    std::string rate, eta;
    if (!finished && !rates) {
      rate = human_bytes(num(m, "rate_bytes_per_sec")) + "/s";
      eta = human_seconds(num(m, "eta_seconds") > 0 || num(m, "rate_bytes_per_sec") > 0 ? num(m, "eta_seconds") : -1);
    } else if (!finished) {
      const auto id = m.HasMember("id") && m["id"].IsUint64() ? m["id"].GetUint64() : 0;
      const auto it = rates->find({str(m, "source"), id});
      if (it == rates->end()) {
        rate = eta = "-";  // one sample so far
      } else {
        rate = human_bytes(it->second) + "/s";
        const double left = num(m, "bytes_total") - num(m, "bytes_copied");
        eta = human_seconds(it->second > 0 ? left / it->second : -1);
      }
    }
    t.add({str(m, "id"), str(m, "source"), str(m, "topic") + "-" + str(m, "partition"), str(m, "dest"), str(m, "step"),
           finished && flag(m, "succeeded") ? moonmq::ctl::progress_bar(1, 1)
                                            : moonmq::ctl::progress_bar(num(m, "bytes_copied"), num(m, "bytes_total")),
           human_bytes(num(m, "bytes_copied")) + " / " + human_bytes(num(m, "bytes_total")), rate, eta, note});
  }
  if (t.empty())
    std::cout << "no moves\n";
  else
    std::cout << t.render();
  if (d.HasMember("throttle") && d["throttle"].IsObject()) {
    std::string line;
    for (const auto& b : d["throttle"].GetObject())
      line += (line.empty() ? "" : ", ") + std::string(b.name.GetString()) + " " +
              rate_text(b.value.IsUint64() ? b.value.GetUint64() : 0);
    std::cout << "copy throttle: " << line << "\n";
  }
  print_unreachable(d);
}

std::string drain_text(const rapidjson::Value& b) {
  if (!flag(b, "draining")) return "";
  if (!b.HasMember("drain") || !b["drain"].IsObject()) return "draining";
  const auto& d = b["drain"];
  if (flag(d, "done")) return "drained";
  if (!d.HasMember("partitions_left")) return "draining (starting)";
  std::string s = "draining: " + str(d, "partitions_left") + " left, " + human_bytes(num(d, "bytes_left")) +
                  ", ETA " + human_seconds(num(d, "eta_seconds"));
  // What waits for a move slot is queued, not blocked.
  std::size_t queued = 0, blocked = 0;
  for (const auto& x : array(d, "blocked").GetArray()) (str(x, "reason").rfind("waiting", 0) == 0 ? queued : blocked)++;
  if (queued) s += ", " + std::to_string(queued) + " queued";
  if (blocked) s += ", " + std::to_string(blocked) + " blocked";
  return s;
}

bool any_running(const std::string& body) {
  rapidjson::Document d;
  d.Parse(body.c_str(), body.size());
  if (d.HasParseError() || !d.IsObject()) return false;
  for (const auto& m : array(d, "reassignments").GetArray())
    if (!flag(m, "finished")) return true;
  return false;
}

}  // namespace moonmq::ctl
