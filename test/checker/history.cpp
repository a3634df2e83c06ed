#include "checker/history.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <optional>
#include <set>

namespace moonmq::check {

namespace {

struct record_seen {
  std::uint64_t offset = 0;
  std::string value;
};

struct op {
  std::size_t line = 0;
  std::string kind, topic, value, outcome, txn, isolation, group;
  std::int64_t partition = -1;
  std::optional<std::uint64_t> offset;
  bool final_read = false;
  std::vector<record_seen> records;

  std::string tp() const { return topic + "-" + std::to_string(partition); }
};

std::string str(const rapidjson::Value& o, const char* key) {
  auto it = o.FindMember(key);
  return it != o.MemberEnd() && it->value.IsString() ? std::string(it->value.GetString(), it->value.GetStringLength())
                                                     : std::string();
}

result<op> parse_line(std::string_view text, std::size_t line) {
  rapidjson::Document d;
  d.Parse(text.data(), text.size());
  auto bad = [&](const std::string& why) {
    return error{errc::invalid_argument, "history line " + std::to_string(line) + ": " + why};
  };
  if (d.HasParseError() || !d.IsObject()) return bad("not a JSON object");
  op o;
  o.line = line;
  o.kind = str(d, "op");
  o.topic = str(d, "topic");
  o.value = str(d, "value");
  o.outcome = str(d, "outcome");
  o.txn = str(d, "txn");
  o.isolation = str(d, "isolation");
  o.group = str(d, "group");
  if (auto p = d.FindMember("partition"); p != d.MemberEnd()) {
    if (!p->value.IsInt64()) return bad("partition is not an integer");
    o.partition = p->value.GetInt64();
  }
  if (auto f = d.FindMember("offset"); f != d.MemberEnd() && !f->value.IsNull()) {
    if (!f->value.IsUint64()) return bad("offset is not an unsigned integer");
    o.offset = f->value.GetUint64();
  }
  if (auto f = d.FindMember("final"); f != d.MemberEnd()) o.final_read = f->value.IsBool() && f->value.GetBool();
  if (o.kind == "produce") {
    if (o.topic.empty() || o.partition < 0 || o.value.empty()) return bad("a produce names topic, partition and value");
    if (o.outcome != "ok" && o.outcome != "fail" && o.outcome != "info") return bad("outcome is ok, fail or info");
    if (o.outcome == "ok" && !o.offset) return bad("an acknowledged produce has its offset");
  } else if (o.kind == "txn") {
    if (o.txn.empty()) return bad("a txn op names its txn");
    if (o.outcome != "commit" && o.outcome != "abort" && o.outcome != "info") return bad("outcome is commit, abort or info");
  } else if (o.kind == "read") {
    if (o.topic.empty() || o.partition < 0) return bad("a read names topic and partition");
    if (o.isolation != "committed" && o.isolation != "uncommitted") return bad("isolation is committed or uncommitted");
    auto rs = d.FindMember("records");
    if (rs == d.MemberEnd() || !rs->value.IsArray()) return bad("a read has its records");
    for (const auto& r : rs->value.GetArray()) {
      if (!r.IsObject() || !r.HasMember("offset") || !r["offset"].IsUint64() || !r.HasMember("value") ||
          !r["value"].IsString())
        return bad("a read's record has an offset and a value");
      o.records.push_back({r["offset"].GetUint64(), r["value"].GetString()});
    }
  } else if (o.kind == "offset_commit" || o.kind == "offset_read") {
    if (o.group.empty() || o.topic.empty() || o.partition < 0 || !o.offset)
      return bad("an offset op names group, topic, partition and offset");
    if (o.kind == "offset_commit" && o.outcome != "ok" && o.outcome != "fail" && o.outcome != "info")
      return bad("outcome is ok, fail or info");
  } else {
    return bad("unknown op '" + o.kind + "'");
  }
  return o;
}

/// A JSON object describing what line `o` observed (about `offset`, when given).
std::string observed(const op& o, std::optional<std::uint64_t> offset = std::nullopt, const std::string& value = "") {
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  w.StartObject();
  w.Key("op");
  w.Uint64(o.line);
  w.Key("kind");
  w.String(o.kind.c_str());
  if (!o.topic.empty()) {
    w.Key("partition");
    w.String(o.tp().c_str());
  }
  if (o.kind == "read") {
    w.Key("isolation");
    w.String(o.isolation.c_str());
    w.Key("final");
    w.Bool(o.final_read);
    if (!o.records.empty()) {
      w.Key("from");
      w.Uint64(o.records.front().offset);
      w.Key("to");
      w.Uint64(o.records.back().offset);
    }
  }
  if (!o.outcome.empty()) {
    w.Key("outcome");
    w.String(o.outcome.c_str());
  }
  if (!o.txn.empty()) {
    w.Key("txn");
    w.String(o.txn.c_str());
  }
  if (!o.group.empty()) {
    w.Key("group");
    w.String(o.group.c_str());
  }
  if (offset) {
    w.Key("offset");
    w.Uint64(*offset);
  } else if (o.offset) {
    w.Key("offset");
    w.Uint64(*o.offset);
  }
  const std::string& shown = value.empty() && o.kind == "produce" ? o.value : value;
  if (!shown.empty()) {
    w.Key("value");
    w.String(shown.c_str());
  }
  w.EndObject();
  return b.GetString();
}

class checker {
 public:
  explicit checker(std::vector<op> ops) : ops_(std::move(ops)) {}

  report run() {
    report r;
    r.ops = ops_.size();
    for (const auto& o : ops_) {
      if (o.kind == "txn") txn_outcome_[o.txn] = &o;
      if (o.kind == "produce" && o.outcome == "ok") {
        ++r.acknowledged;
        acks_[o.value].push_back(&o);
      }
      if (o.kind == "produce") writes_[o.value].push_back(&o);
    }
    offsets_and_duplicates(r);
    aborted_reads(r);
    failed_writes_read(r);
    lost_and_unseen(r);
    torn(r);
    offsets_backwards(r);
    return r;
  }

 private:
  /// The transaction `o` wrote in, and its outcome ("" outside a transaction).
  std::string outcome_of(const op& w) const {
    if (w.txn.empty()) return "";
    auto it = txn_outcome_.find(w.txn);
    return it == txn_outcome_.end() ? "info" : it->second->outcome;
  }
  /// The write of `value`, as the first of its produce ops (acknowledged preferred).
  const op* write_of(const std::string& value) const {
    if (auto a = acks_.find(value); a != acks_.end()) return a->second.front();
    if (auto w = writes_.find(value); w != writes_.end()) return w->second.front();
    return nullptr;
  }

  void offsets_and_duplicates(report& r) {
    std::map<std::pair<std::string, std::uint64_t>, std::pair<std::string, const op*>> at;  // (tp, offset) -> value
    std::map<std::string, std::map<std::uint64_t, const op*>> where;                     // value -> offsets seen
    std::set<std::pair<std::string, std::uint64_t>> reported;
    auto see = [&](const op& o, std::uint64_t offset, const std::string& value) {
      auto [it, fresh] = at.try_emplace({o.tp(), offset}, value, &o);
      if (!fresh && it->second.first != value && reported.insert({o.tp(), offset}).second)
        r.anomalies.push_back({"inconsistent_offset", o.tp() + "@" + std::to_string(offset),
                               {observed(*it->second.second, offset, it->second.first), observed(o, offset, value)}});
      where[value].try_emplace(offset, &o);
    };
    for (const auto& o : ops_) {
      if (o.kind == "produce" && o.outcome == "ok") see(o, *o.offset, o.value);
      if (o.kind == "read")
        for (const auto& rec : o.records) see(o, rec.offset, rec.value);
    }
    for (const auto& [value, offsets] : where)
      if (offsets.size() > 1) {
        auto first = offsets.begin(), second = std::next(first);
        r.anomalies.push_back({"duplicate", value,
                               {observed(*first->second, first->first, value), observed(*second->second, second->first, value)}});
      }
  }

  void aborted_reads(report& r) {
    std::set<std::string> reported;
    for (const auto& o : ops_) {
      if (o.kind != "read" || o.isolation != "committed") continue;
      for (const auto& rec : o.records) {
        const op* w = write_of(rec.value);
        if (!w || outcome_of(*w) != "abort" || !reported.insert(rec.value).second) continue;
        r.anomalies.push_back({"aborted_read", rec.value,
                               {observed(o, rec.offset, rec.value), observed(*txn_outcome_.at(w->txn))}});
      }
    }
  }

  /// A write every attempt of which was refused (none acknowledged, none of unknown fate) must never be read.
  void failed_writes_read(report& r) {
    std::set<std::string> reported;
    for (const auto& o : ops_) {
      if (o.kind != "read") continue;
      for (const auto& rec : o.records) {
        auto w = writes_.find(rec.value);
        if (w == writes_.end() || reported.count(rec.value)) continue;
        const bool all_failed = std::all_of(w->second.begin(), w->second.end(),
                                            [](const op* x) { return x->outcome == "fail"; });
        if (!all_failed) continue;
        reported.insert(rec.value);
        r.anomalies.push_back({"failed_write_visible", rec.value,
                               {observed(*w->second.front()), observed(o, rec.offset, rec.value)}});
      }
    }
  }

  /// Whether an acknowledged write must be visible to a reader with `isolation`.
  bool must_show(const op& ack, const std::string& isolation) const {
    const std::string outcome = outcome_of(ack);
    if (outcome == "abort") return false;
    return isolation == "uncommitted" || outcome.empty() || outcome == "commit";
  }

  void lost_and_unseen(report& r) {
    struct span {
      const op* read;
      std::uint64_t first, last;
      std::set<std::uint64_t> offsets;
    };
    std::map<std::string, std::vector<span>> reads;  // tp -> reads that returned records
    std::map<std::string, std::set<std::string>> final_values;
    std::map<std::string, const op*> last_final;
    for (const auto& o : ops_)
      if (o.kind == "read") {
        if (!o.records.empty()) {
          span s{&o, o.records.front().offset, o.records.back().offset, {}};
          for (const auto& rec : o.records) {
            s.first = std::min(s.first, rec.offset);
            s.last = std::max(s.last, rec.offset);
            s.offsets.insert(rec.offset);
          }
          reads[o.tp()].push_back(std::move(s));
        }
        if (o.final_read) {
          last_final[o.tp()] = &o;
          for (const auto& rec : o.records) final_values[o.tp()].insert(rec.value);
        }
      }
    // Each partition's reads by where they start, and the longest one: the reads that may pass over an offset o are
    // those starting in (o - longest, o), found by a binary search (a long run has millions of writes and reads).
    std::map<std::string, std::uint64_t> longest;
    for (auto& [tp, spans] : reads) {
      std::sort(spans.begin(), spans.end(), [](const span& a, const span& b) { return a.first < b.first; });
      for (const auto& s : spans) longest[tp] = std::max(longest[tp], s.last - s.first);
    }
    for (const auto& [value, acked] : acks_) {
      const op& ack = *acked.front();
      const std::uint64_t offset = *ack.offset;
      bool lost = false;
      const auto& spans = reads[ack.tp()];
      const std::uint64_t reach = longest[ack.tp()];
      auto from = std::lower_bound(spans.begin(), spans.end(), offset > reach ? offset - reach : 0,
                                   [](const span& s, std::uint64_t v) { return s.first < v; });
      for (auto it = from; it != spans.end() && it->first < offset; ++it) {
        const span& s = *it;
        if (s.last <= offset || s.offsets.count(offset) || !must_show(ack, s.read->isolation)) continue;
        r.anomalies.push_back({"lost_write", value, {observed(ack), observed(*s.read, offset)}});
        lost = true;
        break;
      }
      const std::string outcome = outcome_of(ack);
      if (lost || outcome == "abort" || outcome == "info") continue;
      if (!final_values[ack.tp()].count(value)) {
        std::vector<std::string> obs{observed(ack)};
        if (auto f = last_final.find(ack.tp()); f != last_final.end()) obs.push_back(observed(*f->second));
        r.anomalies.push_back({"unseen_after_drain", value, std::move(obs)});
      }
    }
  }

  void torn(report& r) {
    std::map<std::string, std::set<std::string>> final_committed;  // tp -> values
    for (const auto& o : ops_)
      if (o.kind == "read" && o.final_read && o.isolation == "committed") {
        auto& values = final_committed[o.tp()];  // an empty final read is a verdict too
        for (const auto& rec : o.records) values.insert(rec.value);
      }
    std::map<std::string, std::vector<const op*>> by_txn;
    for (const auto& [value, acked] : acks_)
      if (!acked.front()->txn.empty()) by_txn[acked.front()->txn].push_back(acked.front());
    for (const auto& [txn, acked] : by_txn) {
      const op* seen = nullptr;
      const op* unseen = nullptr;
      for (const op* a : acked) {
        if (!final_committed.count(a->tp())) continue;  // no final committed read of that partition: no verdict
        (final_committed[a->tp()].count(a->value) ? seen : unseen) = a;
      }
      if (seen && unseen)
        r.anomalies.push_back({"torn_transaction", txn, {observed(*seen, std::nullopt, seen->value + " seen"),
                                                         observed(*unseen, std::nullopt, unseen->value + " unseen")}});
    }
  }

  void offsets_backwards(report& r) {
    std::map<std::string, const op*> highest;  // group/tp -> the op that showed the highest offset so far
    for (const auto& o : ops_) {
      const bool known = o.kind == "offset_read" || (o.kind == "offset_commit" && o.outcome == "ok");
      if (!known) continue;
      const std::string key = o.group + "/" + o.tp();
      auto it = highest.find(key);
      if (o.kind == "offset_read" && it != highest.end() && *o.offset < *it->second->offset)
        r.anomalies.push_back({"offset_backwards", key, {observed(*it->second), observed(o)}});
      if (it == highest.end() || *o.offset > *it->second->offset) highest[key] = &o;
    }
  }

  std::vector<op> ops_;
  std::map<std::string, const op*> txn_outcome_;
  std::map<std::string, std::vector<const op*>> acks_;    ///< value -> produce ops answered ok
  std::map<std::string, std::vector<const op*>> writes_;  ///< value -> every produce op
};

}  // namespace

std::map<std::string, std::size_t> report::counts() const {
  std::map<std::string, std::size_t> out;
  for (const auto& a : anomalies) ++out[a.type];
  return out;
}

std::string report::to_json() const {
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  w.StartObject();
  w.Key("ops");
  w.Uint64(ops);
  w.Key("acknowledged");
  w.Uint64(acknowledged);
  w.Key("counts");
  w.StartObject();
  for (const auto& [type, n] : counts()) {
    w.Key(type.c_str());
    w.Uint64(n);
  }
  w.EndObject();
  w.Key("anomalies");
  w.StartArray();
  for (const auto& a : anomalies) {
    w.StartObject();
    w.Key("type");
    w.String(a.type.c_str());
    w.Key("record");
    w.String(a.record.c_str());
    w.Key("observations");
    w.StartArray();
    for (const auto& o : a.observations) w.RawValue(o.c_str(), o.size(), rapidjson::kObjectType);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return b.GetString();
}

result<report> check_history(std::string_view jsonl) {
  std::vector<op> ops;
  std::size_t line = 0;
  while (!jsonl.empty()) {
    const auto nl = jsonl.find('\n');
    std::string_view text = jsonl.substr(0, nl);
    jsonl = nl == std::string_view::npos ? std::string_view{} : jsonl.substr(nl + 1);
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto o = parse_line(text, line);
    if (!o) return o.err();
    ops.push_back(std::move(*o));
  }
  return checker(std::move(ops)).run();
}

}  // namespace moonmq::check
