#include "kafka_api.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <variant>

#include "kafka_admin.hpp"
#include "kafka_groups.hpp"
#include "kafka_txn.hpp"
#include "moonmq/core/token.hpp"
#include "moonmq/core/topic_name.hpp"
#include "moonmq/kafka/messages.hpp"
#include "moonmq/kafka/record_batch.hpp"

namespace moonmq::daemon {

namespace ec = kafka::error_code;
using kafka::api;

namespace {

/// The most a produce answered on the reactor (kafka_api::handle_at_once) may be, and the most a fetch answered there
/// reads. A larger produce, or one whose records are compressed, goes to a handler thread, and a fetch there returns
/// at most this much, so that one request holds the reactor for about a millisecond (a CRC and a copy of 4 MiB; a
/// librdkafka batch is 1 MB by default, and a partition's share of a fetch 1 MiB).
constexpr std::size_t at_once_bytes = 4u << 20;

/// The most a fetch reads to return the first stored batch of its response whole, past its limits (Kafka returns the
/// first batch whatever its size, so that a consumer can always move on). A produced batch is at most
/// MaxRequestBytes (100 MiB by default), and its frames take a little more than its records; a larger one goes cut at
/// its last record, and the next fetch reads on from inside it.
constexpr std::size_t whole_batch_bytes = 128u << 20;

/// Kafka's code for a front end's refusal of one partition's request.
std::int16_t partition_code(errc e) {
  switch (e) {
    case errc::ok:
      return ec::none;
    case errc::not_owner:
    case errc::unavailable:  // a handover under way, or a broker catching up: retry after a metadata refresh
      return ec::not_leader_or_follower;
    case errc::not_found:
      return ec::unknown_topic_or_partition;
    case errc::offset_out_of_range:
      return ec::offset_out_of_range;
    case errc::producer_fenced:
      return ec::invalid_producer_epoch;
    case errc::out_of_order_sequence:
      return ec::out_of_order_sequence_number;
    case errc::duplicate_sequence:
      return ec::duplicate_sequence_number;
    case errc::io_error:
    case errc::corrupt:
      return ec::kafka_storage_error;
    case errc::invalid_argument:
      return ec::invalid_record;
    case errc::resource_exhausted:
      return ec::policy_violation;
    case errc::unauthorized:
      return ec::topic_authorization_failed;
    case errc::already_exists:
      return ec::topic_already_exists;
    default:
      return ec::unknown_server_error;
  }
}

std::int16_t batch_code(kafka::batch_fault f) {
  switch (f) {
    case kafka::batch_fault::corrupt:
      return ec::corrupt_message;
    case kafka::batch_fault::invalid:
      return ec::invalid_record;
    case kafka::batch_fault::unsupported_compression:
      return ec::unsupported_compression_type;
    case kafka::batch_fault::unsupported_magic:
      return ec::unsupported_for_message_format;
    case kafka::batch_fault::too_large:
      return ec::message_too_large;
  }
  return ec::corrupt_message;
}

}  // namespace

struct kafka_api::impl {
  kafka_api_parts p;
  std::map<std::string, std::int32_t> node_of;  ///< broker id -> Kafka node id
  /// Node id -> advertised address: this broker's, then each peer's own word (asked of it), else its configured one.
  std::map<std::int32_t, std::pair<std::string, std::int32_t>> address_of;
  mutable std::mutex addresses_mu;  ///< address_of and asked_at (peers' answers arrive while requests read them)
  std::chrono::steady_clock::time_point asked_at{};
  std::set<std::string> answered;  ///< peers whose own address is in address_of
  bool tokens = false;
  /// SCRAM-SHA-256: each token's credential, derived once from its Token under a salt drawn per Name.
  struct scram_user {
    std::vector<kafka::scram::credential> credentials;
    std::vector<role> roles;  ///< of each credential
  };
  std::map<std::string, scram_user> scram_users;
  std::string scram_secret;  ///< drawn at start: an unknown user's stable, unmatchable credential
  kafka_admin admin{kafka_admin_parts{}};
  kafka_groups groups{kafka_groups_parts{}};
  kafka_txn txn{kafka_txn_parts{}};

  explicit impl(kafka_api_parts parts) : p(std::move(parts)) {
    // Node ids: each broker's place in the sorted list of the cluster's broker ids, from 1, so that every broker of
    // one configuration numbers them alike.
    std::set<std::string> ids{p.self.value()};
    if (p.cfg->cluster)
      for (const auto& peer : p.cfg->cluster->peers) ids.insert(peer.id);
    std::int32_t n = 0;
    for (const auto& id : ids) node_of[id] = ++n;
    address_of[node_of[p.self.value()]] = {p.cfg->kafka->advertised_host, p.cfg->kafka->advertised_port};
    if (p.cfg->cluster)
      for (const auto& peer : p.cfg->cluster->peers)
        if (peer.kafka_port) address_of[node_of[peer.id]] = {peer.kafka_host, peer.kafka_port};
    tokens = p.cfg->auth && !p.cfg->auth->tokens.empty();
    std::map<std::int32_t, std::string> broker_of;
    for (const auto& [id, n] : node_of) broker_of[n] = id;
    admin = kafka_admin(
        kafka_admin_parts{p.cfg, p.topics, node_of.size(), node_of[p.self.value()], tokens, std::move(broker_of)});
    groups = kafka_groups(kafka_groups_parts{p.group_routes, p.offsets, [this](const broker_id& b) {
      return locate(b);
    }});
    txn = kafka_txn(kafka_txn_parts{p.txns, [this](const broker_id& b) { return locate(b); },
                                    p.cfg->transactions.timeout_ms,
                                    [this](const std::string& g, const std::string& member, std::int32_t generation) {
                                      return groups.check_member(g, member, generation);
                                    }});
    if (tokens) {
      scram_secret = random_bytes(32);
      for (const auto& t : p.cfg->auth->tokens) {
        auto& user = scram_users[t.name];
        const std::string salt = user.credentials.empty() ? random_bytes(16) : user.credentials.front().salt;
        user.credentials.push_back(kafka::scram::derive(t.token, salt));
        user.roles.push_back(t.role == "admin" ? role::admin : role::client);
      }
    }
  }

  static std::string random_bytes(std::size_t n) {
    std::string out(n, '\0');
    if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1)
      throw std::runtime_error("the system's random source failed");
    return out;
  }

  std::int32_t node(const std::string& broker) const {
    auto it = node_of.find(broker);
    return it == node_of.end() ? -1 : it->second;
  }

  /// A broker's node id and advertised Kafka address, as FindCoordinator answers it.
  std::optional<kafka::find_coordinator_response> locate(const broker_id& b) {
    const std::int32_t n = node(b.value());
    const auto known = addresses();
    auto at = known.find(n);
    if (n < 0 || at == known.end()) return std::nullopt;
    kafka::find_coordinator_response out;
    out.node_id = n;
    out.host = at->second.first;
    out.port = at->second.second;
    return out;
  }

  bool may(const session& s, role needed) const {
    if (!tokens) return true;
    return s.authenticated && s.granted && (needed == role::client || *s.granted == role::admin);
  }

  // ---- SASL ----

  /// PLAIN: authzid NUL user NUL password. The user is a token's Name, the password its Token.
  std::optional<role> plain(std::string_view message) const {
    const auto first = message.find('\0');
    if (first == std::string_view::npos) return std::nullopt;
    const auto second = message.find('\0', first + 1);
    if (second == std::string_view::npos) return std::nullopt;
    const std::string_view user = message.substr(first + 1, second - first - 1);
    const std::string_view password = message.substr(second + 1);
    std::optional<role> granted;
    for (const auto& t : p.cfg->auth->tokens)  // every token compared, in constant time each
      if (constant_time_equal(t.token, password) && t.name == user && !granted)
        granted = t.role == "admin" ? role::admin : role::client;
    return granted;
  }

  struct sasl_step {
    bool ok = false;     ///< false: authentication failed (answered, then the connection is closed)
    std::string answer;  ///< the server's next SASL message (empty for PLAIN)
  };

  /// One client SASL message under the mechanism the handshake chose: PLAIN in one step, SCRAM-SHA-256 in two
  /// (client-first → server-first, client-final → server-final). `s.authenticated` is set when it succeeds.
  sasl_step authenticate(session& s, std::string_view message) const {
    using mech = session::mechanism;
    if (s.chosen == mech::plain) {
      auto granted = plain(message);
      if (!granted) return {};
      s.authenticated = true;
      s.granted = granted;
      return {true, {}};
    }
    if (s.chosen != mech::scram_sha_256) return {};
    if (!s.scram) {
      s.scram.emplace();
      auto user = s.scram->first(message);
      if (!user) return {};
      auto known = scram_users.find(*user);
      // An unknown user is challenged like a known one, and fails at the proof.
      std::vector<kafka::scram::credential> candidates =
          known != scram_users.end() ? known->second.credentials
                                     : std::vector{kafka::scram::unknown_user(*user, scram_secret)};
      return {true, s.scram->challenge(std::move(candidates), kafka::scram::base64(random_bytes(18)))};
    }
    auto final_message = s.scram->finish(message);
    auto known = scram_users.find(s.scram->user());
    if (!final_message || known == scram_users.end()) return {};
    s.authenticated = true;
    s.granted = known->second.roles[s.scram->matched()];
    s.scram.reset();
    return {true, std::move(*final_message)};
  }

  // ---- Metadata ----

  struct placement {
    std::int32_t leader = -1;
    std::int32_t epoch = -1;
  };

  /// The owner of `tp` as a client should see it: with Raft the replicated table; without, the brokers' own reports
  /// (the directory), then this broker's table; a partition no one has moved is with its first owner.
  placement place(const topic_partition& tp, const cluster::topic_record& record) const {
    auto entry = p.ownership->entry(tp);
    std::optional<broker_id> owner;
    if (p.ownership->replicated()) {
      if (entry && !entry->handover) owner = entry->owner;
    } else if (auto reported = p.directory->owner_of(tp)) {
      owner = *reported;
    } else if (entry && !entry->handover) {
      owner = entry->owner;
    }
    if (!owner && !entry && tp.partition < record.partitions()) owner = record.owners[static_cast<std::size_t>(tp.partition)];
    if (!owner) return {};
    placement out;
    out.leader = node(owner->value());
    // The ownership version rises with every move and names one owner; only a broker whose table holds the entry
    // of that owner can say it (otherwise -1: unknown, which clients accept).
    if (entry && entry->owner == *owner) out.epoch = static_cast<std::int32_t>(entry->version);
    else if (!entry && *owner == p.self) out.epoch = 0;
    return out;
  }

  /// Asks the peers that have not told their own address yet (at most every 10 s while some have not; one peer
  /// timeout at most, all of them at once), and returns every address known now.
  std::map<std::int32_t, std::pair<std::string, std::int32_t>> addresses() {
    std::unique_lock lock(addresses_mu);
    const bool missing = p.peer_kafka_addresses && answered.size() + 1 < node_of.size();
    const auto now = std::chrono::steady_clock::now();
    if (missing && now - asked_at >= std::chrono::seconds(10)) {
      asked_at = now;
      lock.unlock();
      const auto told = p.peer_kafka_addresses();
      lock.lock();
      for (const auto& [id, address] : told) {
        const auto colon = address.rfind(':');
        const auto n = node_of.find(id);
        if (colon == std::string::npos || n == node_of.end() || id == p.self.value()) continue;
        const int port = std::atoi(address.c_str() + colon + 1);
        if (port < 1 || port > 65535) continue;
        address_of[n->second] = {address.substr(0, colon), port};
        answered.insert(id);
      }
    }
    return address_of;
  }

  std::string metadata(std::int16_t version, const kafka::metadata_request& req) {
    kafka::metadata_response m;
    const auto address_of = addresses();
    for (const auto& [node_id, address] : address_of) m.brokers.push_back({node_id, address.first, address.second});
    m.cluster_id = "moonmq";
    const std::int32_t controller = node(p.controller_id());
    m.controller_id = address_of.count(controller) ? controller : node(p.self.value());
    p.directory->refresh_if_older(1000);
    std::map<std::string, cluster::topic_record> known;
    for (const auto& t : p.topics->list())
      if (!t.record.deleted) known[t.record.name] = t.record;
    std::vector<std::string> names;
    if (req.topics)
      names = *req.topics;
    else
      for (const auto& [name, r] : known) names.push_back(name);
    for (const auto& name : names) {
      kafka::metadata_response::topic t;
      t.name = name;
      auto it = known.find(name);
      if (it == known.end()) {
        t.error = validate_topic_name(name) ? ec::unknown_topic_or_partition : ec::invalid_topic;
        m.topics.push_back(std::move(t));
        continue;
      }
      for (std::int32_t i = 0; i < it->second.partitions(); ++i) {
        kafka::metadata_response::partition part;
        part.index = i;
        const auto at = place({name, i}, it->second);
        part.leader = at.leader;
        part.leader_epoch = at.epoch;
        if (at.leader < 0 || !address_of.count(at.leader)) {
          part.error = ec::leader_not_available;
          part.leader = -1;
        } else {
          part.replicas = {at.leader};
        }
        t.partitions.push_back(std::move(part));
      }
      m.topics.push_back(std::move(t));
    }
    kafka::writer w;
    kafka::encode(w, version, m);
    return w.take();
  }

  // ---- Produce ----

  /// `would_wait` set: the append must not wait (see produce_at_once), and is set to true, with nothing written, where
  /// it would have.
  kafka::produce_response::partition produce_one(const std::string& topic, const kafka::produce_request::partition& in,
                                                 const std::optional<std::string>& transactional_id, bool authorized,
                                                 bool* would_wait = nullptr) {
    kafka::produce_response::partition out;
    out.index = in.index;
    if (!authorized) {
      out.error = ec::topic_authorization_failed;
      return out;
    }
    if (!in.records) {
      out.error = ec::corrupt_message;
      return out;
    }
    // On a thread that must not wait, neither a topic the brokers would be asked about nor a compressed batch (tens of
    // milliseconds to inflate a few MiB of gzip) is decoded: both go to a handler thread, to be decoded there once.
    if (would_wait && (!p.store->partition_count(topic) || kafka::names_compression(*in.records))) {
      *would_wait = true;
      return out;
    }
    auto decoded = kafka::decode_produced_batch(*in.records, p.cfg->kafka->max_request_bytes);
    if (auto* refused = std::get_if<kafka::batch_refusal>(&decoded)) {
      out.error = batch_code(refused->fault);
      return out;
    }
    auto& batch = std::get<kafka::produced_batch>(decoded);
    if (batch.transactional && (!transactional_id || !batch.producer)) {
      out.error = ec::invalid_txn_state;  // a transactional batch names its transactional id and producer
      return out;
    }
    frontend::produce_request req;
    if (batch.transactional) {
      req.transactional_id = *transactional_id;
      req.join_on_open = true;
    }
    req.topic = topic;
    req.partition = in.index;
    req.encoded = std::move(batch.records);
    req.producer = batch.producer;
    req.forward = false;
    req.never_wait = would_wait != nullptr;
    const bool transactional = batch.transactional;
    auto done = p.produce->produce(std::move(req));
    if (!done && would_wait && done.code() == errc::would_block) {
      *would_wait = true;
      return out;
    }
    if (!done) {
      out.error = partition_code(done.code());
      // The transaction's coordinator refused the partition: its own codes, as AddPartitionsToTxn has them.
      if (transactional && done.refused().by_coordinator) out.error = ec::coordinator_not_available;
      else if (transactional && done.code() == errc::conflict) out.error = ec::invalid_txn_state;
      // Not found, for a partition this broker has: the coordinator does not know the transactional id.
      else if (transactional && done.code() == errc::not_found)
        if (auto n = p.store->partition_count(topic); n && in.index >= 0 && in.index < *n)
          out.error = ec::invalid_producer_id_mapping;
      return out;
    }
    out.base_offset = done->offsets.empty() ? -1 : static_cast<std::int64_t>(done->offsets.front());
    out.log_start_offset = 0;
    return out;
  }

  reply produce(const kafka::request_header& h, kafka::reader& r, const session& s) {
    kafka::produce_request req;
    if (!kafka::decode(r, h.api_version, req)) return {std::nullopt, true};
    if (req.acks != 0 && req.acks != 1 && req.acks != -1) {
      kafka::produce_response out;
      for (const auto& t : req.topics) {
        out.topics.push_back({t.name, {}});
        for (const auto& part : t.partitions) out.topics.back().partitions.push_back({part.index, ec::invalid_required_acks});
      }
      return frame(h, out);
    }
    kafka::produce_response out;
    for (const auto& t : req.topics) {
      kafka::produce_response::topic rt;
      rt.name = t.name;
      const bool authorized = may(s, role::client);
      for (const auto& part : t.partitions)
        rt.partitions.push_back(produce_one(t.name, part, req.transactional_id, authorized));
      out.topics.push_back(std::move(rt));
    }
    if (req.acks == 0) return {};
    return frame(h, out);
  }

  /// A Produce answered on the calling thread, which must not wait (kafka_api::handle_at_once): one partition, not
  /// transactional, of a topic held here, at most at_once_bytes and not compressed, with Storage.Fsync not `always`
  /// (an fsync would hold the thread). nullopt: nothing was done. What is answered without an append (not authorized,
  /// a malformed batch, a partition served elsewhere, a refused sequence) is answered here too.
  std::optional<reply> produce_at_once(const kafka::request_header& h, kafka::reader& r, const session& s) {
    kafka::produce_request req;
    if (!kafka::decode(r, h.api_version, req)) return std::nullopt;  // handle() answers what is malformed
    if (req.transactional_id || req.topics.size() != 1 || req.topics.front().partitions.size() != 1 ||
        (req.acks != 0 && req.acks != 1 && req.acks != -1) || p.cfg->storage.fsync == "always")
      return std::nullopt;
    const auto& t = req.topics.front();
    bool would_wait = false;
    auto part = produce_one(t.name, t.partitions.front(), std::nullopt, may(s, role::client), &would_wait);
    if (would_wait) return std::nullopt;
    if (req.acks == 0) return reply{};
    kafka::produce_response out;
    out.topics.push_back({t.name, {std::move(part)}});
    return frame(h, out);
  }

  // ---- Fetch ----

  /// A Fetch answered on the calling thread, which must not wait (kafka_api::handle_at_once): of topics held here,
  /// returning at most at_once_bytes, every byte read from the page cache, and under read_committed no producer table
  /// to wait for. nullopt: nothing was answered (a malformed request included: handle() answers it).
  std::optional<reply> fetch_at_once(const kafka::request_header& h, kafka::reader& r, const session& s) {
    bool would_wait = false;
    auto out = fetch(h, r, s, false, &would_wait);
    if (would_wait || out.close) return std::nullopt;
    return out;
  }

  /// `would_wait` set: the fetch must not wait (see fetch_at_once), and is set to true, with nothing answered, where it
  /// would have.
  reply fetch(const kafka::request_header& h, kafka::reader& r, const session& s, bool final_attempt,
              bool* would_wait = nullptr) {
    kafka::fetch_request req;
    if (!kafka::decode(r, h.api_version, req)) return {std::nullopt, true};
    const bool never_wait = would_wait != nullptr;
    // Without waiting, at most at_once_bytes in all (a response may hold less than the request allows; a record
    // larger than its partition's share is read on a thread that may wait: partition_store::read_cached).
    const std::size_t max_total = never_wait ? std::min<std::size_t>(std::max(req.max_bytes, 0), at_once_bytes)
                                             : static_cast<std::size_t>(std::max(req.max_bytes, 0));
    // What was read without waiting, counted once the whole answer stands (frontend::fetch_request::never_wait).
    std::vector<std::pair<topic_partition, frontend::fetched>> to_count;
    // Written as it is read: each partition's batches are encoded straight into the response.
    kafka::writer w;
    kafka::start_response(w, h);
    kafka::encode_fetch_head(w, h.api_version, ec::none, req.topics.size());
    auto answer = [&](const kafka::fetch_response::partition& rp, const frontend::fetched* got = nullptr) {
      const std::size_t at = kafka::encode_fetch_partition(w, h.api_version, rp);
      if (got) kafka::encode_batches(got->records, w.bytes());
      kafka::end_fetch_partition(w, at);
      return w.size() - at - 4;
    };
    std::size_t total = 0;
    bool any = false;
    for (const auto& t : req.topics) {
      kafka::encode_fetch_topic(w, t.name, t.partitions.size());
      for (const auto& part : t.partitions) {
        kafka::fetch_response::partition rp;
        rp.index = part.index;
        if (!may(s, role::client)) {
          rp.error = ec::topic_authorization_failed;
          answer(rp);
          continue;
        }
        if (part.offset < 0) {
          rp.error = ec::offset_out_of_range;
          answer(rp);
          continue;
        }
        const std::size_t room = max_total > total ? max_total - total : 0;
        // At least one batch in the whole response, even past the limits; after that, only what fits.
        const std::size_t limit = std::min<std::size_t>(static_cast<std::size_t>(std::max(part.max_bytes, 1)),
                                                        any ? room : std::max<std::size_t>(room, 1));
        if (any && limit == 0) {
          answer(rp);
          continue;
        }
        const topic_partition tp{t.name, part.index};
        const auto wanted = static_cast<std::uint64_t>(part.offset);
        // Whole stored batches, as a Kafka broker sends them: the first partition with records gets its first batch
        // whole even past the limits (within what a fetch may read without waiting, on the reactor); a later one
        // gets no batch cut by its limit, unless that is all it has (then it resumes inside the batch).
        const std::size_t whole = any ? limit : std::max(limit, never_wait ? room : whole_batch_bytes);
        auto got = p.fetch->fetch({tp, wanted, limit, req.read_committed, true, never_wait, whole});
        // An offset inside a stored Kafka batch (a committed or sought position): the read starts at the first frame
        // at or after it, whose records the client may number lower (docs/kafka.md, "Records and offsets"). They are
        // dropped, and when nothing is left the read goes on from where it stopped. Only the rest of the batch that
        // holds the offset can be dropped so (every later batch is numbered past it), so the reactor does a second
        // read too (a consumer told to start at "the end less N" comes here first), unless the first ended inside
        // that batch. The second may still be empty (aborted batches under read_committed): then a thread goes on.
        for (std::uint64_t from = wanted, reads = 1; got; ++reads) {
          std::erase_if(got->records, [&](const auto& v) { return storage::kafka_offset(v) < wanted; });
          if (!got->records.empty() || got->next_offset <= from || got->next_offset >= got->end_offset) break;
          if (never_wait && (reads == 2 || got->batch_cut)) {  // at most two reads here: the rest on a thread
            *would_wait = true;
            return {};
          }
          from = got->next_offset;
          got = p.fetch->fetch({tp, from, limit, req.read_committed, true, never_wait, whole});
        }
        if (got && never_wait && !any && got->batch_cut) {  // its first batch is more than may be read here
          *would_wait = true;
          return {};
        }
        if (!got && never_wait && got.code() == errc::would_block) {
          *would_wait = true;
          return {};
        }
        if (!got) {
          rp.error = partition_code(got.code());
          if (got.code() == errc::offset_out_of_range)
            if (auto end = p.store->end_offset({t.name, part.index})) rp.high_watermark = static_cast<std::int64_t>(*end);
          answer(rp);
          continue;
        }
        rp.high_watermark = static_cast<std::int64_t>(got->end_offset);
        rp.last_stable_offset =
            static_cast<std::int64_t>(got->last_stable_offset ? *got->last_stable_offset : got->end_offset);
        rp.log_start_offset = 0;
        const std::size_t records_bytes = answer(rp, &*got);
        total += records_bytes;
        any = any || records_bytes != 0;
        if (never_wait) to_count.emplace_back(tp, std::move(*got));
      }
    }
    for (const auto& [tp, read] : to_count) p.fetch->count(tp, read);
    if (!any && !final_attempt && req.max_wait_ms > 0 && total < static_cast<std::size_t>(std::max(req.min_bytes, 1))) {
      reply again;
      again.wait_ms = std::min(req.max_wait_ms, 30'000);
      return again;
    }
    kafka::finish_response(w);
    return {w.take()};
  }

  // ---- ListOffsets ----

  kafka::list_offsets_response::partition list_one(const topic_partition& tp, std::int64_t timestamp,
                                                   bool read_committed) const {
    kafka::list_offsets_response::partition out;
    out.index = tp.partition;
    if (!cluster::serves(*p.ownership, tp, p.self) || !p.store->partition_count(tp.topic)) {
      out.error = p.store->partition_count(tp.topic) || p.directory->owner_of(tp) ? ec::not_leader_or_follower
                                                                                  : ec::unknown_topic_or_partition;
      return out;
    }
    auto end = p.store->end_offset(tp);
    if (!end) {
      out.error = partition_code(end.code());
      return out;
    }
    if (timestamp == kafka::earliest_timestamp) {
      out.offset = 0;
      return out;
    }
    if (timestamp == kafka::latest_timestamp) {
      out.offset = static_cast<std::int64_t>(*end);
      if (read_committed) {
        // The last stable offset: a fetch under read_committed with nothing to return says where it is.
        auto got = p.fetch->fetch({tp, *end, 1, true});
        if (got && got->last_stable_offset) out.offset = static_cast<std::int64_t>(*got->last_stable_offset);
      }
      return out;
    }
    // By timestamp: the first record whose timestamp is at least the one asked for (a scan of the log).
    std::uint64_t at = 0;
    while (at < *end) {
      auto read = p.store->read(tp, at, 4u << 20);
      if (!read) {
        out.error = partition_code(read.code());
        return out;
      }
      if (read->bytes.size() == 0) break;
      for (const auto& v : storage::decode_frames(read->bytes.view(), at))
        if (!(v.attributes & storage::attr_control) && v.timestamp_ms >= timestamp) {
          out.offset = static_cast<std::int64_t>(storage::kafka_offset(v));
          out.timestamp = v.timestamp_ms;
          return out;
        }
      at = read->next_offset;
    }
    out.offset = -1;  // none so late
    return out;
  }

  reply list_offsets(const kafka::request_header& h, kafka::reader& r, const session& s) {
    kafka::list_offsets_request req;
    if (!kafka::decode(r, h.api_version, req)) return {std::nullopt, true};
    kafka::list_offsets_response out;
    for (const auto& t : req.topics) {
      kafka::list_offsets_response::topic rt;
      rt.name = t.name;
      for (const auto& part : t.partitions) {
        if (!may(s, role::client)) {
          rt.partitions.push_back({part.index, ec::topic_authorization_failed});
          continue;
        }
        rt.partitions.push_back(list_one({t.name, part.index}, part.timestamp, req.read_committed));
      }
      out.topics.push_back(std::move(rt));
    }
    return frame(h, out);
  }

  // ---- OffsetForLeaderEpoch ----

  /// Where epoch `asked` of `tp` ends. A move copies the log whole and a partition has one replica, so no epoch's
  /// records are ever cut off: every epoch up to the current one ends at the log's end. A newer epoch than this
  /// broker knows is -1/-1 (UNDEFINED), as Kafka answers it.
  kafka::offset_for_leader_epoch_response::partition epoch_end(const topic_partition& tp, std::int32_t current_asked,
                                                              std::int32_t asked) const {
    kafka::offset_for_leader_epoch_response::partition out;
    out.index = tp.partition;
    std::optional<cluster::topic_record> record;
    for (const auto& t : p.topics->list())
      if (t.record.name == tp.topic && !t.record.deleted) record = t.record;
    if (!record || tp.partition < 0 || tp.partition >= record->partitions()) {
      out.error = ec::unknown_topic_or_partition;
      return out;
    }
    if (!cluster::serves(*p.ownership, tp, p.self) || !p.store->partition_count(tp.topic)) {
      out.error = ec::not_leader_or_follower;
      return out;
    }
    const std::int32_t current = place(tp, *record).epoch;
    if (current_asked >= 0 && current >= 0 && current_asked != current) {
      out.error = current_asked < current ? ec::fenced_leader_epoch : ec::unknown_leader_epoch;
      return out;
    }
    auto end = p.store->end_offset(tp);
    if (!end) {
      out.error = partition_code(end.code());
      return out;
    }
    if (current >= 0 && asked > current) return out;
    out.leader_epoch = asked;
    out.end_offset = static_cast<std::int64_t>(*end);
    return out;
  }

  reply offset_for_leader_epoch(const kafka::request_header& h, kafka::reader& r, const session& s) const {
    kafka::offset_for_leader_epoch_request req;
    if (!kafka::decode(r, h.api_version, req)) return {std::nullopt, true};
    kafka::offset_for_leader_epoch_response out;
    for (const auto& t : req.topics) {
      auto& rt = out.topics.emplace_back();
      rt.name = t.name;
      for (const auto& part : t.partitions) {
        if (!may(s, role::client)) {
          auto& denied = rt.partitions.emplace_back();
          denied.index = part.index;
          denied.error = ec::topic_authorization_failed;
          continue;
        }
        rt.partitions.push_back(epoch_end({t.name, part.index}, part.current_leader_epoch, part.leader_epoch));
      }
    }
    return frame(h, out);
  }

  // ---- framing ----

  template <typename Request, typename Handle>
  reply admin_request(const kafka::request_header& h, kafka::reader& r, Handle handle) {
    Request req;
    if (!kafka::decode(r, h.api_version, req)) return {std::nullopt, true};
    return frame(h, handle(req));
  }

  template <typename Response>
  static reply frame(const kafka::request_header& h, const Response& body) {
    kafka::writer w;
    kafka::start_response(w, h);
    kafka::encode(w, h.api_version, body);
    kafka::finish_response(w);
    return {w.take()};
  }
};

kafka_api::kafka_api(kafka_api_parts parts) : m_(std::make_shared<impl>(std::move(parts))) {}

kafka_api::session kafka_api::open_session() const {
  session s;
  s.authenticated = !m_->tokens;
  return s;
}

std::optional<kafka_api::reply> kafka_api::handle_at_once(const session& s, std::string_view bytes) {
  if (s.raw_sasl || !s.authenticated || bytes.size() > at_once_bytes) return std::nullopt;
  kafka::reader r(bytes);
  kafka::request_header h;
  if (!kafka::decode_header(r, h)) return std::nullopt;
  const auto range = kafka::supported(h.api_key);
  if (!range || h.api_version < range->min || h.api_version > range->max) return std::nullopt;
  if (range->key == api::produce) return m_->produce_at_once(h, r, s);
  if (range->key == api::fetch) return m_->fetch_at_once(h, r, s);
  return std::nullopt;
}

kafka_api::reply kafka_api::handle(session& s, std::string_view bytes, bool final_attempt) {
  auto& m = *m_;
  if (s.raw_sasl) {
    // After SaslHandshake v0 the client sends its SASL messages bare, and each answer goes back bare: an empty frame
    // for PLAIN's success, SCRAM's server-first and server-final. A failure closes the connection.
    auto step = m.authenticate(s, bytes);
    if (!step.ok) return {std::nullopt, true};
    s.raw_sasl = !s.authenticated;
    kafka::writer w;
    w.i32(static_cast<std::int32_t>(step.answer.size()));
    w.raw(step.answer);
    return {w.take()};
  }
  kafka::reader r(bytes);
  kafka::request_header h;
  if (!kafka::decode_header(r, h)) return {std::nullopt, true};
  const auto range = kafka::supported(h.api_key);
  if (!range) return {std::nullopt, true};  // an API this broker does not answer: Kafka closes too
  if (h.api_version < range->min || h.api_version > range->max) {
    if (range->key != api::api_versions) return {std::nullopt, true};
    // KIP-511: an ApiVersions this broker does not speak gets the v0 answer, UNSUPPORTED_VERSION and the ranges.
    kafka::writer w;
    kafka::start_response(w, h);
    kafka::encode(w, 0, kafka::api_versions_response{ec::unsupported_version});
    kafka::finish_response(w);
    return {w.take()};
  }
  const bool open_api = range->key == api::api_versions || range->key == api::sasl_handshake ||
                        range->key == api::sasl_authenticate;
  if (!s.authenticated && !open_api) return {std::nullopt, true};
  switch (range->key) {
    case api::api_versions:
      return impl::frame(h, kafka::api_versions_response{});
    case api::sasl_handshake: {
      kafka::sasl_handshake_request req;
      if (!kafka::decode(r, h.api_version, req)) return {std::nullopt, true};
      kafka::sasl_handshake_response out;
      out.mechanisms = {"PLAIN", std::string(kafka::scram::mechanism)};
      const auto chosen = req.mechanism == "PLAIN"                   ? session::mechanism::plain
                          : req.mechanism == kafka::scram::mechanism ? session::mechanism::scram_sha_256
                                                                     : session::mechanism::none;
      if (chosen == session::mechanism::none || !m.tokens || s.handshake_done) {
        out.error = ec::unsupported_sasl_mechanism;
        if (!m.tokens) out.mechanisms.clear();
        if (s.handshake_done) out.error = ec::illegal_sasl_state;
        auto refused = impl::frame(h, out);
        refused.close = true;
        return refused;
      }
      s.chosen = chosen;
      s.handshake_done = true;
      s.raw_sasl = h.api_version == 0;
      return impl::frame(h, out);
    }
    case api::sasl_authenticate: {
      kafka::sasl_authenticate_request req;
      if (!kafka::decode(r, h.api_version, req)) return {std::nullopt, true};
      kafka::sasl_authenticate_response out;
      if (!s.handshake_done || s.authenticated) {
        out.error = ec::illegal_sasl_state;
        out.message = "SaslAuthenticate before SaslHandshake";
        auto refused = impl::frame(h, out);
        refused.close = true;
        return refused;
      }
      auto step = m.authenticate(s, req.auth_bytes);
      if (!step.ok) {
        out.error = ec::sasl_authentication_failed;
        out.message = "authentication failed: unknown user, wrong password or a malformed SASL message";
        auto refused = impl::frame(h, out);
        refused.close = true;
        return refused;
      }
      out.auth_bytes = std::move(step.answer);
      return impl::frame(h, out);
    }
    case api::metadata: {
      kafka::metadata_request req;
      if (!kafka::decode(r, h.api_version, req)) return {std::nullopt, true};
      kafka::writer w;
      kafka::start_response(w, h);
      w.raw(m.metadata(h.api_version, req));
      kafka::finish_response(w);
      return {w.take()};
    }
    case api::produce:
      return m.produce(h, r, s);
    case api::fetch:
      return m.fetch(h, r, s, final_attempt);
    case api::list_offsets:
      return m.list_offsets(h, r, s);
    case api::init_producer_id:
      return m.admin_request<kafka::init_producer_id_request>(h, r, [&](const auto& req) {
        return m.txn.init_producer_id(req, h.api_version, m.may(s, role::client));
      });
    case api::add_partitions_to_txn:
      return m.admin_request<kafka::add_partitions_to_txn_request>(
          h, r, [&](const auto& req) { return m.txn.add_partitions(req, m.may(s, role::client)); });
    case api::add_offsets_to_txn:
      return m.admin_request<kafka::add_offsets_to_txn_request>(
          h, r, [&](const auto& req) { return m.txn.add_offsets(req, m.may(s, role::client)); });
    case api::txn_offset_commit:
      return m.admin_request<kafka::txn_offset_commit_request>(h, r, [&](const auto& req) {
        return m.txn.commit_offsets(req, h.api_version, m.may(s, role::client));
      });
    case api::end_txn:
      return m.admin_request<kafka::end_txn_request>(
          h, r, [&](const auto& req) { return m.txn.end(req, m.may(s, role::client)); });
    case api::offset_for_leader_epoch:
      return m.offset_for_leader_epoch(h, r, s);
    case api::create_topics:
      return m.admin_request<kafka::create_topics_request>(
          h, r, [&](const auto& req) { return m.admin.create_topics(req, m.may(s, role::admin)); });
    case api::create_partitions:
      return m.admin_request<kafka::create_partitions_request>(
          h, r, [&](const auto& req) { return m.admin.create_partitions(req, m.may(s, role::admin)); });
    case api::delete_topics:
      return m.admin_request<kafka::delete_topics_request>(
          h, r, [&](const auto& req) { return m.admin.delete_topics(req, m.may(s, role::admin)); });
    case api::find_coordinator:
      return m.admin_request<kafka::find_coordinator_request>(
          h, r, [&](const auto& req) {
            return req.key_type == 1 ? m.txn.find_coordinator(req, m.may(s, role::client))
                                     : m.groups.find_coordinator(req, m.may(s, role::client));
          });
    case api::join_group:
      return m.admin_request<kafka::join_group_request>(
          h, r, [&](const auto& req) { return m.groups.join(req, h.api_version, m.may(s, role::client)); });
    case api::sync_group:
      return m.admin_request<kafka::sync_group_request>(
          h, r, [&](const auto& req) { return m.groups.sync(req, m.may(s, role::client)); });
    case api::heartbeat:
      return m.admin_request<kafka::heartbeat_request>(
          h, r, [&](const auto& req) { return m.groups.heartbeat(req, m.may(s, role::client)); });
    case api::leave_group:
      return m.admin_request<kafka::leave_group_request>(
          h, r, [&](const auto& req) { return m.groups.leave(req, m.may(s, role::client)); });
    case api::offset_commit:
      return m.admin_request<kafka::offset_commit_request>(
          h, r, [&](const auto& req) { return m.groups.commit(req, m.may(s, role::client)); });
    case api::offset_fetch:
      return m.admin_request<kafka::offset_fetch_request>(
          h, r, [&](const auto& req) { return m.groups.fetch_offsets(req, h.api_version, m.may(s, role::client)); });
    case api::describe_configs:
      // Any authenticated role may read configuration (it holds no secret).
      return m.admin_request<kafka::describe_configs_request>(
          h, r, [&](const auto& req) { return m.admin.describe_configs(req); });
  }
  return {std::nullopt, true};
}

}  // namespace moonmq::daemon
