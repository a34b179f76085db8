"""Warm re-routing after one random degree-preserving edge swap (``bench_route_scale.py
--warm``): route-approx cold on the new topology against ``warm_route`` from the old
topology's result, same epsilon, in one process; CPU seconds (``time.process_time``), their
median ratio, and the certified gaps of both."""

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


def warm_table(args) -> None:
    from bench_route_scale import topology

    from topoopt_milp import registry
    from topoopt_milp.methods.route_approx import warm_route

    load = os.getloadavg()
    print(f"# warm re-routing; load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; epsilon "
          f"{args.epsilon:g}; {args.swaps} swaps each; 2 cores, 24 GiB, shared")
    print("| topology | n | traffic | cold cpu median [s] | warm cpu median [s] | cold/warm "
          "(median of ratios) | cold gap max | warm gap max | warm rounds median | load |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kind in (k for k in args.topologies.split(",") if k.startswith("rr")):
        d = int(kind[-1])
        for n in (int(x) for x in args.sizes.split(",")):
            for traffic in args.warm.split(","):
                for name, inst in instances(traffic, n, d):
                    L = topology(kind, n).links
                    old = registry.solve(inst.with_topology(L), "route-approx",
                                         epsilon=args.epsilon)
                    rng = np.random.default_rng(0)
                    rows = []
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
                    cc, cw, gc, gw, rd = zip(*rows, strict=True)
                    print(f"| {kind} | {n} | {name} | {statistics.median(cc):.2f} | "
                          f"{statistics.median(cw):.2f} | "
                          f"{statistics.median(a / b for a, b in zip(cc, cw, strict=True)):.2f} | "
                          f"{max(gc):.4f} | {max(gw):.4f} | {statistics.median(rd):g} | "
                          f"{os.getloadavg()[0]:.1f} |", flush=True)
