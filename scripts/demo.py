#!/usr/bin/env python3
"""The live demo behind `make demo`: three moonmqd brokers on loopback balance themselves.

All partitions and all traffic start on b1. Producers and consumers keep running while b1's autobalancer (a pass
every 2 s, not a dry run) moves partitions to b2 and b3. Each pass prints every broker's load as the model sees it,
the plan, and the moves in progress. Once the cluster is in band with nothing moving (within DEADLINE_SECONDS, or the
demo fails), the demo stops the traffic, pauses the balancer, waits for running moves to end, checks that every
acknowledged record is on its partition's owner (following a partition that moved), has kcat (an unmodified Kafka
client) produce through one broker's Kafka listener and read back through another's, checks that a kcat consumer
group of two members (running since the start, following the moves) read every acknowledged record, and prints the
web console's address. With KEEP=1 in the environment (`make demo KEEP=1`)
the brokers keep running until Ctrl-C, so that a person can look at the console and try moonmqctl; otherwise they
are stopped with SIGTERM and their data removed. With CAPACITY=1 (`make demo CAPACITY=1`) b3 is stated to carry twice
what b1 and b2 can (Server.Autobalance.Capacity): the goals then balance utilisation, and b3 ends with about half the
traffic. Standard library only (and kcat).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

TOPICS = {"orders": 6, "clicks": 3}
CAPACITY = os.environ.get("CAPACITY") == "1"
# With CAPACITY=1: bytes/s and bytes each broker can carry; b3 is twice the others.
SMALL = {"NwIn": 4 << 20, "NwOut": 4 << 20, "Disk": 1 << 30}
BIG = {k: 2 * v for k, v in SMALL.items()}
PASS_INTERVAL = 2
DEADLINE_SECONDS = 60


def free_port(taken):
    """A port below the kernel's ephemeral range that nothing listens on."""
    for port in range(21000 + os.getpid() % 5000, 32000):
        if port in taken:
            continue
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        taken.add(port)
        return port
    raise RuntimeError("no free port")


def call(port, method, path, body=None, timeout=10):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def kafka_round_trip(c):
    """kcat, an unmodified Kafka client, produces to and reads back from the cluster's Kafka listeners."""
    code, _ = call(c.api["b1"], "POST", "/v1/topics", {"name": "kafka-demo", "partitions": 3})
    if code not in (200, 201):
        print(f"kafka: creating topic kafka-demo answered {code}")
        return False
    sent = [f"k{i}:hello from kcat {i}" for i in range(9)]
    produce = subprocess.run(["kcat", "-b", f"127.0.0.1:{c.kafka['b2']}", "-P", "-t", "kafka-demo", "-K:"],
                             input="\n".join(sent) + "\n", capture_output=True, text=True, timeout=60)
    read = subprocess.run(["kcat", "-b", f"127.0.0.1:{c.kafka['b3']}", "-C", "-t", "kafka-demo", "-o", "beginning",
                           "-e", "-q", "-f", "%k:%s\\n"], capture_output=True, text=True, timeout=60)
    got = sorted(line for line in read.stdout.splitlines() if line)
    ok = produce.returncode == 0 and read.returncode == 0 and got == sorted(sent)
    print(f"\nkafka: kcat produced {len(sent)} records through b2's Kafka listener and read "
          f"{len(got)} back through b3's: {'the same records' if ok else 'NOT the same: ' + produce.stderr + read.stderr}")
    return ok


class KcatGroup:
    """Two kcat members of one Kafka consumer group ("kcat-demo"), through b2's and b3's Kafka listeners, subscribed
    to every topic from the beginning: the broker assigns the partitions, and the members follow them by metadata as
    the balancer moves them (a move does not rebalance the group)."""

    def __init__(self, cluster):
        self.lock = threading.Lock()
        self.read = {}  # (topic, partition, offset) -> times read
        self.log = []   # the members' rebalance lines
        self.procs = [subprocess.Popen(
            ["kcat", "-u", "-b", f"127.0.0.1:{cluster.kafka[b]}", "-G", "kcat-demo", "-X", "auto.offset.reset=earliest",
             "-f", "%t %p %o\\n", *TOPICS], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for b in ("b2", "b3")]
        for i, p in enumerate(self.procs):
            threading.Thread(target=self.records, args=(p,), daemon=True).start()
            threading.Thread(target=self.rebalances, args=(p, f"kcat member {i + 1}"), daemon=True).start()

    def records(self, proc):
        for line in proc.stdout:
            parts = line.split()
            if len(parts) == 3:
                with self.lock:
                    key = (parts[0], int(parts[1]), int(parts[2]))
                    self.read[key] = self.read.get(key, 0) + 1

    def rebalances(self, proc, name):
        for line in proc.stderr:
            if "assigned:" in line:
                with self.lock:
                    held = line.strip().split("assigned:", 1)[1].strip()
                    self.log.append(f"{name} holds " + (held or "nothing yet (the partitions' owners clear them first)"))

    def caught_up(self, acked, timeout=30):
        """Waits until every acknowledged record was read by some member; how many were not, and how many twice."""
        wanted = {(t, p, o) for (t, p), records in acked.items() for o, _ in records}
        deadline = time.time() + timeout
        while True:
            with self.lock:
                missing = len(wanted - self.read.keys())
                again = sum(n - 1 for n in self.read.values())
            if missing == 0 or time.time() > deadline:
                if missing:
                    with self.lock:
                        gaps = {}
                        for t, p, o in wanted - self.read.keys():
                            gaps[(t, p)] = min(o, gaps.get((t, p), o))
                    print("kafka: the kcat group has not read " + ", ".join(
                        f"{t}-{p} from offset {o}" for (t, p), o in sorted(gaps.items())))
                return len(wanted), missing, again
            time.sleep(0.2)

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()  # a member that is told to stop leaves the group
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


class Cluster:
    def __init__(self, daemon):
        self.daemon = daemon
        self.dir = tempfile.mkdtemp(prefix="moonmq-demo-")
        taken = set()
        self.ids = ["b1", "b2", "b3"]
        self.api = {b: free_port(taken) for b in self.ids}
        self.cluster = {b: free_port(taken) for b in self.ids}
        self.kafka = {b: free_port(taken) for b in self.ids}
        self.procs = {}

    def config(self, broker):
        peers = [{"Id": p, "Address": f"127.0.0.1:{self.cluster[p]}", "Kafka": f"127.0.0.1:{self.kafka[p]}"}
                 for p in self.ids if p != broker]
        server = {"Host": "127.0.0.1", "Port": self.api[broker], "DataDir": os.path.join(self.dir, broker),
                  "Kafka": {"Host": "127.0.0.1", "Port": self.kafka[broker]},
                  "Cluster": {"BrokerId": broker, "Port": self.cluster[broker], "Token": "demo-secret",
                              "Peers": peers}}
        if broker == "b1":
            server["Autobalance"] = {
                "Enabled": True, "IntervalSeconds": PASS_INTERVAL, "DryRun": False, "MaxMovesPerBroker": 2,
                "Goals": [{"Name": "NW_IN", "DetectThreshold": 4096}, {"Name": "NW_OUT", "DetectThreshold": 4096},
                          {"Name": "DISK"}, {"Name": "PARTITION_COUNT"}]}
            if CAPACITY:
                # Utilisation is balanced; a partition count is not a utilisation, so PARTITION_COUNT is left out.
                # MinChange 0: with nine partitions the last correction is often a small one.
                server["Autobalance"]["Goals"] = [
                    {"Name": "NW_IN", "DetectThreshold": 4096, "MinChange": 0},
                    {"Name": "NW_OUT", "DetectThreshold": 4096, "MinChange": 0}, {"Name": "DISK", "MinChange": 0}]
                server["Autobalance"]["Capacity"] = {"Default": SMALL, "Brokers": {"b3": BIG}}
        return {"Server": server}

    def start(self):
        for b in self.ids:
            path = os.path.join(self.dir, b + ".json")
            with open(path, "w") as f:
                json.dump(self.config(b), f)
            log = open(os.path.join(self.dir, b + ".log"), "w")
            self.procs[b] = subprocess.Popen([self.daemon, "--config", path], stdout=log, stderr=log)
        for b in self.ids:
            for _ in range(200):
                try:
                    if call(self.api[b], "GET", "/v1/health", timeout=1)[0] == 200:
                        break
                except OSError:
                    pass
                if self.procs[b].poll() is not None:
                    raise RuntimeError(f"{b} exited: " + open(os.path.join(self.dir, b + ".log")).read())
                time.sleep(0.05)
            else:
                raise RuntimeError(f"{b} did not become healthy")

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        codes = {}
        for b, p in self.procs.items():
            try:
                codes[b] = p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                codes[b] = p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
        return codes


class Traffic:
    """Producers through b1 (forwarded to owners), and a consumer group with one member on each broker that follows
    its partitions as the balancer moves them."""

    def __init__(self, cluster):
        self.c = cluster
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.acked = {}  # (topic, partition) -> [(offset, value)]
        self.errors = 0
        self.consumed = 0
        self.group_log = []  # assignment changes of the consumer group's members, printed as they happen
        self.threads = [threading.Thread(target=self.produce, daemon=True)] + [
            threading.Thread(target=self.consume, args=(b,), daemon=True) for b in ("b1", "b2", "b3")]

    def produce(self):
        n = 0
        parts = [(t, p) for t, count in TOPICS.items() for p in range(count)]
        while not self.stop.is_set():
            for t, p in parts:
                # Uneven on purpose: partition p of orders carries (p+1) times the bytes of partition 0.
                value = f"{t}-{p}-{n}-" + "x" * (300 * (p + 1) if t == "orders" else 200)
                try:
                    code, body = call(self.c.api["b1"], "POST", f"/v1/topics/{t}/records",
                                      {"partition": p, "records": [{"value": value}]})
                except OSError:
                    code, body = 0, None
                with self.lock:
                    if code == 200:
                        self.acked.setdefault((t, p), []).append((body["offsets"][0], value))
                    else:
                        self.errors += 1
                n += 1
            time.sleep(0.02)

    def consume(self, broker):
        """One member of consumer group "demo", connected through `broker`: it consumes what the group hands it (only
        partitions its broker owns), commits as that member, and follows its assignment as partitions move."""
        port = self.c.api[broker]
        member, epoch, held, positions = None, 0, set(), {}
        while not self.stop.is_set():
            try:
                if member is None:
                    code, body = call(port, "POST", "/v1/groups/demo/join", {"topics": list(TOPICS)})
                else:
                    owned = [{"topic": t, "partition": p} for t, p in sorted(held)]
                    code, body = call(port, "POST", "/v1/groups/demo/heartbeat",
                                      {"member_id": member, "member_epoch": epoch, "owned": owned})
                if code in (404, 409):
                    member, held = None, set()
                    continue
                if code == 200:
                    member, epoch = body["member_id"], body["member_epoch"]
                    now = {(a["topic"], a["partition"]) for a in body["assignment"]}
                    if now != held:
                        names = ", ".join(f"{t}-{p}" for t, p in sorted(now)) or "nothing"
                        with self.lock:
                            self.group_log.append(f"group demo: the member on {broker} now holds {names}")
                        for tp in held - now:
                            positions.pop(tp, None)
                        held = now
                for t, p in sorted(held):
                    if (t, p) not in positions:  # newly held: resume from the group's committed offset
                        code, body = call(port, "GET", f"/v1/groups/demo/offsets?topic={t}&partition={p}")
                        if code != 200:
                            continue
                        positions[(t, p)] = body["offset"] or 0
                    code, body = call(port, "GET",
                                      f"/v1/topics/{t}/partitions/{p}/records?offset={positions[(t, p)]}")
                    if code != 200:
                        continue
                    positions[(t, p)] = body["next_offset"]
                    with self.lock:
                        self.consumed += len(body["records"])
                    call(port, "POST", "/v1/groups/demo/offsets",
                         {"topic": t, "partition": p, "offset": body["next_offset"], "member_id": member,
                          "member_epoch": epoch})
            except (OSError, KeyError, TypeError):
                pass
            time.sleep(0.2)

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=15)

    def read_partition(self, topic, partition):
        """Every record of a partition, read from its owner: asked of b1 first, following a 421 to the broker it names
        (a move may end between two reads). Returns {offset: value}."""
        present, offset, broker = {}, 0, "b1"
        for _ in range(1000):
            code, body = call(self.c.api[broker], "GET",
                              f"/v1/topics/{topic}/partitions/{partition}/records?offset={offset}&max_bytes=4194304")
            if code == 421 and isinstance(body, dict) and body.get("owner") in self.c.api:
                broker = body["owner"]
                continue
            if code != 200:
                raise RuntimeError(f"reading {topic}-{partition} at offset {offset} from {broker}: {code} {body}")
            for r in body["records"]:
                present[r["offset"]] = r["value"]
            if body["next_offset"] in (offset, body["end_offset"]):
                return present
            offset = body["next_offset"]
        raise RuntimeError(f"reading {topic}-{partition}: no end after 1000 reads")

    def verify(self):
        """Every acknowledged record is on its partition's owner at its offset."""
        lost = 0
        for (t, p), records in self.acked.items():
            present = self.read_partition(t, p)
            lost += sum(1 for o, v in records if present.get(o) != v)
        return sum(len(r) for r in self.acked.values()), lost


def quiesce(cluster, timeout=60):
    """Pauses the balancer and waits until no move runs anywhere, so that the check reads a still cluster."""
    code, body = call(cluster.api["b1"], "POST", "/v1/autobalancer/pause")
    if code != 200:
        raise RuntimeError(f"pausing the balancer: {code} {body}")
    deadline = time.time() + timeout
    while time.time() < deadline:
        code, body = call(cluster.api["b1"], "GET", "/v1/reassignments?active=true")
        if code == 200 and not body["reassignments"] and not body["unreachable"]:
            return
        time.sleep(0.2)
    raise RuntimeError(f"moves still running {timeout} s after the balancer was paused: {body}")

def human(n, unit):
    for suffix in ("", "Ki", "Mi", "Gi"):
        if abs(n) < 1024:
            return f"{n:7.1f} {suffix}{unit}"
        n /= 1024
    return f"{n:7.1f} Ti{unit}"


def show(status):
    print(f"\n-- pass {status['passes']} ({status['last_pass']['result']}, detect "
          f"{status['last_pass']['detect_seconds'] * 1000:.2f} ms){'  in band' if status['satisfied'] else ''}")
    print(f"   {'broker':<7}{'nw_in':>14}{'nw_out':>14}{'disk':>13}{'partitions':>12}"
          f"{'  share of nw_in' if CAPACITY else ''}")
    total_in = sum(b["nw_in"] for b in status["brokers"]) or 1
    for b in status["brokers"]:
        share = f"{100 * b['nw_in'] / total_in:12.0f} %" if CAPACITY else ""
        print(f"   {b['id']:<7}{human(b['nw_in'], 'B/s'):>14}{human(b['nw_out'], 'B/s'):>14}"
              f"{human(b['disk'], 'B'):>13}{b['partitions']:>12}{share}{'' if b['active'] else '  (unreachable)'}")
    plan = ", ".join(f"{a['type']} {a['topic']}-{a['partition']} {a['src']}->{a['dest']}" for a in status["plan"])
    print(f"   plan: {plan or 'nothing to do'}")
    for m in status["moves"]:
        mv = m["move"]
        print(f"   moving {mv['topic']}-{mv['partition']} {m['src']}->{mv['dest']}: {mv['step']} "
              f"{mv['bytes_copied']}/{mv['bytes_total']} bytes")


def main():
    daemon = sys.argv[1] if len(sys.argv) > 1 else "build/moonmqd"
    c = Cluster(daemon)
    traffic = None
    kcat_group = None
    ok = False
    started = time.time()
    try:
        c.start()
        print(f"three brokers up (client ports {c.api['b1']}, {c.api['b2']}, {c.api['b3']}); data in {c.dir}")
        for t, n in TOPICS.items():
            call(c.api["b1"], "POST", "/v1/topics", {"name": t, "partitions": n, "placement": "local"})
        print("topics " + ", ".join(f"{t} ({n} partitions)" for t, n in TOPICS.items()) +
              " created on b1; producers running, and consumer group 'demo' with a member on each broker; b1's "
              f"autobalancer passes every {PASS_INTERVAL} s")
        if CAPACITY:
            print("CAPACITY=1: b3 can carry twice what b1 and b2 can; the goals balance utilisation, so b3 should "
                  "end with about half the traffic")
        traffic = Traffic(c)
        traffic.start()
        kcat_group = KcatGroup(c)
        print("kcat consumer group 'kcat-demo': two kcat members (through b2's and b3's Kafka listeners) read every "
              "topic as the balancer moves partitions under them")
        seen = 0
        while time.time() - started < DEADLINE_SECONDS:
            time.sleep(0.5)
            code, status = call(c.api["b1"], "GET", "/v1/autobalancer")
            if code != 200 or status["passes"] == seen:
                continue
            seen = status["passes"]
            show(status)
            with traffic.lock:
                for line in traffic.group_log:
                    print("   " + line)
                traffic.group_log.clear()
            with kcat_group.lock:
                for line in kcat_group.log:
                    print("   " + line)
                kcat_group.log.clear()
            spread = all(b["partitions"] > 0 for b in status["brokers"]) and len(status["brokers"]) == 3
            if seen >= 3 and status["satisfied"] and spread and not status["moves"] and not status["plan"]:
                ok = True
                break
        converged_after = time.time() - started
        traffic.finish()
        quiesce(c)
        total, lost = traffic.verify()
        print(f"\n{'in band, nothing moving,' if ok else 'NOT in band'} after {converged_after:.0f} s; "
              f"{total} records acknowledged, {lost} lost, {traffic.errors} produce errors, "
              f"{traffic.consumed} consumed")
        ok = ok and lost == 0
        wanted, missing, again = kcat_group.caught_up(traffic.acked)
        kcat_group.stop()
        print(f"kafka: the kcat consumer group read {wanted - missing} of the {wanted} acknowledged records while "
              f"partitions moved under it ({again} read again after a rebalance)")
        ok = ok and missing == 0
        ok = kafka_round_trip(c) and ok
        print(f"\nweb console: http://127.0.0.1:{c.api['b1']}/ui  (every broker serves one: "
              f"http://127.0.0.1:{c.api['b2']}/ui, http://127.0.0.1:{c.api['b3']}/ui)")
        ctl = os.path.join(os.path.dirname(os.path.abspath(daemon)), "moonmqctl")
        print(f"moonmqctl:   {ctl} --broker 127.0.0.1:{c.api['b1']} status")
        print(f"kafka:       kcat -b 127.0.0.1:{c.kafka['b1']} -L  (every broker has a Kafka listener: "
              f"{c.kafka['b1']}, {c.kafka['b2']}, {c.kafka['b3']})")
        if os.environ.get("KEEP") == "1":
            call(c.api["b1"], "POST", "/v1/autobalancer/resume")
            print("KEEP=1: the brokers keep running, the balancer resumed; Ctrl-C stops them")
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                print()
    finally:
        if traffic:
            traffic.stop.set()
        if kcat_group:
            kcat_group.stop()
        codes = c.stop()
        print("brokers stopped: " + ", ".join(f"{b} exit {code}" for b, code in codes.items()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
