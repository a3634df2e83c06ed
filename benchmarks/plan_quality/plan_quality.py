#!/usr/bin/env python3
"""How close moonmq-plan comes to the fewest bytes a rebalance can move.

Generates seeded clusters that have a placement inside every goal's band by construction, skews them, runs
`moonmq-plan --converge` on each, and compares the bytes its actions copy with the exact optimum of an integer
program (every broker in every band, fewest bytes moved), solved with CBC through PuLP. The optima of the fixed seeds
are cached in optima.json next to this file (keyed by a hash of the instance), so a run needs the solver only for
instances it has not seen; `--solve` solves them all again, `--no-solve` reports those without a cached optimum
without a ratio.

Usage: plan_quality.py MOONMQ_PLAN [--solve|--no-solve] [--check] [--family=NAME]

Per instance it prints whether the planner ended in band, bytes moved / optimum, the actions and passes it took, and
whether it was stable (a second detection on its result plans nothing) and deterministic (two runs print the same
plan); then the overall figures and one JSON line. `--check` exits 1 when a target of docs/performance.md is missed.
"""

import hashlib
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile

USAGE = "usage: plan_quality.py MOONMQ_PLAN [--solve|--no-solve] [--check] [--family=NAME]"
HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(HERE, "optima.json")
MIB = 1024.0 * 1024.0
DEVIATION = 0.1
RESOURCES = ("nw_in", "nw_out", "disk")

# ---- instances ----------------------------------------------------------------------------------------------------


def bands(parts, brokers):
    """Each goal's band (lower, upper) over `brokers`, as the built-in goals compute them at +-10%."""
    n = len(brokers)
    out = {}
    for r in RESOURCES:
        mean = sum(p[r] for p in parts) / n
        out[r] = (mean * (1 - DEVIATION), mean * (1 + DEVIATION))
    mean = len(parts) / n
    out["count"] = (math.floor(mean * (1 - DEVIATION)), math.ceil(mean * (1 + DEVIATION)))
    return out


def totals(parts, placement, brokers):
    t = {b: {"nw_in": 0.0, "nw_out": 0.0, "disk": 0.0, "count": 0} for b in brokers}
    for p, b in zip(parts, placement):
        for r in RESOURCES:
            t[b][r] += p[r]
        t[b]["count"] += 1
    return t


def violation(parts, placement, brokers, bnd):
    """Summed distance outside the bands, each resource relative to its mean (0 = every broker in every band)."""
    t = totals(parts, placement, brokers)
    v = 0.0
    for b in brokers:
        for key, (lo, hi) in bnd.items():
            scale = (lo + hi) / 2 or 1.0
            x = t[b][key]
            v += (max(0.0, x - hi) + max(0.0, lo - x)) / scale
    return v


def in_band(parts, placement, brokers, slack=1e-9):
    bnd = bands(parts, brokers)
    t = totals(parts, placement, brokers)
    for b in brokers:
        for key, (lo, hi) in bnd.items():
            eps = slack * max(1.0, (lo + hi) / 2)
            if t[b][key] > hi + eps or t[b][key] < lo - eps:
                return False
    return True


def balance(parts, brokers, rng):
    """A placement inside every band (with a margin), by largest-first greedy and then improving moves and swaps;
    None when it gets stuck."""
    n = len(brokers)
    tight = {}
    for key, (lo, hi) in bands(parts, brokers).items():
        mid = (lo + hi) / 2
        tight[key] = (lo, hi) if key == "count" else (mid - (mid - lo) * 0.8, mid + (hi - mid) * 0.8)
    means = {r: sum(p[r] for p in parts) / n for r in RESOURCES}
    order = sorted(range(len(parts)), key=lambda i: -sum(parts[i][r] / means[r] for r in RESOURCES))
    placement = [None] * len(parts)
    load = {b: {r: 0.0 for r in RESOURCES} for b in brokers}
    for i in order:
        best = min(brokers, key=lambda b: (max((load[b][r] + parts[i][r]) / means[r] for r in RESOURCES), b))
        placement[i] = best
        for r in RESOURCES:
            load[best][r] += parts[i][r]
    current = violation(parts, placement, brokers, tight)
    for _ in range(4000):
        if current <= 0:
            return placement
        i = rng.randrange(len(parts))
        old = placement[i]
        if rng.random() < 0.5:
            placement[i] = rng.choice([b for b in brokers if b != old])
            v = violation(parts, placement, brokers, tight)
            if v < current:
                current = v
            else:
                placement[i] = old
        else:
            j = rng.randrange(len(parts))
            if placement[j] == old:
                continue
            placement[i], placement[j] = placement[j], placement[i]
            v = violation(parts, placement, brokers, tight)
            if v < current:
                current = v
            else:
                placement[i], placement[j] = placement[j], placement[i]
    return placement if current <= 0 else None


def draw_parts(family, rng):
    """Partition loads for one family: (brokers, [{topic, partition, nw_in, nw_out, disk}])."""
    parts = []
    if family == "skewed":
        nb, n = rng.randint(3, 5), rng.randint(24, 80)
        for i in range(n):
            nw_in = rng.lognormvariate(math.log(1.5 * MIB), 0.6)
            parts.append({"topic": "t%d" % (i % 4), "nw_in": nw_in, "nw_out": nw_in * rng.choice((1, 2, 3)),
                          "disk": nw_in * rng.uniform(1800, 7200)})
    elif family == "hetero":
        # Sizes unrelated to rates and spread over two orders of magnitude.
        nb, n = rng.randint(3, 5), rng.randint(30, 70)
        for i in range(n):
            nw_in = rng.lognormvariate(math.log(1.5 * MIB), 0.5)
            parts.append({"topic": "t%d" % (i % 3), "nw_in": nw_in, "nw_out": nw_in * rng.uniform(0.5, 3),
                          "disk": rng.lognormvariate(math.log(4e9), 1.2)})
    elif family == "small-topics":
        # Many topics of two to five partitions, each topic with its own scale.
        nb = 5
        for t in range(rng.randint(14, 22)):
            scale = rng.lognormvariate(math.log(1.2 * MIB), 0.7)
            for _ in range(rng.randint(2, 5)):
                nw_in = scale * rng.uniform(0.8, 1.2)
                parts.append({"topic": "topic-%02d" % t, "nw_in": nw_in, "nw_out": nw_in * rng.choice((1, 2)),
                              "disk": nw_in * rng.uniform(3600, 5400)})
    elif family == "hot":
        # One partition carries a large share of the inbound traffic.
        nb, n = rng.randint(3, 4), rng.randint(30, 60)
        for i in range(n):
            nw_in = rng.lognormvariate(math.log(1.2 * MIB), 0.5)
            parts.append({"topic": "t%d" % (i % 3), "nw_in": nw_in, "nw_out": nw_in * rng.choice((1, 2)),
                          "disk": nw_in * rng.uniform(1800, 7200)})
        total = sum(p["nw_in"] for p in parts)
        hot = parts[rng.randrange(n)]
        hot["nw_in"] = 0.35 * total / nb
        hot["nw_out"] = hot["nw_in"] * 2
    else:
        raise ValueError("unknown family " + family)
    counters = {}
    for p in parts:
        p["partition"] = counters.get(p["topic"], 0)
        counters[p["topic"]] = p["partition"] + 1
        for r in RESOURCES:
            p[r] = float(round(p[r]))
    return ["b%d" % (k + 1) for k in range(nb)], parts


def make_instance(family, seed):
    """A seeded instance: loads, a skewed placement, and a balanced one it was skewed from (so one exists)."""
    rng = random.Random("%s-%d" % (family, seed))
    for _ in range(100):
        brokers, parts = draw_parts(family, rng)
        balanced = balance(parts, brokers, rng)
        if balanced is None:
            continue
        heavy = rng.choice(brokers)
        weights = [4 if b == heavy else 1 for b in brokers]
        fraction = rng.uniform(0.25, 0.5)
        skewed = [rng.choices(brokers, weights)[0] if rng.random() < fraction else b for b in balanced]
        if in_band(parts, skewed, brokers):
            continue
        return {"name": "%s-%d" % (family, seed), "brokers": brokers, "parts": parts, "placement": skewed}
    raise RuntimeError("no instance for %s-%d" % (family, seed))


def instance_key(inst):
    doc = json.dumps([inst["brokers"], inst["parts"], inst["placement"]], sort_keys=True)
    return hashlib.sha256(doc.encode()).hexdigest()[:16]


FAMILIES = {"skewed": range(1, 13), "hetero": range(1, 7), "small-topics": range(1, 7), "hot": range(1, 7)}

# ---- the exact optimum --------------------------------------------------------------------------------------------


SOLVE_SECONDS = 180


def optimum(inst, hint=None):
    """Fewest bytes whose moves put every broker in every band: (feasible, bytes, proven). `hint`, a placement in
    band (the planner's), starts the search with a bound. CBC stops after SOLVE_SECONDS: `proven` says whether it
    proved the bytes optimal (an unproven figure is only the best placement it found, and no ratio is taken from it)."""
    import pulp

    brokers, parts, placement = inst["brokers"], inst["parts"], inst["placement"]
    bnd = bands(parts, brokers)
    prob = pulp.LpProblem("fewest_bytes", pulp.LpMinimize)
    x = {(i, b): pulp.LpVariable("x_%d_%s" % (i, b), cat="Binary") for i in range(len(parts)) for b in brokers}
    gib = 1024.0 ** 3
    prob += pulp.lpSum(parts[i]["disk"] / gib * (1 - x[i, placement[i]]) for i in range(len(parts)))
    for i in range(len(parts)):
        prob += pulp.lpSum(x[i, b] for b in brokers) == 1
    for b in brokers:
        for r in RESOURCES:
            lo, hi = bnd[r]
            mid = (lo + hi) / 2
            total = pulp.lpSum(parts[i][r] / mid * x[i, b] for i in range(len(parts)))
            prob += total <= hi / mid
            prob += total >= lo / mid
        lo, hi = bnd["count"]
        count = pulp.lpSum(x[i, b] for i in range(len(parts)))
        prob += count <= hi
        prob += count >= lo
    if hint:
        for (i, b), var in x.items():
            var.setInitialValue(1 if hint[i] == b else 0)
    status = prob.solve(pulp.COIN_CMD(msg=False, warmStart=bool(hint), timeLimit=SOLVE_SECONDS,
                                      options=["ratioGap 0"]))
    if pulp.LpStatus[status] == "Infeasible":
        return False, None, True
    if prob.sol_status not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        return None, None, False  # no placement found in time: feasibility unknown
    moved = sum(parts[i]["disk"] for i in range(len(parts)) if x[i, placement[i]].value() < 0.5)
    return True, moved, prob.sol_status == pulp.LpSolutionOptimal


# ---- the planner --------------------------------------------------------------------------------------------------


def snapshot_doc(inst, placement):
    return {
        "brokers": [{"id": b, "active": True} for b in inst["brokers"]],
        "partitions": [dict(topic=p["topic"], partition=p["partition"], broker=placement[i],
                            **{r: p[r] for r in RESOURCES}) for i, p in enumerate(inst["parts"])],
    }


def run_plan(binary, doc, converge):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
        path = f.name
    try:
        args = [binary, path] + (["--converge"] if converge else [])
        out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(path)
    return out


def evaluate(binary, inst):
    """Runs the planner to convergence; returns its figures."""
    raw = run_plan(binary, snapshot_doc(inst, inst["placement"]), True)
    again = run_plan(binary, snapshot_doc(inst, inst["placement"]), True)
    report = json.loads(raw)
    index = {(p["topic"], p["partition"]): i for i, p in enumerate(inst["parts"])}
    placement = list(inst["placement"])
    moved = 0.0
    for a in report["actions"]:
        i = index[(a["topic"], a["partition"])]
        placement[i] = a["dest"]
        moved += inst["parts"][i]["disk"]
        if a["type"] == "SWAP":
            j = index[(a["swap_topic"], a["swap_partition"])]
            placement[j] = a["src"]
            moved += inst["parts"][j]["disk"]
    second = json.loads(run_plan(binary, snapshot_doc(inst, placement), False))
    return {
        "in_band": in_band(inst["parts"], placement, inst["brokers"]),
        "placement": placement,
        "moved": moved,
        "actions": len(report["actions"]),
        "passes": report["passes"],
        "stable": not second["actions"],
        "deterministic": raw == again,
    }


def save_cache(cache):
    with open(CACHE + ".tmp", "w") as f:
        json.dump(cache, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(CACHE + ".tmp", CACHE)


# ---- main ---------------------------------------------------------------------------------------------------------


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    flags = [a for a in argv[1:] if a.startswith("--")]
    family_filter = None
    for f in flags:
        if f.startswith("--family="):
            family_filter = f.split("=", 1)[1]
        elif f not in ("--solve", "--no-solve", "--check"):
            sys.exit("plan_quality: unknown option " + f)
    if len(args) != 1:
        sys.exit(USAGE)
    binary = args[0]
    cache = {}
    if os.path.exists(CACHE) and "--solve" not in flags:
        with open(CACHE) as f:
            cache = json.load(f)
    rows = []
    print("%-16s %3s %4s %8s %8s %7s %7s %6s %6s %6s" %
          ("instance", "brk", "part", "in band", "bytes/opt", "actions", "passes", "stable", "determ", "solve"))
    for family, seeds in FAMILIES.items():
        if family_filter and family != family_filter:
            continue
        for seed in seeds:
            inst = make_instance(family, seed)
            key = instance_key(inst)
            entry = cache.get(inst["name"])
            solved = "cache"
            r = evaluate(binary, inst)
            if not entry or entry.get("key") != key:
                if "--no-solve" in flags:
                    entry = {"key": key, "feasible": None, "optimum_bytes": None}
                    solved = "-"
                else:
                    feasible, best, proven = optimum(inst, r["placement"] if r["in_band"] else None)
                    entry = {"key": key, "feasible": feasible, "optimum_bytes": best, "proven": proven}
                    cache[inst["name"]] = entry
                    save_cache(cache)
                    solved = "cbc"
            proven = entry.get("proven", True)
            # A ratio says how close to the fewest bytes a plan that reached the bands came; one that did not reach
            # them is a failure of its own (counted in "in band"), not a cheap plan.
            ratio = r["moved"] / entry["optimum_bytes"] \
                if entry["feasible"] and entry["optimum_bytes"] and proven and r["in_band"] else None
            if not proven:
                solved += " (unproven)"
            rows.append(dict(r, name=inst["name"], feasible=entry["feasible"], ratio=ratio))
            print("%-16s %3d %4d %8s %8s %7d %7d %6s %6s %6s" % (
                inst["name"], len(inst["brokers"]), len(inst["parts"]), "yes" if r["in_band"] else "NO",
                "%.3f" % ratio if ratio else "-", r["actions"], r["passes"], "yes" if r["stable"] else "NO",
                "yes" if r["deterministic"] else "NO", solved))

    def summary(subset):
        ratios = [x["ratio"] for x in subset if x["ratio"] is not None]
        return {
            "instances": len(subset),
            "feasible": sum(1 for x in subset if x["feasible"]),
            "in_band": sum(1 for x in subset if x["feasible"] and x["in_band"]),
            "median_ratio": round(statistics.median(ratios), 3) if ratios else None,
            "worst_ratio": round(max(ratios), 3) if ratios else None,
            "stable": sum(1 for x in subset if x["stable"]),
            "deterministic": sum(1 for x in subset if x["deterministic"]),
        }

    overall = summary(rows)
    skewed = summary([x for x in rows if x["name"].startswith("skewed-")])
    for label, s in (("skewed (the issue's shape)", skewed), ("all families", overall)):
        if not s["instances"]:
            continue
        print("%s: in band %d/%d feasible, bytes/optimum median %s worst %s, stable %d/%d, deterministic %d/%d" % (
            label, s["in_band"], s["feasible"], s["median_ratio"], s["worst_ratio"], s["stable"], s["instances"],
            s["deterministic"], s["instances"]))
    print(json.dumps({"benchmark": "plan_quality", "skewed": skewed, "all": overall}))
    if "--check" in flags:
        ok = all(s["in_band"] == s["feasible"] and s["stable"] == s["instances"] and
                 s["deterministic"] == s["instances"] for s in (overall,))
        ok = ok and overall["median_ratio"] is not None and overall["median_ratio"] <= 1.15
        ok = ok and overall["worst_ratio"] <= 1.3
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
