"""Timing of the route LP (max-concurrent-flow) formulations and LP algorithms (a script).

Target (issue "Exact models", part 7): ``route-milp`` (fractional) at n = 128, d = 4, uniform
all-to-all on a seeded random regular graph, end to end (model build, HiGHS, flow
decomposition, routing, recomputed objective) in under 10 s.

Rows (all-to-all, 1 MB per ordered pair, 100 Gbps links):

* ``per-pair`` -- one flow per ``(s, t)``: run at n = 32 only; at n >= 64 it has
  ``n (n-1) |A|`` columns (over 2 million at n = 64, d = 8) and is skipped (printed as such);
* ``source`` -- source-aggregated arc LP with HiGHS ``simplex``, ``ipm`` (without crossover,
  the fastest), ``ipm+crossover`` and ``pdlp``, on a random regular graph;
* ``symmetric`` -- the circulant reduction (single-source LP, rotated), on circulant
  topologies with jumps {1, 5} (d = 4) / {1, 5, 13, 39} (d = 8), next to ``source`` / ipm on
  the same circulant where that is affordable.

Every run has a time limit (``--time-limit``, default 60 s); a run stopped by it is reported
with its status (``no_solution`` / ``feasible``), not as a time. ``time`` is the method's own
end-to-end runtime. Usage::

    python benchmarks/bench_route.py [--time-limit 60] [--quick]

``--quick`` skips simplex and PDLP at n = 128.
"""

from __future__ import annotations

import argparse
import os
import time

import networkx as nx

from topoopt_milp import registry
from topoopt_milp.core.check import check_solution
from topoopt_milp.core.evaluate import evaluate
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.result import finite_json, solution_dict
from topoopt_milp.core.topology import Topology

JUMPS = {4: (1, 5), 8: (1, 5, 13, 39)}
ALGOS = {
    "simplex": {"lp_algorithm": "simplex"},
    "ipm": {"lp_algorithm": "ipm", "crossover": "off"},  # the fastest (route-milp runs crossover)
    "ipm+crossover": {"lp_algorithm": "ipm", "crossover": "on"},
    "pdlp": {"lp_algorithm": "pdlp"},
}


def all_to_all(n: int, d: int):
    return make_instance(n, d, 100.0, mp=[(i, j, 1e6) for i in range(n) for j in range(n) if i != j],
                         name=f"a2a-n{n}-d{d}")


def random_regular(n: int, d: int, seed: int = 0) -> Topology:
    for s in range(seed, seed + 100):
        g = nx.random_regular_graph(d, n, seed=s)
        if nx.is_connected(g):
            return Topology.from_link_list(n, [[u, v, 1] for u, v in g.edges()])
    raise RuntimeError("no connected random regular graph found")


def run(label, inst, topo, form, algo, time_limit):
    t0 = time.perf_counter()
    res = registry.solve(inst.with_topology(topo.links), "route-milp", formulation=form,
                         time_limit=time_limit, **ALGOS[algo])
    wall = time.perf_counter() - t0
    ok = "-"
    if res.status.has_solution:
        metrics = evaluate(inst, res.topology, res.routing)
        problems = check_solution(inst.to_dict(), finite_json(solution_dict(res, inst, metrics)))
        ok = "ok" if not problems else "BAD"
    obj = "-" if res.objective is None else f"{res.objective:.6g}"
    print(f"{label:<24} {form:<10} {algo:<14} {res.status.value:<11} {obj:>12} "
          f"{res.runtime_s:>8.2f} {wall:>8.2f} {ok:>7}", flush=True)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--quick", action="store_true", help="skip simplex and PDLP at n = 128")
    args = ap.parse_args()
    tl = args.time_limit
    print(f"# route LP benchmark; cpus={os.cpu_count()}; time limit {tl:g} s per run; "
          "all-to-all 1 MB per pair, 100 Gbps")
    print(f"{'instance':<24} {'form':<10} {'algorithm':<14} {'status':<11} {'T_comm [s]':>12} "
          f"{'time[s]':>8} {'wall[s]':>8} {'checker':>7}")
    target = None
    n, d = 32, 4
    inst, topo = all_to_all(n, d), random_regular(n, d)
    run(f"rr n={n} d={d}", inst, topo, "per-pair", "ipm", tl)
    run(f"rr n={n} d={d}", inst, topo, "source", "ipm", tl)
    for n in (64, 128):
        for d in (4, 8):
            inst, topo = all_to_all(n, d), random_regular(n, d)
            label = f"rr n={n} d={d}"
            print(f"{label:<24} per-pair   (skipped: n > 32, {n * (n - 1) * n * d:,} flow columns)")
            for algo in ALGOS:
                if args.quick and n == 128 and algo in ("simplex", "pdlp"):
                    continue
                res = run(label, inst, topo, "source", algo, tl)
                if n == 128 and d == 4 and algo == "ipm":
                    target = res
    for n in (64, 128, 256):
        for d in (4, 8):
            inst, topo = all_to_all(n, d), Topology.circulant(n, JUMPS[d])
            label = f"circ n={n} {JUMPS[d]}"
            run(label, inst, topo, "symmetric", "ipm", tl)
            if n <= 128 and not (n == 128 and d == 8 and args.quick):
                run(label, inst, topo, "source", "ipm", tl)
    if target is not None:
        verdict = "PASS" if target.status.has_solution and target.runtime_s < 10 else "FAIL"
        print(f"# target n=128 d=4 random regular, source/ipm under 10 s: {verdict} "
              f"({target.runtime_s:.2f} s)")


if __name__ == "__main__":
    main()
