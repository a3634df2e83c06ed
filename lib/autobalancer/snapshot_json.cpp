#include "moonmq/autobalancer/snapshot_json.hpp"

#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <set>
#include <unordered_set>

#include "autobalancer/config_reader.hpp"
#include "json/object_reader.hpp"

namespace moonmq::autobalancer {

namespace {

std::string index_path(const char* array, rapidjson::SizeType i) { return fmt::format("{}[{}]", array, i); }

}  // namespace

std::string render_planner_input(const snapshot& snap, const autobalance_config* config) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  auto str = [&](const std::string& v) { w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size())); };
  w.StartObject();
  w.Key("brokers");
  w.StartArray();
  for (broker_index b = 0; b < snap.broker_count(); ++b) {
    w.StartObject();
    w.Key("id");
    str(snap.broker_id(b));
    w.Key("active");
    w.Bool(snap.active(b));
    if (snap.held_disk(b) > 0) {
      w.Key("held_disk");
      w.Double(snap.held_disk(b));
    }
    bool stated = false;
    for (std::size_t k = 0; k < resource_count; ++k) stated = stated || snap.capacity(b, static_cast<resource>(k)) > 0;
    if (stated) {
      w.Key("capacity");
      w.StartObject();
      for (std::size_t k = 0; k < resource_count; ++k) {
        const double c = snap.capacity(b, static_cast<resource>(k));
        if (c <= 0) continue;
        w.Key(resource_name(static_cast<resource>(k)));
        w.Double(c);
      }
      w.EndObject();
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("partitions");
  w.StartArray();
  for (partition_index p = 0; p < snap.partition_count(); ++p) {
    w.StartObject();
    w.Key("topic");
    str(snap.topic(p));
    w.Key("partition");
    w.Int(snap.partition_number(p));
    w.Key("broker");
    str(snap.broker_id(snap.owner(p)));
    for (std::size_t k = 0; k < resource_count; ++k) {
      w.Key(resource_name(static_cast<resource>(k)));
      w.Double(snap.load(p, static_cast<resource>(k)));
    }
    w.EndObject();
  }
  w.EndArray();
  if (config) {
    w.Key("autobalance");
    w.StartObject();
    w.Key("MaxActionsPerDetect");
    w.Uint(config->max_actions_per_detect);
    w.Key("MaxMovesPerBroker");
    w.Uint(config->max_moves_per_broker);
    w.Key("ExcludedTopics");
    w.StartArray();
    for (const auto& t : config->excluded_topics) str(t);
    w.EndArray();
    w.Key("ExcludedBrokers");
    w.StartArray();
    for (const auto& b : config->excluded_brokers) str(b);
    w.EndArray();
    if (config->max_utilization != autobalance_config{}.max_utilization) {
      w.Key("MaxUtilization");
      w.Double(config->max_utilization);
    }
    auto capacity = [&](const broker_capacity& c) {
      w.StartObject();
      for (auto [key, value] : {std::pair<const char*, double>{"NwIn", c.nw_in}, {"NwOut", c.nw_out}, {"Disk", c.disk}})
        if (value > 0) {
          w.Key(key);
          w.Double(value);
        }
      w.EndObject();
    };
    if (config->default_capacity != broker_capacity{} || !config->capacity.empty()) {
      w.Key("Capacity");
      w.StartObject();
      w.Key("Default");
      capacity(config->default_capacity);
      w.Key("Brokers");
      w.StartObject();
      for (const auto& [id, c] : config->capacity) {
        str(id);
        capacity(c);
      }
      w.EndObject();
      w.EndObject();
    }
    w.Key("Goals");
    w.StartArray();
    for (const auto& g : config->goals) {
      w.StartObject();
      w.Key("Name");
      str(g.name);
      if (g.deviation) {
        w.Key("Deviation");
        w.Double(*g.deviation);
      }
      if (g.detect_threshold) {
        w.Key("DetectThreshold");
        w.Double(*g.detect_threshold);
      }
      if (g.min_change) {
        w.Key("MinChange");
        w.Double(*g.min_change);
      }
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

result<planner_input> parse_planner_input(std::string_view text) {
  rapidjson::Document doc;
  if (auto s = json::parse_document(text, doc, "snapshot"); !s) return s.err();
  json::object_reader top(doc, "");
  planner_input in;

  const auto* brokers = top.member("brokers");
  const auto* partitions = top.member("partitions");
  const auto* autobalance = top.member("autobalance");
  if (!top.ok()) return top.first_error().err();
  if (!brokers) return error{errc::invalid_argument, "brokers: is required"};
  if (!brokers->IsArray())
    return error{errc::invalid_argument, std::string("brokers: expected an array, got ") + json::type_name(*brokers)};
  if (!partitions) return error{errc::invalid_argument, "partitions: is required"};
  if (!partitions->IsArray())
    return error{errc::invalid_argument,
                 std::string("partitions: expected an array, got ") + json::type_name(*partitions)};
  if (autobalance) {
    if (auto s = read_autobalance_config(*autobalance, "autobalance", in.config); !s) return s.err();
  }
  if (auto s = top.finish(); !s) return s.err();

  for (rapidjson::SizeType i = 0; i < brokers->Size(); ++i) {
    json::object_reader r((*brokers)[i], index_path("brokers", i));
    std::string id;
    bool active = true;
    double held = 0;
    load_vector capacity;
    r.get("id", id, true);
    r.get("active", active);
    if (r.get("held_disk", held)) r.non_negative("held_disk", held);
    if (const auto* cap = r.member("capacity"); cap && r.ok()) {
      json::object_reader c(*cap, r.child_path("capacity"));
      for (std::size_t k = 0; k < resource_count; ++k) {
        const char* key = resource_name(static_cast<resource>(k));
        if (c.has(key) && c.get(key, capacity.v[k]) && capacity.v[k] <= 0) c.fail(key, "must be positive");
      }
      if (auto s = c.finish(); !s) return s.err();
    }
    if (r.ok() && id.empty()) r.fail("id", "must not be empty");
    if (r.ok() && in.snap.find_broker(id) != no_index) r.fail("id", "broker '" + id + "' is listed twice");
    if (auto s = r.finish(); !s) return s.err();
    auto b = in.snap.add_broker(id, active);
    if (held > 0) in.snap.set_held_disk(b, held);
    for (std::size_t k = 0; k < resource_count; ++k)
      if (capacity.v[k] > 0) in.snap.set_capacity(b, static_cast<resource>(k), capacity.v[k]);
  }

  std::unordered_set<topic_partition> seen;
  for (rapidjson::SizeType i = 0; i < partitions->Size(); ++i) {
    json::object_reader r((*partitions)[i], index_path("partitions", i));
    std::string topic, broker;
    std::int64_t number = 0;
    load_vector load;
    r.get("topic", topic, true);
    r.get("partition", number, true);
    r.get("broker", broker, true);
    for (std::size_t k = 0; k < resource_count; ++k) {
      const char* key = resource_name(static_cast<resource>(k));
      if (r.get(key, load.v[k])) r.non_negative(key, load.v[k]);
    }
    if (r.ok() && topic.empty()) r.fail("topic", "must not be empty");
    if (r.ok() && (number < 0 || number > INT32_MAX)) r.fail("partition", "must be from 0 to 2147483647");
    broker_index owner = no_index;
    if (r.ok()) {
      owner = in.snap.find_broker(broker);
      if (owner == no_index) r.fail("broker", "unknown broker '" + broker + "'");
    }
    if (r.ok() && !seen.insert({topic, static_cast<std::int32_t>(number)}).second)
      r.fail("partition", fmt::format("{}-{} is listed twice", topic, number));
    if (auto s = r.finish(); !s) return s.err();
    in.snap.add_partition(topic, static_cast<std::int32_t>(number), owner, load);
  }
  return in;
}

namespace {

void write_totals(rapidjson::Writer<rapidjson::StringBuffer>& w, const broker_totals& t) {
  w.StartObject();
  for (std::size_t r = 0; r < resource_count; ++r) {
    w.Key(resource_name(static_cast<resource>(r)));
    w.Double(t.load.v[r]);
  }
  w.Key("partitions");
  w.Uint(t.partitions);
  w.EndObject();
}

void write_shortfalls(rapidjson::Writer<rapidjson::StringBuffer>& w, const std::vector<shortfall>& list) {
  auto str = [&](const std::string& v) { w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size())); };
  w.StartArray();
  for (const auto& f : list) {
    w.StartObject();
    w.Key("broker");
    str(f.broker);
    w.Key("goal");
    str(f.goal);
    w.Key("value");
    w.Double(f.value);
    w.Key("lower");
    w.Double(f.lower);
    w.Key("upper");
    w.Double(f.upper);
    w.Key("why");
    str(f.why);
    w.EndObject();
  }
  w.EndArray();
}

}  // namespace

std::string render_plan_json(const planner_report& report) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("actions");
  w.StartArray();
  for (const auto& a : report.actions) {
    w.StartObject();
    w.Key("type");
    w.String(action_type_name(a.type));
    w.Key("topic");
    w.String(a.topic.c_str(), static_cast<rapidjson::SizeType>(a.topic.size()));
    w.Key("partition");
    w.Int(a.partition);
    w.Key("src");
    w.String(a.src.c_str(), static_cast<rapidjson::SizeType>(a.src.size()));
    w.Key("dest");
    w.String(a.dest.c_str(), static_cast<rapidjson::SizeType>(a.dest.size()));
    if (a.type == action_type::swap) {
      w.Key("swap_topic");
      w.String(a.swap_topic.c_str(), static_cast<rapidjson::SizeType>(a.swap_topic.size()));
      w.Key("swap_partition");
      w.Int(a.swap_partition);
    }
    if (report.explained) {
      const std::size_t i = static_cast<std::size_t>(&a - report.actions.data());
      w.Key("chosen_by");
      w.String(a.chosen_by.c_str(), static_cast<rapidjson::SizeType>(a.chosen_by.size()));
      const action_effect& e = report.effects[i];
      for (auto [key, t] : {std::pair<const char*, const broker_totals*>{"src_before", &e.src_before},
                            {"src_after", &e.src_after},
                            {"dest_before", &e.dest_before},
                            {"dest_after", &e.dest_after}}) {
        w.Key(key);
        write_totals(w, *t);
      }
    }
    w.EndObject();
  }
  w.EndArray();
  if (report.explained) {
    w.Key("out_of_band");
    write_shortfalls(w, report.out_of_band);
  }
  w.Key("passes");
  w.Uint64(report.passes);
  w.Key("converged");
  w.Bool(report.converged);
  w.Key("satisfied");
  w.Bool(report.satisfied);
  w.Key("brokers");
  w.StartArray();
  for (const auto& b : report.brokers) {
    w.StartObject();
    w.Key("id");
    w.String(b.id.c_str(), static_cast<rapidjson::SizeType>(b.id.size()));
    w.Key("active");
    w.Bool(b.active);
    w.Key("before");
    write_totals(w, b.before);
    w.Key("after");
    write_totals(w, b.after);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

namespace {

/// 1536 -> "1.5 Ki", in binary units, for the table.
std::string human(double v) {
  static const char* units[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f}", v) : fmt::format("{:.1f} {}", v, units[u]);
}

}  // namespace

std::string render_plan_text(const planner_report& report) {
  std::string out;
  out += fmt::format("{:<12} {:>23} {:>23} {:>23} {:>13}\n", "broker", "nw_in B/s before>after",
                     "nw_out B/s before>after", "disk B before>after", "partitions");
  for (const auto& b : report.brokers) {
    std::string id = b.active ? b.id : b.id + " (down)";
    out += fmt::format("{:<12} {:>23} {:>23} {:>23} {:>13}\n", id,
                       human(b.before.load[resource::nw_in]) + " > " + human(b.after.load[resource::nw_in]),
                       human(b.before.load[resource::nw_out]) + " > " + human(b.after.load[resource::nw_out]),
                       human(b.before.load[resource::disk]) + " > " + human(b.after.load[resource::disk]),
                       fmt::format("{} > {}", b.before.partitions, b.after.partitions));
  }
  out += fmt::format("\n{} action(s) in {} pass(es); {}; goals {}\n", report.actions.size(), report.passes,
                     report.converged ? "converged" : "not converged", report.satisfied ? "met" : "not all met");
  for (const auto& a : report.actions) {
    if (a.type == action_type::swap)
      out += fmt::format("  SWAP {}-{} {} -> {}  with {}-{}\n", a.topic, a.partition, a.src, a.dest, a.swap_topic,
                         a.swap_partition);
    else
      out += fmt::format("  MOVE {}-{} {} -> {}\n", a.topic, a.partition, a.src, a.dest);
    if (!report.explained) continue;
    const action_effect& e = report.effects[static_cast<std::size_t>(&a - report.actions.data())];
    auto line = [&](const std::string& id, const broker_totals& x, const broker_totals& y) {
      return fmt::format("      {:<10} nw_in {} > {}, nw_out {} > {}, disk {} > {}, partitions {} > {}\n", id,
                         human(x.load[resource::nw_in]), human(y.load[resource::nw_in]),
                         human(x.load[resource::nw_out]), human(y.load[resource::nw_out]),
                         human(x.load[resource::disk]), human(y.load[resource::disk]), x.partitions, y.partitions);
    };
    out += "      chosen by " + a.chosen_by + "\n";
    out += line(a.src, e.src_before, e.src_after);
    out += line(a.dest, e.dest_before, e.dest_after);
  }
  if (report.explained) {
    out += report.out_of_band.empty() ? "\nevery broker is inside every band\n" : "\nstill out of band:\n";
    for (const auto& f : report.out_of_band)
      out += fmt::format("  {} {}: {} outside {}..{}: {}\n", f.broker, f.goal, human(f.value), human(f.lower),
                         human(f.upper), f.why);
  }
  return out;
}

}  // namespace moonmq::autobalancer
