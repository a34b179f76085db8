"""Search throughput of the outer loop: MCMC steps per second for DLRM at n = 128 with
TopologyFinder rebuilds. Target (issue 4): 4000 steps in under 10 minutes on 2 cores.

    /work/venv/bin/python benchmarks/bench_cooptimize.py [--steps 4000] [--degree 8]
        [--schedule every] [--k 50]

Prints one line per run: steps, rebuilds, wall time, steps/s, the time 4000 steps take at
that rate, and the start and final iteration times.
"""

from __future__ import annotations

import argparse
import os
import time

from topoopt_milp.workloads.cooptimize import SCHEDULES, CoOptConfig, cooptimize
from topoopt_milp.workloads.strategy import data_parallel
from topoopt_milp.workloads.traffic import Workload
from topoopt_milp.workloads.zoo import get_model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--degree", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--schedule", choices=SCHEDULES, default="every")
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--method", default="topologyfinder")
    args = ap.parse_args()
    model = get_model("dlrm")
    work = Workload(model, 128)
    print(f"cpus={os.cpu_count()} load={os.getloadavg()[0]:.2f} model=dlrm n=128 B=100 "
          f"method={args.method} schedule={args.schedule} k={args.k}")
    for d in args.degree:
        cfg = CoOptConfig(method=args.method, budget=args.steps, seed=args.seed,
                          schedule=args.schedule, k=args.k)
        t0 = time.perf_counter()
        res = cooptimize(work, d, 100.0, data_parallel(model, 128), cfg)
        wall = time.perf_counter() - t0
        rate = res.steps / wall
        print(f"d={d} steps={res.steps} rebuilds={res.rebuilds} wall={wall:.1f}s "
              f"steps/s={rate:.1f} time_for_4000={4000 / rate:.0f}s target=600s "
              f"{'PASS' if 4000 / rate < 600 else 'FAIL'} "
              f"iteration {res.initial.iteration_s:.5g}s -> {res.final.iteration_s:.5g}s")


if __name__ == "__main__":
    main()
