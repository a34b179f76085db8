"""Timing of the heuristic performance targets (a script, not a test).

Targets (issue "Core toolkit", part 5):

1. TopologyFinder, n = 1024, d = 8, split all_ar, AllReduce over all servers plus 10 000
   random MP pairs: method runtime (topology + routing) under 2 s.
2. TopologyFinder, n = 128, d = 8, split proportional, AllReduce over all servers plus dense
   MP (every ordered pair), so the Blossom rounds run: under 5 s (default sparsified rounds;
   a second row times the all-pairs rounds for comparison).
3. ``evaluate`` at n = 128, d = 8, uniform all-to-all on the TotientPerms topology with its
   coin-change routing (built first; only ``evaluate()`` is timed).

Each case is run ``--repeat`` times (default 3) with ``time.perf_counter``; the table reports
min and median. Usage: ``python benchmarks/bench_heuristics.py [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from topoopt_milp import registry
from topoopt_milp.core.evaluate import evaluate
from topoopt_milp.core.instance import make_instance
from topoopt_milp.methods.heuristics import topology_finder


def case_tf_large() -> tuple:
    n, d = 1024, 8
    rng = np.random.default_rng(0)
    pairs: set[tuple[int, int]] = set()
    while len(pairs) < 10_000:
        a, b = (int(x) for x in rng.integers(n, size=2))
        if a != b:
            pairs.add((a, b))
    mp = [(a, b, float(rng.uniform(1e6, 1e8))) for a, b in sorted(pairs)]
    inst = make_instance(n, d, 100.0, allreduce=[(range(n), 4e9)], mp=mp, name="tf-n1024")
    return inst, registry.get("topologyfinder").options({"split": "all_ar"})


def case_tf_dense() -> tuple:
    n, d = 128, 8
    rng = np.random.default_rng(1)
    mp = [(i, j, float(rng.uniform(1e6, 1e8))) for i in range(n) for j in range(n) if i != j]
    inst = make_instance(n, d, 100.0, allreduce=[(range(n), 1e9)], mp=mp, name="tf-n128-dense")
    return inst, registry.get("topologyfinder").options({"split": "proportional"})


def time_method(solver, inst, options, repeat):
    runtimes, walls, res = [], [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = solver(inst, options)
        walls.append(time.perf_counter() - t0)
        runtimes.append(res.runtime_s)
    return runtimes, walls, res


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-all-pairs", action="store_true",
                        help="skip the slow all-pairs Blossom comparison row")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
    rows = []

    inst, opts = case_tf_large()
    rt, wall, res = time_method(topology_finder.solve, inst, opts, args.repeat)
    rows.append(("TopologyFinder n=1024 d=8 all_ar, AR + 10k MP", rt, wall, 2.0, res.message))

    inst, opts = case_tf_dense()
    rt, wall, res = time_method(topology_finder.solve, inst, opts, args.repeat)
    rows.append(("TopologyFinder n=128 d=8 proportional, AR + dense MP", rt, wall, 5.0,
                 f"{res.message} T={res.objective:.4g}s"))
    if not args.skip_all_pairs:
        opts = opts.with_(method=opts.method.with_(matching_top_k="all"))
        rt, wall, res = time_method(topology_finder.solve, inst, opts, args.repeat)
        rows.append(("  same, matching_top_k='all' (for comparison)", rt, wall, None,
                     f"{res.message} T={res.objective:.4g}s"))

    n = 128
    inst = make_instance(n, 8, 100.0, mp=[(i, j, 1e7) for i in range(n) for j in range(n) if i != j])
    res = registry.solve(inst, "totientperms")
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        evaluate(inst, res.topology, res.routing)
        times.append(time.perf_counter() - t0)
    rows.append(("evaluate() n=128 d=8 all-to-all (coin-change)", times, times, None,
                 f"{len(res.routing.commodities)} commodities"))

    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(f"{'case':<52} {'min [s]':>8} {'median [s]':>10} {'wall med':>9} {'target':>7}  note")
    for name, rt, wall, target, note in rows:
        tgt = "-" if target is None else f"< {target:g}"
        ok = "" if target is None else (" ok" if min(rt) < target else " MISSED")
        print(f"{name:<52} {min(rt):>8.3f} {statistics.median(rt):>10.3f} "
              f"{statistics.median(wall):>9.3f} {tgt:>7}{ok}  {note}")


if __name__ == "__main__":
    main()
