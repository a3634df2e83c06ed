// The whole-cluster simulation: three brokers in one process, each with its ownership table (local files and the
// controller fence, or the Raft-backed table over a replicated log), router, Reassigner, transaction coordinator and
// owner side, and group coordinator; b1 runs the balance loop. One thread runs everything: the brokers' blocking work
// runs on the reactor too (in_process_cluster's single_threaded), and the simulation runs the reactor one handler at
// a time, a seeded number of handlers between client operations, so the seed is the whole schedule.
//
// Each step does one of: an idempotent produce (retried with its sequence until answered), a transactional produce,
// commit or abort, a group member's join, heartbeat, consume-and-commit, leave or silence, a hand-driven move, a
// balance pass, a broker restart (kill -9 of its memory: tables, journal and coordinators come back from their
// files; partition logs are kept), a coordinator restart, time passing. Faults are chosen per step: requests or
// answers lost, requests held and delivered steps later (a delay counted in what happens meanwhile), a link cut,
// and with Raft the log's own faults (answer lost, entry held, proposal refused) and brokers lagging behind it.
// Which request a fault hits is decided by a hash of the request and the step, so that the parallel marker threads
// of a transaction coordinator cannot change what happens.
//
// Then the network heals, every move finishes, every transaction is resolved, and the history (what the clients saw,
// with each partition's final read_committed read and each group offset) goes to the history checker. The
// simulation checks two things of its own: after every step no partition is served by two brokers, and after the heal
// exactly one serves each partition, with nothing left open.
#pragma once

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <string>

#include "groups/group_wire.hpp"
#include "json/writer.hpp"
#include "moonmq/core/fnv1a.hpp"
#include "sim/cluster_sim_world.hpp"

namespace moonmq::test {

/// One seeded run, into `out`.
inline void run_cluster_sim_into(const cluster_sim_options& o, cluster_sim_run& out) {
  using namespace sim_detail;
  world w(o);
  auto& c = w.c;
  auto add = [&](const std::string& line) { out.history += line + "\n"; };
  auto note = [&](int step, const std::string& what) {
    out.log += "step " + std::to_string(step) + ": " + what + "\n";
  };
  auto fault = [&](const std::string& kind) { ++out.faults[kind]; };

  // Topic t: created on b1, its partitions spread over the brokers before the run starts.
  if (!c[1].store.ensure_topic(topic, partitions)) throw std::runtime_error("ensure_topic");
  for (int p = 0; p < partitions; ++p)
    if (const int dest = 1 + p % brokers; dest != 1)
      if (auto s = w.run(c[1].reassigner->move({topic, p}, broker_id(c[dest].id))); !s)
        throw std::runtime_error("placing t-" + std::to_string(p) + ": " + s.message());
  w.start_balancer();

  // Faults decided by the request and the step.
  int step = 0;
  int loss_percent = 0, hold_percent = 0;
  c.net.set_hook([&](const std::string& from, const std::string& to, const transport::request& r) {
    if (loss_percent == 0 && hold_percent == 0) return transport::fate::deliver;
    const auto h = fnv1a(std::to_string(o.seed) + "|" + std::to_string(step) + "|" + from + ">" + to + "|" + r.path +
                         "|" + r.body);
    if (static_cast<int>(h % 100) < loss_percent)
      return h & 0x100 ? transport::fate::drop : transport::fate::lose_response;
    if (static_cast<int>((h >> 8) % 100) < hold_percent) return transport::fate::hold;
    return transport::fate::deliver;
  });
  int raft_fault_percent = 0;
  if (o.replicated)
    c.log.hook = [&](const std::string& proposer, const raft::entry& e) {
      if (raft_fault_percent == 0) return test_log::fate::append;
      const auto h = fnv1a(std::to_string(o.seed) + "|" + std::to_string(step) + "|" + proposer + "|" + e.data);
      if (static_cast<int>(h % 100) >= raft_fault_percent) return test_log::fate::append;
      switch ((h >> 8) % 3) {
        case 0:
          return test_log::fate::lose_answer;
        case 1:
          return test_log::fate::hold;
        default:
          return test_log::fate::refuse;
      }
    };
  std::set<std::string> lagging;  // restarted brokers that have not caught up with the log yet (Raft)

  std::vector<idempotent_producer> idem(2);
  for (std::size_t k = 0; k < idem.size(); ++k) idem[k].id = 500 + k;
  std::vector<transactional_producer> txp(2);
  for (std::size_t k = 0; k < txp.size(); ++k) {
    txp[k].tid = "sim-tx" + std::to_string(k);
    txp[k].via = 1 + static_cast<int>(w.pick(brokers));
  }
  std::vector<member> members(3);
  for (std::size_t k = 0; k < members.size(); ++k) members[k].via = 1 + static_cast<int>(k % brokers);

  auto init_session = [&](transactional_producer& p) {
    auto r = w.txns[world::idx(p.via)]->init(p.tid);
    p.ready = r.ok();
    if (p.ready) {
      p.id = r->producer_id;
      p.epoch = r->epoch;
      p.sequence.clear();
      p.broken = false;
    }
    return p.ready;
  };

  auto idempotent_produce = [&](idempotent_producer& p) {
    if (!p.pending) {
      const int part = static_cast<int>(w.pick(partitions));
      p.pending = idempotent_producer::pending_record{
          part, "i" + std::to_string(o.seed) + "-" + std::to_string(p.id) + "-" + std::to_string(p.written++),
          p.next_sequence[part]};
      p.next_sequence[part] += 1;
    }
    const auto& rec = *p.pending;
    const int via = 1 + static_cast<int>(w.pick(brokers));
    const topic_partition tp{topic, rec.partition};
    auto fe = c[via].produce_frontend();
    auto r = w.run(fe.produce_async(
        {tp.topic, tp.partition, {{std::nullopt, rec.value, 1, 0}}, storage::producer_stamp{p.id, 0, rec.sequence}, {}}));
    const std::string line = "{\"op\":\"produce\",\"topic\":\"t\",\"partition\":" + std::to_string(rec.partition) +
                             ",\"value\":\"" + rec.value + "\"";
    if (r) {
      add(line + ",\"outcome\":\"ok\",\"offset\":" + std::to_string(r->offsets[0]) + "}");
      note(step, "produce " + rec.value + " via b" + std::to_string(via) + " at " + std::to_string(r->offsets[0]));
      p.pending.reset();
    } else {
      add(line + ",\"outcome\":\"info\"}");
      note(step, "produce " + rec.value + " via b" + std::to_string(via) + " failed: " + r.message());
      if (r.code() == errc::out_of_order_sequence || r.code() == errc::producer_fenced)
        out.violations.push_back("step " + std::to_string(step) + ": an idempotent retry of " + rec.value +
                                 " was refused: " + r.message());
    }
  };

  auto transactional_step = [&](transactional_producer& p) {
    if (!p.ready) {
      init_session(p);
      note(step, p.tid + " init: " + (p.ready ? "epoch " + std::to_string(p.epoch) : std::string("failed")));
      return;
    }
    const std::string label = p.tid + ":" + std::to_string(p.transactions);
    if (w.pick(3) != 0) {  // produce
      const topic_partition tp{topic, static_cast<std::int32_t>(w.pick(partitions))};
      const std::string value = "x" + std::to_string(o.seed) + "-" + p.tid + "-" + std::to_string(p.written++);
      std::string line = "{\"op\":\"produce\",\"topic\":\"t\",\"partition\":" + std::to_string(tp.partition) +
                         ",\"value\":\"" + value + "\",\"txn\":\"" + label + "\"";
      auto& b = c[p.via];
      auto seen = [&](const topic_partition& x) { return cluster::owner_as_seen_by(*b.ownership, x, broker_id(b.id)); };
      if (p.sequence.empty() && w.pick(2) == 0) {  // declares some partitions first, as a Kafka client does
        std::vector<std::pair<topic_partition, broker_id>> declared{{tp, seen(tp)}};
        for (std::size_t k = w.pick(3); k > 0; --k) {
          const topic_partition other{topic, static_cast<std::int32_t>(w.pick(partitions))};
          declared.emplace_back(other, seen(other));
        }
        auto d = w.txns[world::idx(p.via)]->join_all(p.tid, p.id, p.epoch, declared);
        note(step, p.tid + " declares " + std::to_string(declared.size()) +
                       " partitions: " + (d ? std::string("ok") : d.message()));
      }
      // Through the produce front end moonmqd's API calls: the coordinator's join, the append or forward, and the
      // coordinator told where the records went.
      auto fe = b.produce_frontend();
      auto r = w.run(fe.produce_async({tp.topic, tp.partition, {{std::nullopt, value, 1, 0}},
                                       storage::producer_stamp{p.id, p.epoch, p.sequence[tp.partition]}, p.tid}));
      if (r) {
        ++p.sequence[tp.partition];
        add(line + ",\"outcome\":\"ok\",\"offset\":" + std::to_string(r->offsets[0]) + "}");
      } else {
        add(line + ",\"outcome\":\"info\"}");
        p.broken = true;
      }
      note(step, "txn produce " + value + (r ? " ok" : " failed: " + r.message()));
      return;
    }
    const bool commit = !p.broken && w.pick(3) != 0;
    auto r = w.txns[world::idx(p.via)]->end({p.tid, p.id, p.epoch, commit, false});
    note(step, "end " + label + (commit ? " commit: " : " abort: ") +
                   std::to_string(r ? 200 : transport::http_status_of(r.code())));
    if (r) {
      add("{\"op\":\"txn\",\"txn\":\"" + label + "\",\"outcome\":\"" + (commit ? "commit" : "abort") + "\"}");
      p.epoch = r->epoch;
    } else {
      // Unknown for a commit; a transaction never asked to commit can only end aborted. A new session aborts what
      // was left open.
      add("{\"op\":\"txn\",\"txn\":\"" + label + "\",\"outcome\":\"" + (commit ? "info" : "abort") + "\"}");
      p.ready = false;
    }
    p.broken = false;
    p.sequence.clear();
    ++p.transactions;
  };

  auto routes_of = [&](member& m) -> groups::group_routes& { return *w.group_routes[world::idx(m.via)]; };
  // The HTTP status moonmqd's client API answers for a call's outcome (what the log shows).
  auto status_of = [](const auto& r) { return r ? 200 : groups::wire::refusal_response(r.err(), "fenced_member").status; };
  auto take = [&](member& m, const groups::member_answer& a) {
    m.id = a.member_id;
    m.epoch = a.member_epoch;
    m.owned.clear();
    for (const auto& tp : a.assignment) m.owned.insert(tp.partition);
  };
  // A member commits what an earlier step read, through the offsets front end of the partition's owner now: fenced
  // by the group's coordinator, since the partition may have gone to another member after the read.
  auto commit_read = [&](member& m) {
    const auto pending = *m.to_commit;
    m.to_commit.reset();
    const topic_partition tp{topic, pending.partition};
    const std::uint64_t upto = pending.upto;
    auto at = w.servers(tp);
    if (at.size() != 1) return;
    auto fe = c[at[0]].offsets_frontend();
    auto s = fe.commit({group, tp, upto, pending.member_id, pending.epoch});
    add("{\"op\":\"offset_commit\",\"group\":\"g\",\"topic\":\"t\",\"partition\":" +
        std::to_string(tp.partition) + ",\"offset\":" + std::to_string(upto) + ",\"outcome\":\"" +
        (s ? "ok" : "fail") + "\"}");
    note(step, "member " + pending.member_id + " commits t-" + std::to_string(tp.partition) + " at " + std::to_string(upto) +
                   " via b" + std::to_string(at[0]) + ": " + (s ? "ok" : s.message()));
  };
  auto member_step = [&](member& m) {
    if (step < m.silent_until_step) return;
    if (m.silent_until_step >= 0) {  // back from silence: first the position it had read before (a late commit)
      m.silent_until_step = -1;
      if (m.to_commit) return commit_read(m);
    }
    if (!m.joined || w.pick(8) == 0) {  // join (or rejoin with its id)
      auto r = routes_of(m).join({group, m.id, w.ids[world::idx(m.via)], {topic}});
      m.joined = r.ok();
      if (m.joined) take(m, *r);
      if (r.code() == errc::not_found) m.id.clear();  // its coordinator forgot it (expired): join as a new member
      note(step, "member " + m.id + " via b" + std::to_string(m.via) + " join: " + std::to_string(status_of(r)));
      return;
    }
    switch (w.pick(10)) {
      case 0: {  // leave
        auto r = routes_of(m).leave(group, m.id);
        note(step, "member " + m.id + " leaves: " + std::to_string(status_of(r)));
        m.joined = false;
        m.id.clear();
        m.owned.clear();
        m.to_commit.reset();  // a member that left commits nothing of what it read before
        return;
      }
      case 1: {  // goes silent for a while (its coordinator expires it when time passes)
        m.silent_until_step = step + 3 + static_cast<int>(w.pick(120));
        note(step, "member " + m.id + " goes silent until step " + std::to_string(m.silent_until_step));
        return;
      }
      case 2:
      case 3:
      case 4: {  // heartbeat
        groups::heartbeat_call beat{group, m.id, m.epoch, {}};
        for (int p : m.owned) beat.owned.push_back({topic, p});
        auto r = routes_of(m).heartbeat(beat);
        if (r)
          take(m, *r);
        else if (r.code() == errc::not_found || r.code() == errc::conflict)
          m.joined = false;  // unknown or fenced: join again
        note(step, "member " + m.id + " heartbeat: " + std::to_string(status_of(r)));
        return;
      }
      default: {  // consume: commit what an earlier step read, or read an owned partition from its committed offset
        if (m.to_commit) return commit_read(m);
        if (m.owned.empty()) return;
        auto it = m.owned.begin();
        std::advance(it, static_cast<long>(w.pick(m.owned.size())));
        const topic_partition tp{topic, *it};
        auto at = w.servers(tp);
        if (at.size() != 1) return;
        auto& b = c[at[0]];
        auto committed = b.offsets_frontend().committed(group, tp);
        if (!committed) return;
        const std::uint64_t from = *committed ? (*committed)->offset : 0;
        if (*committed)
          add("{\"op\":\"offset_read\",\"group\":\"g\",\"topic\":\"t\",\"partition\":" + std::to_string(tp.partition) +
              ",\"offset\":" + std::to_string((*committed)->offset) + "}");
        auto read = o.sabotage == sim_sabotage::read_aborted ? read_committed(b, tp, from, o.sabotage)
                                                             : fetch_committed(b, tp, from);
        if (!read) return;
        if (read->records.size() > 5) read->records.resize(5);
        const std::uint64_t upto = read->records.empty() ? from : read->records.back().first + 1;
        if (!read->records.empty()) add(read_line(tp, *read, false));
        if (upto > from) m.to_commit = member::pending_commit{tp.partition, upto, m.id, m.epoch};
        note(step, "member " + m.id + " read t-" + std::to_string(tp.partition) + " from " + std::to_string(from) +
                       " to " + std::to_string(upto));
        if (m.to_commit && w.pick(4) == 0) {  // stalls while processing (the zombie: it commits when it is back)
          m.silent_until_step = step + 3 + static_cast<int>(w.pick(120));
          note(step, "member " + m.id + " stalls until step " + std::to_string(m.silent_until_step));
        }
        return;
      }
    }
  };

  // Topics as cluster metadata: created, grown and deleted through any broker while everything else goes on; their
  // partitions move with the balancer and by hand, and take records at their owners.
  std::vector<std::string> admin_names;
  std::map<std::pair<topic_partition, std::uint64_t>, std::vector<std::string>> admin_acked;  // by incarnation
  int admin_written = 0;
  auto random_brokers = [&](std::size_t n) {
    std::vector<std::string> out;
    for (std::size_t k = 0; k < n; ++k)
      if (auto id = w.ids[w.pick(brokers)].value(); std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
    return out;
  };
  auto topic_step = [&] {
    const int via = 1 + static_cast<int>(w.pick(brokers));
    const std::size_t kind = admin_names.empty() ? 0 : w.pick(8);
    if (kind <= 1) {  // create: a new name, or again a deleted one (a new incarnation)
      std::string name = "a" + std::to_string(admin_names.size());
      if (kind == 1)
        for (const auto& n : admin_names)
          if (auto r = c[via].topics->find(n); r && r->deleted) {
            name = n;
            break;
          }
      if (std::find(admin_names.begin(), admin_names.end(), name) == admin_names.end()) admin_names.push_back(name);
      const auto count = static_cast<std::uint32_t>(1 + w.pick(3));
      note(step, w.change_topic(via, {frontend::topic_admin_op::create, name, count, false, random_brokers(count)}));
      return;
    }
    const std::string name = admin_names[w.pick(admin_names.size())];
    auto known = c[via].topics->find(name);
    if (kind <= 3) {  // grow, from what `via` knows (the decider checks against what it knows)
      if (!known || known->deleted) return;
      const auto count = static_cast<std::uint32_t>(known->partitions() + 1 + static_cast<std::int32_t>(w.pick(2)));
      note(step, w.change_topic(via, {frontend::topic_admin_op::grow, name, count, false, random_brokers(2)}));
      return;
    }
    if (kind == 4) {  // delete
      if (!known || known->deleted) return;
      note(step, w.change_topic(via, {frontend::topic_admin_op::remove, name, 0, false, {}}));
      return;
    }
    // A record for one of its partitions, produced at the broker that serves it.
    auto r = w.newest(name);
    if (!r || r->deleted) return;
    const topic_partition tp{name, static_cast<std::int32_t>(w.pick(static_cast<std::size_t>(r->partitions())))};
    auto at = w.log_servers(tp);
    if (at.size() != 1) return;
    const std::string value = "a" + std::to_string(o.seed) + "-" + std::to_string(admin_written++);
    auto mine = c[at[0]].topics->find(name);  // the incarnation the record is written to
    auto done = w.run(c[at[0]].router->produce(tp, {storage::record{std::nullopt, value, 1, 0}}));
    if (done && mine) admin_acked[{tp, mine->created}].push_back(value);
    note(step, "produce " + name_of(tp) + " at b" + std::to_string(at[0]) + ": " + (done ? "ok" : done.message()));
  };
  // One log per partition of every topic the catalog made, after every step: never two brokers serving a partition
  // (from a log of their own), never a stray (a log no carry-out made). After the heal: exactly one serves each
  // partition of a live topic, none of a deleted one, and every broker has the same record of each topic.
  auto check_one_log = [&](bool final) {
    const std::string at = final ? "after the heal" : "step " + std::to_string(step);
    for (int i = 1; i <= brokers; ++i)
      for (const auto& tp : c[i].ownership->withheld_all())
        out.violations.push_back(at + ": a stray of " + name_of(tp) + " on b" + std::to_string(i));
    for (const auto& name : admin_names) {
      auto r = w.newest(name);
      if (!r) continue;
      for (int p = 0; p < r->partitions(); ++p) {
        auto servers = w.log_servers({name, p});
        if (servers.size() > 1 || (final && servers.size() != (r->deleted ? 0u : 1u))) {
          std::string state;  // what each broker has of it, for the report
          for (int i = 1; i <= brokers; ++i) {
            const topic_partition tp{name, p};
            auto n = c[i].store.partition_count(name);
            auto e = c[i].ownership->entry(tp);
            state += " b" + std::to_string(i) + ":" + (n && p < *n ? "log" : "no log") +
                     (e ? ",entry " + e->owner.value() + "@" + std::to_string(e->version) + (e->handover ? "h" : "")
                        : ",no entry") +
                     (c[i].ownership->withheld(tp) ? ",withheld" : "");
            if (auto mine = c[i].topics->find(name)) state += ",v" + std::to_string(mine->version);
          }
          out.violations.push_back(at + ": " + name + "-" + std::to_string(p) + (r->deleted ? " (deleted)" : "") +
                                   " served from " + std::to_string(servers.size()) + " logs (first owner " +
                                   r->owners[static_cast<std::size_t>(p)].value() + ";" + state + ")");
        }
      }
      if (final)
        for (int i = 1; i <= brokers; ++i)
          if (auto mine = c[i].topics->find(name); !mine || *mine != *r)
            out.violations.push_back(at + ": b" + std::to_string(i) + " has not got version " +
                                     std::to_string(r->version) + " of topic " + name);
    }
  };

  auto check_one_server = [&](bool final) {
    for (int p = 0; p < partitions; ++p) {
      auto at = w.servers({topic, p});
      if (at.size() > 1 || (final && at.empty()))
        out.violations.push_back("step " + std::to_string(step) + ": t-" + std::to_string(p) + " served by " +
                                 std::to_string(at.size()) + " brokers");
    }
  };

  for (step = 0; step < o.steps; ++step) {
    // This step's network: lossy in one step of four, holding in one of four, a link cut in one of eight.
    loss_percent = w.pick(4) == 0 ? 25 : 0;
    hold_percent = w.pick(4) == 0 ? 30 : 0;
    raft_fault_percent = o.replicated && w.pick(4) == 0 ? 30 : 0;
    if (loss_percent) fault("loss");
    if (hold_percent) fault("hold");
    if (raft_fault_percent) fault("raft_log");
    if (w.pick(8) == 0) {
      const int a = 1 + static_cast<int>(w.pick(brokers)), b = 1 + (a % brokers);
      w.cut(a, b);
      note(step, "cut b" + std::to_string(a) + " - b" + std::to_string(b));
      fault("link_cut");
    } else if (w.pick(3) == 0) {
      w.heal();
    }
    if (const std::size_t held = c.net.held(); held > 0) w.release(w.pick(held + 1));

    switch (w.pick(17)) {
      case 0:
      case 1:
      case 2:
        idempotent_produce(idem[w.pick(idem.size())]);
        break;
      case 3:
      case 4:
      case 5:
        transactional_step(txp[w.pick(txp.size())]);
        break;
      case 6:
      case 7:
      case 8:
        member_step(members[w.pick(members.size())]);
        break;
      case 9: {  // a hand-driven move, started in the background
        topic_partition tp{topic, static_cast<std::int32_t>(w.pick(partitions))};
        if (!admin_names.empty() && w.pick(3) == 0)
          if (auto r = w.newest(admin_names[w.pick(admin_names.size())]); r && !r->deleted)
            tp = {r->name, static_cast<std::int32_t>(w.pick(static_cast<std::size_t>(r->partitions())))};
        auto at = tp.topic == topic ? w.servers(tp) : w.log_servers(tp);
        if (at.size() != 1) break;
        const int dest = 1 + static_cast<int>((static_cast<std::size_t>(at[0]) + w.pick(brokers - 1)) % brokers);
        auto started = c[at[0]].reassigner->start(c.io.get_executor(), tp, broker_id(c[dest].id));
        note(step, "move t-" + std::to_string(tp.partition) + " b" + std::to_string(at[0]) + " -> b" +
                       std::to_string(dest) + (started ? " started" : ": " + started.message()));
        break;
      }
      case 10: {  // a balance pass, in the background
        if (w.balancing || !c[1].balancer) break;
        w.balancing = true;
        asio::co_spawn(
            c.io,
            [](world& wd) -> asio::awaitable<void> {
              (void)co_await wd.c[1].balancer->run_pass();
              wd.balancing = false;
            }(w),
            asio::detached);
        note(step, "balance pass");
        break;
      }
      case 11: {  // kill -9 of a broker with no move or pass of its own in flight; it comes back from its files
        const int i = 1 + static_cast<int>(w.pick(brokers));
        if (!c[i].reassigner->idle() || w.recovering[world::idx(i)] > 0 || (i == 1 && w.balancing)) break;
        c.restart(i);
        w.start_coordinators(i);
        if (i == 1) w.start_balancer();
        w.spawn_recover(i);  // as moonmqd starts: the journal's moves resolved in the background
        if (o.replicated) lagging.insert(c[i].id);
        fault("broker_restart");
        note(step, "restart b" + std::to_string(i));
        break;
      }
      case 12: {  // the coordinators of one broker restart from their logs
        const int i = 1 + static_cast<int>(w.pick(brokers));
        w.start_coordinators(i);
        fault("coordinator_restart");
        note(step, "coordinators of b" + std::to_string(i) + " restart");
        break;
      }
      case 13: {  // a lagging broker catches up with the log
        if (lagging.empty()) break;
        auto it = lagging.begin();
        std::advance(it, static_cast<long>(w.pick(lagging.size())));
        c.log.catch_up(*it);
        note(step, *it + " catches up");
        lagging.erase(it);
        break;
      }
      case 14:
        topic_step();
        break;
      default: {  // time passes: transactions time out, silent members expire, clearances are asked, each broker
                  // resolves its journaled moves and learns the topics it missed (what moonmqd retries every 5 s)
        w.pass(static_cast<std::int64_t>(w.pick(6'000)));
        w.catch_up_topics();
        if (o.replicated && w.pick(2) == 0) c.log.release();
        for (int i = 1; i <= brokers; ++i) w.spawn_recover(i);
      }
    }
    w.advance(w.pick(40));
    check_one_server(false);
    check_one_log(false);
  }

  // Heal: no fault from here on; every held request and entry delivered, every broker caught up.
  loss_percent = hold_percent = raft_fault_percent = 0;
  w.heal();
  if (o.replicated) {
    c.log.release();
    for (const auto& id : lagging) c.log.catch_up(id);
  }
  auto drain = [&] {
    auto busy = [&] {
      bool any = w.moving() || w.balancing || c.net.held() > 0;
      for (int n : w.recovering) any = any || n > 0;
      return any;
    };
    for (int round = 0; round < 200000 && busy(); ++round) {
      w.release();
      if (c.io.poll_one() == 0) c.io.restart();
    }
  };
  drain();
  // What moonmqd's recovery loop does every 5 s: journaled moves resolved, until none is left.
  for (int round = 0; round < 10; ++round) {
    std::size_t left = 0;
    for (int i = 1; i <= brokers; ++i) left += w.run(c[i].reassigner->recover());
    drain();
    if (left == 0) break;
  }
  if (w.moving() || w.balancing) out.violations.push_back("after the heal, a move or a balance pass never finished");
  for (int round = 0; round < 5; ++round) {  // every transaction times out or completes
    w.pass(11'000);
  }
  check_one_server(true);
  w.catch_up_topics();
  check_one_log(true);
  for (const auto& [key, values] : admin_acked) {  // every acknowledged record of a live topic is on its one log
    const auto& [tp, created] = key;
    auto r = w.newest(tp.topic);
    if (!r || r->deleted || r->created != created) continue;  // its incarnation was deleted: so were its records
    auto at = w.log_servers(tp);
    if (at.size() != 1) continue;
    auto read = read_committed(c[at[0]], tp, 0, sim_sabotage::none);
    std::set<std::string> there;
    if (read)
      for (const auto& [offset, v] : read->records) there.insert(v);
    for (const auto& v : values)
      if (!there.count(v))
        out.violations.push_back("after the heal: " + name_of(tp) + " lost the acknowledged record " + v);
  }
  if (w.released > 0) out.faults["held_request"] += static_cast<int>(w.released);

  // The final reads: each partition's read_committed view from the broker that serves it, and each group offset.
  bool dropped = false;
  for (int p = 0; p < partitions; ++p) {
    const topic_partition tp{topic, p};
    auto at = w.servers(tp);
    if (at.size() != 1) continue;
    auto read = read_committed(c[at[0]], tp, 0, o.sabotage);
    if (!read) {
      out.violations.push_back("t-" + std::to_string(p) + " cannot be read on its owner");
      continue;
    }
    if (o.sabotage == sim_sabotage::drop_acknowledged && !dropped && !read->records.empty()) {
      out.log += "sabotage: left out of the final read: " + read->records.front().second + "\n";
      read->records.erase(read->records.begin());
      dropped = true;
    }
    if (read->open)
      out.violations.push_back("t-" + std::to_string(p) + " still has an open transaction after the heal");
    add(read_line(tp, *read, true));
    if (auto committed = c[at[0]].offsets.committed(group, tp))
      add("{\"op\":\"offset_read\",\"group\":\"g\",\"topic\":\"t\",\"partition\":" + std::to_string(p) +
          ",\"offset\":" + std::to_string(*committed) + "}");
  }
}

/// One seeded run. An operation that never finishes ends the run with a violation saying so.
inline cluster_sim_run run_cluster_sim(const cluster_sim_options& o) {
  cluster_sim_run out;
  try {
    run_cluster_sim_into(o, out);
  } catch (const std::exception& e) {
    out.violations.push_back(std::string("the run stopped: ") + e.what());
  }
  return out;
}

}  // namespace moonmq::test
