"""alloc-search against TopologyFinder / TotientPerms with LP routing and alloc-alternate
(issue 16, item 3: a stronger upper side).

Instances: the coopt n = 128, d = 4 instances (``instances/coopt/*n128-d4*``) and uniform
all-to-all traffic at n = 128, d = 8 with 1e6 bytes per ordered pair (the issue's figures:
a random expander with LP routing 3.231e-3 s, alloc-alternate 300 s 3.352e-3 s, the
Moore/Cerf average-distance bound 3.090e-3 s).

Methods, each in the same run per instance: ``topologyfinder-lp``, ``totientperms-lp``,
``expander-lp`` (all-to-all only; no time limit: one route LP each), then ``alloc-alternate`` and
``alloc-search`` with the same ``--time-limit`` (covering their starts). Every solution is
re-checked by the independent checker. Ratios are objective / best of TF+LP and TP+LP
(below 1: better). The machine load (``os.getloadavg``) is printed with every row; the host
has 2 cores and 24 GiB and is shared, so wall times are indicative only. Usage::

    python benchmarks/bench_search.py [--time-limit 120] [--only dlrm,uniform] [--json out.json]
    python benchmarks/bench_search.py --rings tours ...        # alloc-search with ring tours
    python benchmarks/bench_search.py --diagnose INSTANCE SOL  # who loads the hottest arcs
    python benchmarks/bench_search.py --from-store results/runs.sqlite  # store comparison

``--diagnose`` splits the load of every arc within 0.1% of the maximum into the tail's own
egress and forwarded traffic, MP and AllReduce, and compares the hot nodes' arc loads with
what the ideal switch needs (their own egress only). ``--from-store`` prints, per coopt /
mixed d = 4 instance with alloc-search rows, TF+LP, TP+LP, the best other run, alloc-search
in alloc-milp's ring space and with tours, the analytic bound (ideal switch, Moore; valid for
every ring order) and the best solution's gap to it before and after alloc-search (every
stored run was re-checked by the independent checker when it was recorded).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from topoopt_milp import registry
from topoopt_milp.core.check import check_solution
from topoopt_milp.core.evaluate import evaluate, moore_lower_bound
from topoopt_milp.core.instance import Instance, make_instance
from topoopt_milp.core.result import finite_json, solution_dict

ROOT = Path(__file__).parents[1]
REFERENCE = ("topologyfinder-lp", "totientperms-lp", "expander-lp")
SEARCHES = ("alloc-alternate", "alloc-search")


def uniform(n: int, d: int, per_pair: float = 1e6) -> Instance:
    mp = [(i, j, per_pair) for i in range(n) for j in range(n) if i != j]
    inst = make_instance(n, d, 100.0, mp=mp)
    return Instance.from_dict({**inst.to_dict(), "name": f"uniform-n{n}-d{d}-1e6"})


def load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def run(inst: Instance, method: str, time_limit: float | None, **knobs) -> dict:
    t0, cpu0 = time.perf_counter(), time.process_time()
    before = load()
    res = registry.solve(inst, method, **knobs,
                         **({} if time_limit is None else {"time_limit": time_limit}))
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - t0
    problems = ["no solution"] if res.topology is None else check_solution(
        inst.to_dict(), finite_json(solution_dict(res, inst, evaluate(inst, res.topology,
                                                                      res.routing))))
    row = {"instance": inst.name, "method": method, "objective": res.objective,
           "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "load": f"{before}->{load()}",
           "check": "ok" if not problems else f"{len(problems)} problem(s)",
           "message": res.message, "ring_space": res.info.get("ring_space"),
           "trajectory": res.info.get("trajectory", [])}
    print(f"  {method:18s} {res.objective!s:22s} {wall:7.1f} s  load {row['load']}  "
          f"{row['check']}", flush=True)
    return row


def diagnose(inst: Instance, sol: dict, tol: float = 1e-3) -> None:
    """The hot-arc account of ``--diagnose`` (module docstring), printed."""
    from topoopt_milp.core.evaluate import arc_loads, ideal_switch_time
    from topoopt_milp.core.topology import Routing

    n, d, B = inst.n, inst.degree, inst.link_bytes_per_s
    L = np.zeros((n, n), dtype=int)
    for i, j, c in sol["topology"]["links"]:
        L[i, j] += c
        L[j, i] += c
    R = Routing.from_dict(sol["routing"])
    loads = arc_loads(n, R)
    util = np.where(L > 0, loads / np.maximum(L, 1) / B, 0.0)
    T, Tid = float(util.max()), ideal_switch_time(inst)
    kinds = ("own_mp", "own_ar", "fwd_mp", "fwd_ar")
    part = {k: np.zeros((n, n)) for k in kinds}
    hops = 0.0
    for c in R.commodities:
        for path, f in c.paths:
            hops += c.bytes * f * (len(path) - 1)
            for a, b in zip(path[:-1], path[1:], strict=False):
                part[("own_" if a == c.src else "fwd_") + c.kind][a, b] += c.bytes * f
    hot = [(int(a), int(b)) for a, b in np.argwhere(util >= T * (1 - tol))]
    total = sum(c.bytes for c in R.commodities)
    print(f"{inst.name}: T = {T:.6g} s, ideal switch {Tid:.6g} s (T / ideal {T / Tid:.4f}); "
          f"{len(hot)} of {int((L > 0).sum())} arcs within {tol:g} of the max; mean arc load "
          f"{loads.sum() / (L.sum() * B * T):.3f} of the max; mean hops {hops / total:.3f}")
    out, inn = inst.node_out_in_bytes()
    need = np.maximum(out, inn) / (d * B)
    hotn = [int(v) for v in np.argsort(-need) if need[v] >= 0.9 * Tid]
    fwd = {v: part["fwd_mp"][v].sum() + part["fwd_ar"][v].sum() for v in hotn}
    print(f"  {len(hotn)} nodes need >= 0.9 of the ideal time; their out-arcs carry their own "
          f"egress plus forwarded traffic of "
          f"{min(fwd[v] / out[v] for v in hotn):.1%}..{max(fwd[v] / out[v] for v in hotn):.1%}"
          f" of it; hot nodes among their neighbours: "
          f"{sum(int(L[v, u] > 0) for v in hotn for u in hotn)} ports")
    share = {k: sum(part[k][a, b] for a, b in hot) for k in kinds}
    tot = sum(share.values())
    print("  load of the hot arcs: " + ", ".join(f"{k} {v / tot:.1%}" for k, v in share.items()))
    for a, b in hot[:8]:
        cells = " ".join(f"{part[k][a, b] / 1e6:.4g}" for k in kinds)
        print(f"   {a}->{b} [{L[a, b]} link(s)] own_mp own_ar fwd_mp fwd_ar [MB] {cells}; "
              f"tail / head need {need[a] / Tid:.3f} / {need[b] / Tid:.3f} of the ideal")
    if hotn:
        v = hotn[0]
        print(f"   hot node {v}: own egress {out[v] / 1e6:.5g} MB, its out-arcs carry "
              f"{loads[v].sum() / 1e6:.5g} MB (ideal switch: its own egress only, "
              f"{out[v] / (d * B):.4g} s), neighbours {[int(u) for u in np.flatnonzero(L[v])]}")


def from_store(path: str) -> None:
    """The store comparison of ``--from-store`` (module docstring), printed as markdown."""
    from topoopt_milp.bench.store import load_runs
    from topoopt_milp.core.evaluate import ideal_switch_time

    runs = load_runs(path)
    runs = runs[runs["family"].isin(["coopt", "mixed"]) & (runs["degree"] == 4)]
    ok = runs[runs["status"].isin(["optimal", "feasible"]) & runs["objective"].notna()]
    print("| instance | TF+LP [s] | TP+LP [s] | best other [s] (by) | alloc-search TP rings "
          "[s] (wall) | alloc-search tours [s] (wall) | analytic bound [s] | gap before [%] | "
          "gap now [%] |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, grp in ok.groupby("instance_name", sort=True):
        srch = grp[grp["method"] == "alloc-search"]
        if srch.empty:
            continue
        tours = srch[srch["params"].astype(str).str.contains("'rings': 'tours'|\"rings\": "
                                                             "\"tours\"", regex=True)]
        plain = srch.drop(tours.index)
        other = grp[grp["method"] != "alloc-search"]
        best_o = other.loc[other["objective"].astype(float).idxmin()]
        inst = Instance.load(ROOT / "instances" / grp["family"].iloc[0] / f"{name}.json")
        ideal = max(ideal_switch_time(inst), moore_lower_bound(inst))  # the analytic bound

        def cell(df):
            if df.empty:
                return "-"
            r = df.loc[df["objective"].astype(float).idxmin()]
            return f"{r['objective']:.6g} ({r['wall_s']:.0f} s)"

        def lp(m, grp=grp):
            r = grp[grp["method"] == m]
            return f"{r['objective'].min():.6g}" if len(r) else "-"

        now = float(grp["objective"].astype(float).min())
        before = float(best_o["objective"])
        print(f"| {name} | {lp('topologyfinder-lp')} | {lp('totientperms-lp')} | "
              f"{before:.6g} ({best_o['method']}) | {cell(plain)} | {cell(tours)} | "
              f"{ideal:.6g} | {100 * (before - ideal) / before:.1f} | "
              f"{100 * (now - ideal) / now:.1f} |")


def table(rows: list[dict]) -> None:
    print("\n| instance | method | T_comm [ms] | / best(TF+LP, TP+LP) | wall [s] | load | check |")
    print("|---|---|---|---|---|---|---|")
    for inst in dict.fromkeys(r["instance"] for r in rows):
        mine = [r for r in rows if r["instance"] == inst]
        ref = min(r["objective"] for r in mine if r["method"] in REFERENCE[:2])
        for r in mine:
            ratio = r["objective"] / ref
            print(f"| {inst} | {r['method']} | {1e3 * r['objective']:.5g} | {ratio:.4f} | "
                  f"{r['wall_s']} | {r['load']} | {r['check']} |")


def lns_compare(a) -> int:
    """``--lns``: alloc-search with ring tours, swaps only vs swaps and large-neighbourhood
    moves (``lns_size``, ``lns_time``, ``lns_tries``), the same time limit, one instance
    after the other (each run re-checked by the independent checker)."""
    parts = [float(x) for x in a.lns.split(",")]
    knobs = {"lns_size": int(parts[0])}
    if len(parts) > 1:
        knobs["lns_time"] = parts[1]
    if len(parts) > 2:
        knobs["lns_tries"] = int(parts[2])
    print(f"# bench_search --lns {a.lns}: time limit {a.time_limit:g} s; 2 cores, shared "
          f"(load {load()} at start)", flush=True)
    rows = []
    for path in a.paths:
        inst = Instance.load(path)
        print(f"\n{inst.name} (n = {inst.n}, d = {inst.degree})", flush=True)
        base = run(inst, "alloc-search", a.time_limit, rings="tours")
        with_lns = run(inst, "alloc-search", a.time_limit, rings="tours", **knobs)
        base["variant"], with_lns["variant"] = "swaps", f"swaps+lns{a.lns}"
        moves = [s for s in with_lns.pop("trajectory", []) if s["kind"].startswith("lns:")]
        with_lns["lns_moves"] = len(moves)
        with_lns["lns_accepted"] = sum(s["accepted"] for s in moves)
        base.pop("trajectory", None)
        rows += [base, with_lns]
        if a.json:
            Path(a.json).write_text(json.dumps(rows, indent=1))
    print("\n| instance | swaps [s] | swaps+lns [s] | ratio | lns moves (accepted) | loads |")
    print("|---|---|---|---|---|---|")
    for b, w in zip(rows[::2], rows[1::2], strict=True):
        ratio = w["objective"] / b["objective"] if b["objective"] and w["objective"] else None
        print(f"| {b['instance']} | {b['objective']:.6g} | {w['objective']:.6g} | "
              f"{'-' if ratio is None else f'{ratio:.4f}'} | {w['lns_moves']} "
              f"({w['lns_accepted']}) | {b['load']}, {w['load']} |")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--only", default="", help="comma-separated name fragments")
    ap.add_argument("--pattern", default="*n128-d4*", help="coopt instance file pattern")
    ap.add_argument("--no-uniform", action="store_true", help="leave out uniform n = 128, d = 8")
    ap.add_argument("--json", default=None)
    ap.add_argument("--rings", default=None, choices=("choose", "tours"),
                    help="alloc-search's ring space (default: its own default, choose)")
    ap.add_argument("--lns", default=None, metavar="SIZE[,TIME[,TRIES]]",
                    help="compare alloc-search (rings tours) without and with large-"
                         "neighbourhood moves of SIZE nodes on --paths, same time limit")
    ap.add_argument("--paths", nargs="*", default=[], help="instance files for --lns")
    ap.add_argument("--diagnose", nargs=2, metavar=("INSTANCE", "SOLUTION"))
    ap.add_argument("--from-store", default=None, metavar="STORE")
    a = ap.parse_args(argv)
    if a.diagnose:
        diagnose(Instance.load(a.diagnose[0]), json.loads(Path(a.diagnose[1]).read_text()))
        return 0
    if a.from_store:
        from_store(a.from_store)
        return 0
    if a.lns:
        return lns_compare(a)
    insts = [Instance.load(p) for p in sorted(glob.glob(str(ROOT / "instances/coopt" / a.pattern)))]
    if not a.no_uniform:
        insts.append(uniform(128, 8))
    if a.only:
        keys = a.only.split(",")
        insts = [i for i in insts if any(k in i.name for k in keys)]
    print(f"# bench_search: time limit {a.time_limit:g} s; 2 cores, 24 GiB, shared "
          f"(load {load()} at start)", flush=True)
    rows = []
    for inst in insts:
        print(f"\n{inst.name} (n = {inst.n}, d = {inst.degree})", flush=True)
        for m in REFERENCE:
            if m == "expander-lp" and inst.allreduce:
                continue  # the expander is a reference for all-to-all traffic only
            rows.append(run(inst, m, None))
        for m in SEARCHES:
            extra = {"rings": a.rings} if a.rings and m == "alloc-search" else {}
            rows.append(run(inst, m, a.time_limit, **extra))
        if not inst.allreduce and inst.name.startswith("uniform"):
            print(f"  Moore/Cerf bound {moore_lower_bound(inst):.6g} s", flush=True)
        if a.json:
            Path(a.json).write_text(json.dumps(rows, indent=1))
    table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
