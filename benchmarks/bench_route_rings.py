"""Free ring shares (issue 18, item 4): route-approx with candidate ring orders against the
exact ring LP (``ring_lp.route_rings``) on the same topology and candidates, cold and warm
after one random degree-preserving swap.

Per instance and topology heuristic (TotientPerms, TopologyFinder): candidates are
alloc-search's (``tours.tour_candidates``: the TotientPerms orders plus two tours of the
topology and their reverses). Columns: CPU seconds (``time.process_time``, one process, HiGHS
single-threaded) of the exact LP (``route_rings`` with the search's LP options: interior point
without crossover at tolerance 1e-6, no hop penalty, then its path decomposition) and of
``route_with_rings`` (route-approx, epsilon 1%, certified bound), their ratio, the certified
gap and how far the objective is above the exact LP's optimum; then ``--swaps`` random
swaps of the topology, each with the tours of the new topology as candidates: the exact LP
cold on the new topology against route-approx warm-started from the old topology's result
(median CPU, median of the ratios, largest gap). Every route-approx result is re-verified
by the independent checker (``pipeline.certify_solution``, its CPU a column of its own) and
its rings checked to be among the candidates; the 1-minute load average is recorded per
row.

Usage::

    python benchmarks/bench_route_rings.py [--instances mixed-n128-d4-g4-mp05,bert-n128-d4]
        [--topologies totientperms,topologyfinder] [--swaps 3] [--epsilon 0.01]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import networkx as nx
import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "instances")
DEFAULT = ("mixed-n128-d4-g4-mp05,bert-n128-d4,candle-n128-d4,dlrm-n128-d4,gpt3-13b-n128-d4,"
           "ncf-n128-d4")


def load(name: str):
    from topoopt_milp.core.instance import Instance

    family = "mixed" if name.startswith("mixed") else "coopt"
    return Instance.load(os.path.join(ROOT, family, f"{name}.json"))


def swap(L: np.ndarray, degree: int, rng) -> np.ndarray:
    """One random admissible degree-preserving 2-swap (alloc-search's), connected."""
    from topoopt_milp.methods.alloc_search.search import random_swaps

    while True:
        L2 = random_swaps(L, degree, 1, rng)
        if not np.array_equal(L2, L) and nx.is_connected(nx.from_numpy_array(L2 > 0)):
            return L2


def cpu(fn, *args, **kw):
    t = time.process_time()
    out = fn(*args, **kw)
    return out, time.process_time() - t


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", default=DEFAULT)
    ap.add_argument("--topologies", default="totientperms,topologyfinder")
    ap.add_argument("--swaps", type=int, default=3)
    ap.add_argument("--epsilon", type=float, default=0.01)
    args = ap.parse_args(argv)

    from topoopt_milp import registry
    from topoopt_milp.core.topology import Topology
    from topoopt_milp.methods.alloc_search.reroute import lp_options
    from topoopt_milp.methods.alloc_search.tours import tour_candidates
    from topoopt_milp.methods.formulations.ring_lp import in_ring_space, route_rings
    from topoopt_milp.methods.route_approx.choice import route_with_rings
    from topoopt_milp.methods.route_approx.method import SPEC
    from topoopt_milp.pipeline import certify_solution

    lp = lp_options(registry.get("best-start").options({"threads": 1}))
    ap_opts = SPEC.options({"epsilon": args.epsilon})
    la = os.getloadavg()
    print(f"# free ring shares, route-approx vs the exact ring LP; load {la[0]:.2f} {la[1]:.2f} "
          f"{la[2]:.2f}; epsilon {args.epsilon:g}; {args.swaps} swaps; 2 cores, shared; CPU s")
    print("| instance | topology | cands | exact cpu | approx cpu | exact/approx | gap | vs opt "
          "| check cpu | warm: exact cpu | approx cpu | exact/approx (median) | gap max "
          "| vs opt max | rounds | rejected | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.instances.split(","):
        inst = load(name)
        for meth in args.topologies.split(","):
            L = np.asarray(registry.solve(inst, meth).topology.links)
            cands = tour_candidates(inst, L, None)
            ex, ce = cpu(route_rings, inst, Topology(L), cands, lp)
            old, ca = cpu(route_with_rings, inst, L, cands, ap_opts)
            chk, cc = cpu(certify_solution, inst.with_topology(L), old)
            bad = int(bool(chk.violations) or not in_ring_space(inst, old.routing.rings, cands))
            rng = np.random.default_rng(0)
            rows = []
            for _ in range(args.swaps):
                L2 = swap(L, inst.degree, rng)
                c2 = tour_candidates(inst, L2, None)
                ex2, ce2 = cpu(route_rings, inst, Topology(L2), c2, lp)
                w, cw = cpu(route_with_rings, inst, L2, c2, ap_opts, previous=old)
                ok = not certify_solution(inst.with_topology(L2), w).violations
                bad += int(not ok or not in_ring_space(inst, w.routing.rings, c2))
                rounds = int(w.message.split(" after ")[1].split()[0])
                rows.append((ce2, cw, w.gap, w.objective / ex2.lp_s - 1, rounds))
            e2, w2, g2, v2, r2 = zip(*rows, strict=True) if rows else ((np.nan,),) * 5
            print(f"| {name} | {meth} | {sum(map(len, cands.values()))} | {ce:.2f} | {ca:.2f} | "
                  f"{ce / ca:.2f} | {old.gap:.4f} | {old.objective / ex.lp_s - 1:.4f} | "
                  f"{cc:.2f} | {statistics.median(e2):.2f} | {statistics.median(w2):.2f} | "
                  f"{statistics.median(a / b for a, b in zip(e2, w2, strict=True)):.2f} | "
                  f"{max(g2):.4f} | {max(v2):.4f} | {statistics.median(r2):g} | {bad} | "
                  f"{os.getloadavg()[0]:.1f} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
