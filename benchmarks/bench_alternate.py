"""alloc-alternate against the heuristics it starts from, each with LP routing (a script).

Target (issue 11, item 3): n = 128, d = 8 in at most 120 s on 2 cores; on the ``coopt`` and
``mixed`` families a lower communication time than TotientPerms, TopologyFinder and
demand-greedy, each routed by the route LP with its own ring orders (``--routing lp``).

Families (built here with :func:`topoopt_milp.core.instance.make_instance` / the workload module):

* ``mixed`` -- AllReduce of 1 GB on each of the ``4`` cosets ``{s, s + 4, s + 8, ...}``
  (groups of ``n / 4``) plus dense MP: a random ``density`` fraction of all ordered pairs
  (5 %, 20 %, 35 %) with log-uniform volumes in [1 MB, 100 MB], scaled so that MP carries as
  many bytes as the AllReduce ring edges (``seed`` 0).
* ``coopt`` -- DLRM (the zoo model: 64 embedding tables, 7 + 16 dense layers) under a
  data x pipeline strategy, the kind of strategy TopoOpt's co-optimisation produces:
  the dense layers in two pipeline stages on the two cosets of size ``n / 2`` (two
  AllReduce groups), embedding tables round-robin on single servers (the embedding
  all-to-all), activations between the stages (:func:`topoopt_milp.workloads.strategy.pipeline`
  with 2 stages).

Columns: the three heuristics' ``T_comm`` with LP routing (their own rings), alloc-alternate's
``T_comm``, the ratios heuristic / alternate (> 1: alternate is better), the best start
(the heuristics' topologies with ring shares re-optimised over the TotientPerms orders),
alternate's steps / accepted steps / restarts, the time of the first start's route LP (on
alternate's clock), alternate's wall and CPU seconds, and the ideal-switch lower bound.
Every solution is re-verified by the independent checker (a rejected one is printed as an
error). Timings are noisy on a shared machine: the 1-minute load average is printed in each
row, and ``--clock cpu`` makes alternate's time limit count its own CPU seconds (single
threaded HiGHS: about the wall time of an idle machine). Usage::

    python benchmarks/bench_alternate.py [--sizes 16,32,64,128] [--degrees 4,8]
        [--families mixed,coopt] [--densities 0.05,0.2,0.35] [--time-limit 120]
        [--clock wall|cpu]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from topoopt_milp import registry
from topoopt_milp.core.check import check_solution
from topoopt_milp.core.evaluate import evaluate, ideal_switch_time
from topoopt_milp.core.instance import Instance, make_instance
from topoopt_milp.core.result import solution_dict
from topoopt_milp.workloads.strategy import pipeline
from topoopt_milp.workloads.traffic import Workload
from topoopt_milp.workloads.zoo import get_model

HEURISTICS = ("totientperms", "topologyfinder", "demand-greedy")


def mixed(n: int, d: int, density: float = 0.2, seed: int = 0, groups: int = 4) -> Instance:
    """AllReduce on ``groups`` cosets plus dense MP carrying as many bytes (docstring)."""
    rng = np.random.default_rng(seed)
    k = n // groups
    ar = [(list(range(s, n, groups)), 1e9) for s in range(groups)]
    ring_bytes = sum(2.0 * (k - 1) * b for _, b in ar)  # k ring edges of 2 (k-1)/k S each
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    m = max(1, round(density * len(pairs)))
    pick = rng.choice(len(pairs), m, replace=False)
    vols = np.exp(rng.uniform(np.log(1e6), np.log(1e8), m))
    vols *= ring_bytes / vols.sum()
    mp = [(*pairs[p], float(v)) for p, v in zip(pick, vols, strict=True)]
    return make_instance(n, d, 100.0, allreduce=ar, mp=mp,
                         name=f"mixed-n{n}-d{d}-p{density:g}-s{seed}")


def coopt(n: int, d: int) -> Instance:
    """DLRM with its dense layers in two pipeline stages (docstring)."""
    w = Workload(get_model("dlrm"), n)
    return w.instance(pipeline(w.model, n, 2), d, 100.0, name=f"coopt-dlrm-n{n}-d{d}")


def checked(inst: Instance, method: str, **knobs):
    t0 = time.perf_counter()
    res = registry.solve(inst, method, **knobs)
    wall = time.perf_counter() - t0
    problems = check_solution(inst.to_dict(), solution_dict(
        res, inst, evaluate(inst, res.topology, res.routing)))
    return res, wall, problems


def row(inst: Instance, time_limit: float, clock: str = "wall") -> dict:
    out: dict = {"instance": inst.name, "load": os.getloadavg()[0],
                 "ideal": ideal_switch_time(inst)}
    for m in HEURISTICS:
        res, wall, problems = checked(inst, f"{m}-lp")  # the heuristic's topology, LP-routed
        out[m] = res.objective if not problems else float("nan")
        out[f"{m}_s"] = wall
        if problems:
            print(f"  {m}: checker: {problems[:2]}")
    res, wall, problems = checked(inst, "alloc-alternate", time_limit=time_limit, clock=clock)
    if problems:
        print(f"  alloc-alternate: checker: {problems[:2]}")
    traj = res.info["trajectory"]
    steps = [s for s in traj if s["kind"].startswith(("alternate", "release", "polish"))]
    starts = [s for s in traj if s["kind"].startswith("start:") and s["accepted"]]
    out.update(
        alternate=res.objective if not problems else float("nan"), alternate_s=wall,
        alternate_cpu=res.info["cpu_s"],
        best_start=min(s["objective_s"] for s in starts),
        first_lp_s=starts[0]["elapsed_s"] if starts else float("nan"),
        steps=len(steps), accepted=sum(s["accepted"] for s in steps),
        restarts=sum(s["kind"] == "restart" for s in traj),
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="16,32,64,128")
    ap.add_argument("--degrees", default="4,8")
    ap.add_argument("--families", default="mixed,coopt")
    ap.add_argument("--densities", default="0.05,0.2,0.35")
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="what alloc-alternate's time limit counts (cpu: this process's CPU "
                    "seconds, for a shared machine)")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    degrees = [int(x) for x in args.degrees.split(",")]
    head = (f"{'instance':<24} {'load':>5} {'ideal':>9} {'totient':>9} {'topofind':>9} "
            f"{'greedy':>9} {'start':>9} {'altern':>9} {'tp/alt':>6} {'tf/alt':>6} "
            f"{'dg/alt':>6} {'steps':>5} {'acc':>4} {'rst':>3} {'lp1_s':>6} {'alt_s':>6} {'cpu_s':>6}")
    print(head)
    for fam in args.families.split(","):
        for n in sizes:
            for d in degrees:
                insts = ([mixed(n, d, float(p)) for p in args.densities.split(",")]
                         if fam == "mixed" else [coopt(n, d)])
                for inst in insts:
                    r = row(inst, args.time_limit, args.clock)
                    alt = r["alternate"]
                    print(f"{r['instance']:<24} {r['load']:5.2f} {r['ideal']:9.4g} "
                          f"{r['totientperms']:9.4g} {r['topologyfinder']:9.4g} "
                          f"{r['demand-greedy']:9.4g} {r['best_start']:9.4g} {alt:9.4g} "
                          f"{r['totientperms'] / alt:6.3f} {r['topologyfinder'] / alt:6.3f} "
                          f"{r['demand-greedy'] / alt:6.3f} {r['steps']:5d} {r['accepted']:4d} "
                          f"{r['restarts']:3d} {r['first_lp_s']:6.1f} {r['alternate_s']:6.1f} "
                          f"{r['alternate_cpu']:6.1f}",
                          flush=True)


if __name__ == "__main__":
    main()
