"""alloc-benders against alloc-milp, and lower bounds at n = 128 (issue 11, items 4 and 5).

Parts (``--part``, repeatable; all by default):

1. **targets**: the mixed n = 12, d = 4 instance (two coset groups {0,2,..,10}, {1,3,..,11}
   plus dense random MP carrying 35% of the bytes) with a 120 s budget, and the n = 16, d = 4
   instance (four coset groups of 4 plus 30% MP) with 600 s: alloc-milp and alloc-benders in
   the same run. Targets: n = 12 proven optimal in <= 120 s, n = 16 within 5% in <= 600 s.
2. **ladder**: the largest n (even, two coset groups, 35% MP, d = 4) each method proves
   optimal within 60 s and within 600 s (``--ladder-budgets``).
3. **scale**: n = 128, d in {4, 8}: mixed traffic (eight coset groups of 16, 30% MP) and the
   co-optimized DLRM / CANDLE strategies of ``results/workloads`` (cooptimize with
   TopologyFinder rebuilds, 2000 steps, seed 0; cached as JSON under ``--cache``). For each:
   every bound of :mod:`topoopt_milp.methods.bounds.counting`, the alloc-benders bound and incumbent after
   ``--scale-budget`` seconds, the best heuristic objective (TopologyFinder / TotientPerms with
   LP routing, TopologyFinder's own routing) and the certified gap
   ``(best objective - best valid bound) / best objective``.

The instances are built here (``mixed_instance``) until the ``mixed`` generator lands.
Every solution is re-checked by the independent checker. Usage::

    python benchmarks/bench_benders.py [--part 1 --part 2 --part 3] [--quick] [--json out.json]

``--quick`` divides every budget by 10 (a smoke run). Timings depend on the machine load
(printed with every table); the host is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from topoopt_milp import registry
from topoopt_milp.core.check import check_solution
from topoopt_milp.core.evaluate import evaluate
from topoopt_milp.core.instance import Instance
from topoopt_milp.core.result import Status, finite_json, solution_dict
from topoopt_milp.methods.bounds import counting as bounds
from topoopt_milp.workloads import generators


def mixed_instance(n: int, d: int, groups: int, mp_frac: float, seed: int = 0) -> Instance:
    """The library's ``mixed`` family: ``groups`` coset AllReduce groups plus dense MP at
    ``mp_frac`` of the bytes (``generate mixed``; n = 12 / 16 are the issue's targets)."""
    return generators.mixed(n, d, 100.0, groups=groups, mp_share=mp_frac, seed=seed)


_results: dict = {}  # the last SolveResult per (method, instance, routing): warm starts


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus"


def run(method: str, inst: Instance, **opts) -> dict:
    t0 = time.perf_counter()
    res = registry.solve(inst, method, **opts)
    _results[(method, inst.name, opts.get("routing"))] = res
    wall = time.perf_counter() - t0
    problems = [] if res.topology is None else check_solution(
        inst.to_dict(), finite_json(solution_dict(res, inst, evaluate(inst, res.topology,
                                                                      res.routing))))
    return {"method": method, "instance": inst.name, "n": inst.n, "d": inst.degree,
            "status": res.status.value, "objective": res.objective, "bound": res.bound,
            "gap": res.gap, "wall_s": round(wall, 1), "message": res.message,
            "check": "ok" if not problems else f"{len(problems)} violations"}


def _f(v, scale=1.0, fmt=".5g"):
    return "-" if v is None else format(v * scale, fmt)


def solve_table(rows: list[dict], title: str) -> None:
    print(f"\n### {title} ({load()})\n")
    print("| method | instance | status | T_comm [ms] | bound [ms] | gap | wall [s] | check |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        gap = "-" if r["gap"] is None else f"{100 * r['gap']:.2f}%"
        print(f"| {r['method']} | {r['instance']} | {r['status']} | {_f(r['objective'], 1e3)} | "
              f"{_f(r['bound'], 1e3)} | {gap} | {r['wall_s']} | {r['check']} |", flush=True)


def targets(scale: float, threads: int) -> list[dict]:
    rows, verdicts = [], []
    for inst, budget, goal in ((mixed_instance(12, 4, 2, 0.35), 120.0, 0.0),
                               (mixed_instance(16, 4, 4, 0.30), 600.0, 0.05)):
        b = budget * scale
        pair = [run(m, inst, time_limit=b, threads=threads, rings="choose")
                for m in ("alloc-milp", "alloc-benders")]
        rows += pair
        solve_table(pair, f"1. {inst.name}, budget {b:g} s")
        ben = pair[1]
        met = (ben["status"] == Status.OPTIMAL.value) if goal == 0 else (
            ben["gap"] is not None and ben["gap"] <= goal)
        verdicts.append(f"{inst.name}: target {'optimal' if goal == 0 else f'gap <= {goal:.0%}'} "
                        f"in {b:g} s -> {'MET' if met else 'NOT MET'} (alloc-benders "
                        f"{ben['status']}, gap {_f(ben['gap'], 100, '.2f')}%)")
    print("\n" + "\n".join(f"* {v}" for v in verdicts))
    return rows


def ladder(budgets: list[float], scale: float, threads: int, n_min: int = 6,
           n_max: int = 24) -> list[dict]:
    rows, summary = [], []
    for budget in budgets:
        b = budget * scale
        for method in ("alloc-milp", "alloc-benders"):
            best = None
            for n in range(n_min, n_max + 1, 2):
                r = run(method, mixed_instance(n, 4, 2, 0.35), time_limit=b, threads=threads,
                        rings="choose")
                rows.append(r)
                solve_table([r], f"2. ladder {method}, {b:g} s")
                if r["status"] != Status.OPTIMAL.value or r["check"] != "ok":
                    break
                best = n
            summary.append((method, b, best))
    print(f"\n### 2. largest n proven optimal (mixed, d = 4, two coset groups, 35% MP; {load()})\n")
    print(f"| method | budget [s] | largest n (ladder from n = {n_min}) |\n|---|---|---|")
    for method, b, best in summary:
        print(f"| {method} | {b:g} | {f'< {n_min}' if best is None else best} |")
    return rows


def coopt_instance(model: str, d: int, cache: Path) -> Instance:
    """The library's co-optimized traffic at n = 128 (``instances/coopt``)."""
    del cache  # the library holds the files now
    return Instance.load(Path(__file__).resolve().parents[1] / "instances" / "coopt"
                         / f"{model}-n128-d{d}.json")


def scale_part(budget: float, cache: Path, threads: int) -> list[dict]:
    insts = [mixed_instance(128, d, 8, 0.30) for d in (4, 8)]
    insts += [coopt_instance(m, d, cache) for m in ("dlrm", "candle") for d in (4, 8)]
    rows = []
    print(f"\n### 3. n = 128: bounds, incumbents and certified gaps ({load()})\n")
    print("| instance | d | ideal | Moore | port-hop any / totient | cut any / totient | "
          "benders bound (s) | best bound (scope) | best objective (method) | certified gap |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for inst in insts:
        t0 = time.perf_counter()
        b = bounds.all_bounds(inst)
        t_bounds = time.perf_counter() - t0
        heur = {}
        for name, routing in (("topologyfinder", None), ("topologyfinder", "lp"),
                              ("totientperms", "lp")):
            try:
                heur[f"{name}/{routing or 'own'}"] = run(name, inst, routing=routing)
            except Exception as exc:  # report, do not lose the row
                print(f"<!-- {name} {routing}: {exc} -->")
        # the heuristics just run seed alloc-benders (instead of running them again inside it)
        warm = min((_results[(k.split("/")[0], inst.name, None if k.endswith("/own") else "lp")]
                    for k, r in heur.items() if r["objective"] is not None),
                   key=lambda res: res.objective)
        ben = run("alloc-benders", inst, time_limit=budget, threads=threads, warm_start=warm,
                  auto_warm_start=False)
        heur["alloc-benders"] = ben
        cands = {k: r["objective"] for k, r in heur.items()
                 if r["objective"] is not None and r["check"] == "ok"}
        if ben["bound"] is not None:
            b["benders"] = ben["bound"]
        best_name = max(b, key=b.get)
        best_obj_name = min(cands, key=cands.get)
        best_obj = cands[best_obj_name]
        gap = (best_obj - b[best_name]) / best_obj
        scope = "any" if best_name in ("ideal_switch", "moore") or best_name.endswith("_any") \
            else "totient"
        row = {"instance": inst.name, "d": inst.degree, "bounds_s": b, "bounds_time_s": t_bounds,
               "objectives_s": cands, "best_bound": best_name, "best_bound_scope": scope,
               "best_objective": best_obj_name, "certified_gap": gap, "benders": ben}
        rows.append(row)
        ms = {k: v * 1e3 for k, v in b.items()}
        print(f"| {inst.name} | {inst.degree} | {ms['ideal_switch']:.4g} | {ms['moore']:.4g} | "
              f"{ms['port_hop_any']:.4g} / {ms['port_hop_totient']:.4g} | "
              f"{ms['cut_any']:.4g} / {ms['cut_totient']:.4g} | "
              f"{_f(ben['bound'], 1e3, '.4g')} ({ben['wall_s']}) | {ms[best_name]:.4g} {best_name} "
              f"({scope}) | {best_obj * 1e3:.4g} ({best_obj_name}) | {100 * gap:.1f}% |",
              flush=True)
    gaps = sorted(r["certified_gap"] for r in rows)
    print(f"\ncertified gaps: min {100 * gaps[0]:.1f}%, median {100 * gaps[len(gaps) // 2]:.1f}%, "
          f"max {100 * gaps[-1]:.1f}%; <= 5% on {sum(g <= 0.05 for g in gaps)} of {len(gaps)}. "
          "Times in ms; bounds in the TotientPerms scope cover the heuristics above (their rings "
          "are TotientPerms orders), not the expander's tours.")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", type=int, choices=(1, 2, 3), action="append")
    ap.add_argument("--quick", action="store_true", help="every budget divided by 10")
    ap.add_argument("--ladder-budgets", type=float, nargs="+", default=[60.0, 600.0])
    ap.add_argument("--ladder-from", type=int, default=6, help="smallest n of the ladder")
    ap.add_argument("--scale-budget", type=float, default=600.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cache", default="benchmarks/.cache", help="co-optimized instances")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    scale = 0.1 if args.quick else 1.0
    parts = set(args.part or (1, 2, 3))
    rows: list = []
    if 1 in parts:
        rows += targets(scale, args.threads)
    if 2 in parts:
        rows += ladder(args.ladder_budgets, scale, args.threads, args.ladder_from)
    if 3 in parts:
        rows += scale_part(args.scale_budget * scale, Path(args.cache), args.threads)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
