"""Warm re-routing after one random degree-preserving edge swap (``bench_route_scale.py
--warm``): route-approx cold on the new topology against ``warm_route`` from the old
topology's result, same epsilon, in one process; CPU seconds (``time.process_time``), their
median ratio, and the certified gaps of both. Every swap is a new topology warm-started from
the same old result (a local search's candidate moves): the first warm call also builds the
warm state of that result (the patched route problem and its ``WarmStart``), which later
calls reuse; its time is a column of its own. Every warm result (and every cold one) is
re-verified by the independent checker (``pipeline.certify_solution``, untimed); the table
counts the rejected ones. ``--phases`` prints the warm runs' median time per phase (from the
result's message)."""

from __future__ import annotations

import glob
import os
import statistics
import time

import networkx as nx
import numpy as np


def edge_swap(L: np.ndarray, rng) -> np.ndarray:
    """(a, b), (c, d) -> (a, c), (b, d), keeping the graph simple and connected."""
    edges = [(int(a), int(b)) for a, b in zip(*np.nonzero(np.triu(L)), strict=True)]
    while True:
        (a, b), (c, d) = (edges[i] for i in rng.choice(len(edges), 2, replace=False))
        if len({a, b, c, d}) < 4 or L[a, c] or L[b, d]:
            continue
        L2 = L.copy()
        L2[a, b] = L2[b, a] = L2[c, d] = L2[d, c] = 0
        L2[a, c] = L2[c, a] = L2[b, d] = L2[d, b] = 1
        if nx.is_connected(nx.from_numpy_array(L2)):
            return L2


def instances(traffic: str, n: int, d: int):
    from topoopt_milp.core.instance import Instance, make_instance

    # traffic: "a2a" (all-to-all 1 MB), or "coopt" / "coopt:K" (the first K coopt instances)
    if traffic == "a2a":
        yield "a2a", make_instance(n, d, 100.0, mp=[(i, j, 1e6) for i in range(n)
                                                    for j in range(n) if i != j])
        return
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "instances", "coopt")
    for path in sorted(glob.glob(os.path.join(root, f"*-n{n}-d{d}.json")))[: int(traffic[6:] or 3)]:
        yield os.path.basename(path)[:-5], Instance.load(path)


def phases(message: str) -> dict[str, float]:
    """The ``times [s]: name value, ...`` part of a route-approx message."""
    part = message.split("times [s]: ")[1]
    out = {}
    for item in part.split(", "):
        name, _, value = item.rpartition(" ")
        if value.replace(".", "", 1).isdigit():
            out[name] = float(value)
    return out


def warm_table(args) -> None:
    from bench_route_scale import topology

    from topoopt_milp import registry
    from topoopt_milp.methods.route_approx import warm_route
    from topoopt_milp.pipeline import certify_solution

    load = os.getloadavg()
    print(f"# warm re-routing; load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; epsilon "
          f"{args.epsilon:g}; {args.swaps} swaps each; 2 cores, 24 GiB, shared")
    print("| topology | n | traffic | cold cpu median [s] | warm cpu median [s] | cold/warm "
          "(median of ratios) | first warm call [s] | cold gap max | warm gap max | warm "
          "rounds median | rejected by checker (cold, warm) | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    all_phases = []
    for kind in (k for k in args.topologies.split(",") if k.startswith("rr")):
        d = int(kind[-1])
        for n in (int(x) for x in args.sizes.split(",")):
            for traffic in args.warm.split(","):
                for name, inst in instances(traffic, n, d):
                    L = topology(kind, n).links
                    old = registry.solve(inst.with_topology(L), "route-approx",
                                         epsilon=args.epsilon)
                    rng = np.random.default_rng(0)
                    rows, bad = [], [0, 0]
                    for _ in range(args.swaps):
                        L2 = edge_swap(L, rng)
                        c = time.process_time()
                        cold = registry.solve(inst.with_topology(L2), "route-approx",
                                              epsilon=args.epsilon)
                        cc = time.process_time() - c
                        c = time.process_time()
                        warm = warm_route(inst, L2, old, epsilon=args.epsilon)
                        cw = time.process_time() - c
                        rounds = int(warm.message.split(" after ")[1].split()[0])
                        rows.append((cc, cw, cold.gap, warm.gap, rounds))
                        inst2 = inst.with_topology(L2)
                        bad[0] += bool(certify_solution(inst2, cold).violations)
                        bad[1] += bool(certify_solution(inst2, warm).violations)
                        all_phases.append((f"{kind} {name}", phases(warm.message)))
                    cc, cw, gc, gw, rd = zip(*rows, strict=True)
                    print(f"| {kind} | {n} | {name} | {statistics.median(cc):.2f} | "
                          f"{statistics.median(cw):.2f} | "
                          f"{statistics.median(a / b for a, b in zip(cc, cw, strict=True)):.2f} | "
                          f"{cw[0]:.2f} | {max(gc):.4f} | {max(gw):.4f} | "
                          f"{statistics.median(rd):g} | {bad[0]}, {bad[1]} | "
                          f"{os.getloadavg()[0]:.1f} |", flush=True)
    if getattr(args, "phases", False) and all_phases:
        names = sorted({k for _, p in all_phases for k in p})
        print("\n| case | " + " | ".join(names) + " |")
        print("|---|" + "---|" * len(names))
        for case in dict.fromkeys(c for c, _ in all_phases):
            ps = [p for c, p in all_phases if c == case]
            print(f"| {case} | " + " | ".join(
                f"{statistics.median(p.get(k, 0.0) for p in ps):.3f}" for k in names) + " |")


def reroute_table(args) -> None:
    """alloc-search's evaluation of a move: ``reroute`` (the exact route LP, rings = given)
    against ``reroute_approx`` (route-approx, warm-started from the current solution), on
    the same random swaps, CPU seconds, and the objectives' ratio (approx / exact)."""
    from bench_route_scale import topology

    from topoopt_milp.core.topology import Topology
    from topoopt_milp.methods.alloc_search.reroute import lp_options, reroute, reroute_approx
    from topoopt_milp.methods.route_approx.method import SPEC

    load = os.getloadavg()
    print(f"# alloc-search evaluation of one swap; load {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f}; {args.swaps} swaps each; rings = given")
    print("| topology | n | traffic | exact cpu median [s] | approx cpu median [s] | "
          "exact/approx (median of ratios) | approx/exact objective max | load |")
    print("|---|---|---|---|---|---|---|---|")
    opts = lp_options(SPEC.options({}))
    for kind in (k for k in args.topologies.split(",") if k.startswith("rr")):
        d = int(kind[-1])
        for n in (int(x) for x in args.sizes.split(",")):
            for traffic in args.warm.split(","):
                for name, inst in instances(traffic, n, d):
                    L = topology(kind, n).links
                    cur, _ = reroute_approx(inst, Topology(L), opts)
                    rng = np.random.default_rng(0)
                    rows = []
                    for _ in range(args.swaps):
                        L2 = edge_swap(L, rng)
                        c = time.process_time()
                        ex, why = reroute(inst, Topology(L2), "given", opts)
                        ce = time.process_time() - c
                        c = time.process_time()
                        ap, why2 = reroute_approx(inst, Topology(L2), opts, near=cur)
                        ca = time.process_time() - c
                        if ex is None or ap is None:
                            print(f"# {name}: {why or why2}")
                            continue
                        rows.append((ce, ca, ap.objective_s / ex.objective_s))
                    if not rows:
                        continue
                    ce, ca, ratio = zip(*rows, strict=True)
                    print(f"| {kind} | {n} | {name} | {statistics.median(ce):.2f} | "
                          f"{statistics.median(ca):.2f} | "
                          f"{statistics.median(a / b for a, b in zip(ce, ca, strict=True)):.2f}"
                          f" | {max(ratio):.4f} | {os.getloadavg()[0]:.1f} |", flush=True)


def main() -> None:
    import argparse
    import sys

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--warm", default="a2a,coopt:2", metavar="TRAFFIC,...",
                    help="a2a and/or coopt[:K] (the first K coopt instances of each size)")
    ap.add_argument("--sizes", default="128")
    ap.add_argument("--topologies", default="rr4,rr8")
    ap.add_argument("--epsilon", type=float, default=0.01)
    ap.add_argument("--swaps", type=int, default=5)
    ap.add_argument("--phases", action="store_true", help="also the warm runs' phase times")
    ap.add_argument("--reroute", action="store_true",
                    help="instead: alloc-search's exact reroute against reroute_approx")
    args = ap.parse_args()
    (reroute_table if args.reroute else warm_table)(args)


if __name__ == "__main__":
    main()
