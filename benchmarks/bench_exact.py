"""Performance targets of the exact families (a script, not a test).

Issue "Exact models", part 5:

1. **select to optimality for n up to 128**: ring-jump selection, diameter objective, ``d = 8``
   (and ``d = 4``), candidate sets ``coprime`` and ``all``, both backends. Target: n = 128,
   d = 8 in under 30 s.
2. **alloc proven optimal at n = 8** (d = 4, mixed AllReduce + MP: the DLRM generator, an
   AllReduce over all servers plus the embedding all-to-all). Target: under 10 s.
3. **largest n each backend proves optimal within a budget**: alloc (DLRM traffic, d = 4) for
   ``alloc-milp`` (HiGHS, CBC) and ``alloc-cpsat``; select comm_time (all-to-all, d = 4) for
   ``select-milp`` / ``select-cpsat``; joint (one AllReduce + a few MP pairs, d = 2 / 4).
   n grows until a run does not prove optimality within ``--budget`` seconds.

Every solution is re-checked by the independent checker; a row with violations says so.

Usage::

    python benchmarks/bench_exact.py [--budget 300] [--quick] [--json out.json]

``--quick`` uses small budgets and n ranges (minutes in total). Timings depend on the machine
load; the host is shared, so report them as such.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from topoopt_milp import registry
from topoopt_milp.core.check import check_solution
from topoopt_milp.core.evaluate import evaluate
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.result import Status, finite_json, solution_dict
from topoopt_milp.workloads.generators import dlrm


def ring_traffic(n: int, d: int):
    """Cheap traffic for diameter runs (the objective ignores volumes)."""
    return make_instance(n, d, 100.0, mp=[(i, (i + 1) % n, 1e6) for i in range(n)],
                         name=f"ring-n{n}-d{d}")


def a2a(n: int, d: int):
    return make_instance(n, d, 100.0, mp=[(i, j, 1e6) for i in range(n) for j in range(n) if i != j],
                         name=f"a2a-n{n}-d{d}")


def joint_instance(n: int, d: int):
    """One AllReduce over all servers plus n/2 MP pairs i -> i + n/2 (both directions)."""
    h = n // 2
    mp = [(i, i + h, 3e7) for i in range(h)] + [(i + h, i, 3e7) for i in range(h)]
    return make_instance(n, d, 100.0, allreduce=[(range(n), 1e8)], mp=mp, name=f"joint-n{n}-d{d}")


def run(method: str, inst, **opts) -> dict:
    t0 = time.perf_counter()
    res = registry.solve(inst, method, **opts)
    wall = time.perf_counter() - t0
    metrics = None if res.topology is None else evaluate(inst, res.topology, res.routing)
    problems = check_solution(inst.to_dict(), finite_json(solution_dict(res, inst, metrics)))
    row = {
        "method": method, "instance": inst.name, "n": inst.n, "d": inst.degree,
        "opts": opts,
        "status": res.status.value, "objective": res.objective, "bound": res.bound,
        "gap": res.gap, "wall_s": round(wall, 3), "solver_s": round(res.runtime_s, 3),
        "check": "ok" if not problems else f"{len(problems)} violations",
    }
    _emit(row)
    return row


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _emit(row: dict) -> None:
    opts = ",".join(f"{k}={v}" for k, v in row["opts"].items() if k != "time_limit")
    sys.stdout.write(
        f"| {row['method']:<12} | {row['instance']:<14} | {opts:<34} | {row['status']:<9} | "
        f"{_fmt(row['objective']):<11} | {_fmt(row['bound']):<11} | {_fmt(row['gap']):<8} | "
        f"{row['wall_s']:>8.2f} | {row['check']} |\n")
    sys.stdout.flush()


def header(title: str) -> None:
    sys.stdout.write(f"\n### {title}\n\n| method | instance | options | status | objective | bound | gap "
                     "| wall [s] | check |\n|---|---|---|---|---|---|---|---|---|\n")


def select_targets(budget: float, quick: bool) -> list[dict]:
    header("1. select (diameter) to optimality")
    rows = []
    ns = (16, 64, 128) if quick else (16, 32, 64, 128)
    for d in ((8,) if quick else (4, 8)):
        for n in ns:
            for cands in ("coprime", "all"):
                for method in ("select-cpsat", "select-milp"):
                    if quick and method == "select-milp" and n == 128 and cands == "all":
                        continue  # HiGHS does not close this one within a quick budget
                    rows.append(run(method, ring_traffic(n, d), objective="diameter",
                                    candidates=cands, time_limit=budget))
    return rows


def alloc_targets(budget: float) -> list[dict]:
    header("2. alloc proven optimal at n = 8 (d = 4, DLRM: AllReduce + embedding all-to-all)")
    inst = dlrm(8, 4, seed=0)
    rows = [run("alloc-milp", inst, time_limit=budget),
            run("alloc-milp", inst, time_limit=budget, solver="cbc"),
            run("alloc-milp", inst, time_limit=budget, rings="choose"),
            run("alloc-cpsat", inst, time_limit=budget)]
    return rows


def largest_n(budget: float, quick: bool) -> list[dict]:
    header(f"3. largest n proven optimal within {budget:g} s")
    cases = [
        ("alloc-milp", lambda n: dlrm(n, 4, seed=0), {}, range(6, 33, 2)),
        ("alloc-milp", lambda n: dlrm(n, 4, seed=0), {"solver": "cbc"}, range(6, 33, 2)),
        ("alloc-cpsat", lambda n: dlrm(n, 4, seed=0), {}, range(6, 33, 2)),
        ("select-milp", lambda n: a2a(n, 4), {"candidates": "all"}, range(8, 129, 8)),
        ("select-cpsat", lambda n: a2a(n, 4), {"candidates": "all"}, range(8, 129, 8)),
        ("joint-milp", lambda n: joint_instance(n, 2 if n <= 4 else 4), {}, range(4, 11, 1)),
        ("joint-cpsat", lambda n: joint_instance(n, 2 if n <= 4 else 4), {}, range(4, 11, 1)),
    ]
    rows, summary = [], []
    for method, make, opts, ns in cases:
        best, capped = None, True
        for n in ns:
            if quick and n > 16:
                break
            row = run(method, make(n), time_limit=budget, **opts)
            rows.append(row)
            if row["status"] != Status.OPTIMAL.value or row["check"] != "ok":
                capped = False
                break
            best = n
        summary.append((method, opts, best, capped))
    sys.stdout.write("\n| method | options | largest n proven optimal |\n|---|---|---|\n")
    for method, opts, best, capped in summary:
        shown = "-" if best is None else (f">= {best} (end of range)" if capped else str(best))
        sys.stdout.write(f"| {method} | {opts or ''} | {shown} |\n")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=300.0, help="time limit per solve [s]")
    ap.add_argument("--quick", action="store_true", help="small budgets and n ranges")
    ap.add_argument("--json", default=None, help="also write all rows to this JSON file")
    ap.add_argument("--part", type=int, choices=(1, 2, 3), action="append",
                    help="run only these parts (repeatable)")
    args = ap.parse_args(argv)
    budget = min(args.budget, 30.0) if args.quick else args.budget
    parts = set(args.part or (1, 2, 3))
    rows = []
    if 1 in parts:
        rows += select_targets(budget if not args.quick else 60.0, args.quick)
    if 2 in parts:
        rows += alloc_targets(budget)
    if 3 in parts:
        rows += largest_n(budget if not args.quick else 10.0, args.quick)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
