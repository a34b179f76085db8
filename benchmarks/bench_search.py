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
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from pathlib import Path

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


def run(inst: Instance, method: str, time_limit: float | None) -> dict:
    t0 = time.perf_counter()
    before = load()
    res = registry.solve(inst, method, **({} if time_limit is None else {"time_limit": time_limit}))
    wall = time.perf_counter() - t0
    problems = ["no solution"] if res.topology is None else check_solution(
        inst.to_dict(), finite_json(solution_dict(res, inst, evaluate(inst, res.topology,
                                                                      res.routing))))
    row = {"instance": inst.name, "method": method, "objective": res.objective,
           "wall_s": round(wall, 1), "load": f"{before}->{load()}",
           "check": "ok" if not problems else f"{len(problems)} problem(s)",
           "message": res.message, "ring_space": res.info.get("ring_space")}
    print(f"  {method:18s} {res.objective!s:22s} {wall:7.1f} s  load {row['load']}  "
          f"{row['check']}", flush=True)
    return row


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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--only", default="", help="comma-separated name fragments")
    ap.add_argument("--pattern", default="*n128-d4*", help="coopt instance file pattern")
    ap.add_argument("--no-uniform", action="store_true", help="leave out uniform n = 128, d = 8")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
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
            rows.append(run(inst, m, a.time_limit))
        if not inst.allreduce and inst.name.startswith("uniform"):
            print(f"  Moore/Cerf bound {moore_lower_bound(inst):.6g} s", flush=True)
        if a.json:
            Path(a.json).write_text(json.dumps(rows, indent=1))
    table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
