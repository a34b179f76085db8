"""Routing at scale: route-approx against route-milp and a scipy ``linprog`` peer (a script).

Targets (issue 18, 2 cores): random regular, all-to-all, within 1% certified: n = 256, d = 4
>= 5x faster than route-milp and <= 10 CPU s; n = 1024, d = 8 <= 120 CPU s and <= 4 GB; warm
re-routing after one edge swap (``--warm``, :mod:`bench_route_warm`) >= 10x below cold at
n = 128; on circulants the crossover of route-milp's symmetric reduction.

Every run is a fresh subprocess (so ``ru_maxrss`` is that run's peak memory) with a wall-clock
cap (``--cap``, default 300 s; a run past it is reported as ``timeout``). Rows: topology x n;
columns per method: wall and CPU time (CPU seconds are the figure to compare on a
shared machine), peak RSS, and for route-approx its certified gap and its excess over
the exact optimum when one finished. Methods:

* ``approx`` -- ``route-approx`` end to end (``registry.solve``: model, column generation,
  routing assembly, recomputed objective); ``core`` is the column generation alone;
* ``trees`` -- the same with per-source tree columns (``columns=trees``);
* ``milp`` -- ``route-milp`` (fractional, its defaults but ``crossover = off``: its fastest
  setting, which was its default until route-milp began returning vertex routings, so the
  ratios stay comparable with earlier runs);
* ``peer`` -- a plain ``scipy.optimize.linprog`` (HiGHS IPM) source-aggregated arc LP written
  below: objective only, no routing.

All-to-all 1 MB per ordered pair, 100 Gbps links. Usage::

    python benchmarks/bench_route_scale.py [--sizes 64,128,256,512,1024] [--topologies rr4,rr8,circ4]
        [--methods approx,trees,milp,peer] [--cap 300] [--epsilon 0.01]
    python benchmarks/bench_route_scale.py --warm a2a,coopt:2 --sizes 128 --topologies rr4,rr8
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import networkx as nx
import numpy as np

JUMPS = {4: (1, 5), 8: (1, 5, 13, 39)}


def topology(kind: str, n: int, seed: int = 0):
    """``circD`` (circulant) or ``rrD``: the first connected networkx random D-regular graph
    from ``seed`` on (seed 0: the bench graph)."""
    from topoopt_milp.core.topology import Topology

    d = int(kind[-1])
    if kind.startswith("circ"):
        return Topology.circulant(n, JUMPS[d])
    for s in range(seed, seed + 100):
        g = nx.random_regular_graph(d, n, seed=s)
        if nx.is_connected(g):
            return Topology.from_link_list(n, [[u, v, 1] for u, v in g.edges()])
    raise RuntimeError("no connected random regular graph")


def peer_linprog(L: np.ndarray, vol: float, gbps: float, time_limit: float) -> float:
    """Max-concurrent-flow by a textbook source-aggregated arc LP in scipy (seconds)."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix, hstack, vstack

    n = len(L)
    u, v = np.nonzero(L)
    m = len(u)
    # conservation for every source s and node w != s: in - out = demand into w
    S = np.repeat(np.arange(n), m)
    a = np.tile(np.arange(m), n)
    col = S * m + a
    rows = np.concatenate([S * n + v[a], S * n + u[a]])
    vals = np.concatenate([np.ones(n * m), -np.ones(n * m)])
    A = coo_matrix((vals, (rows, np.concatenate([col, col]))), shape=(n * n, n * m)).tocsr()
    keep = np.flatnonzero(np.arange(n * n) % (n + 1) != 0)  # drop each source's own row
    A_eq = hstack([A[keep], coo_matrix((len(keep), 1))]).tocsr()
    b_eq = np.full(len(keep), vol)
    # capacity: sum_s f[s, a] - U * L_a * rate <= 0
    C = coo_matrix((np.ones(n * m), (a, col)), shape=(m, n * m))
    rate = gbps * 1.25e8
    A_ub = hstack([C, coo_matrix(-L[u, v].reshape(-1, 1) * rate)]).tocsr()
    c = np.zeros(n * m + 1)
    c[-1] = 1.0
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(m), A_eq=vstack([A_eq]), b_eq=b_eq,
                  bounds=(0, None), method="highs-ipm", options={"time_limit": time_limit})
    if res.status != 0:
        raise RuntimeError(res.message)
    return float(res.fun)


def child(method: str, kind: str, n: int, eps: float, cap: float, seed: int = 0) -> dict:
    from topoopt_milp import registry
    from topoopt_milp.core.instance import make_instance
    from topoopt_milp.methods.route_approx import method as route_approx  # noqa: F401 - imports untimed

    d = int(kind[-1])
    topo = topology(kind, n, seed)
    inst = make_instance(n, d, 100.0, mp=[(i, j, 1e6) for i in range(n) for j in range(n) if i != j])
    t0, c0 = time.perf_counter(), time.process_time()
    out: dict = {}
    if method == "peer":
        out["objective"] = peer_linprog(topo.links, 1e6, 100.0, cap)
    else:
        name = "route-milp" if method == "milp" else "route-approx"
        extra = {"crossover": "off"} if method == "milp" else {"epsilon": eps}
        if method == "trees":
            extra["columns"] = "trees"
        res = registry.solve(inst.with_topology(topo.links), name, time_limit=cap, **extra)
        out.update(status=res.status.value, objective=res.objective, bound=res.bound,
                   message=res.message)
    out["time"] = time.perf_counter() - t0
    out["cpu"] = time.process_time() - c0  # CPU seconds: robust to a loaded machine
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def run(method, kind, n, eps, cap, seed=0) -> dict:
    cmd = [sys.executable, __file__, "--child", method, kind, str(n), str(eps), str(cap),
           str(seed)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=cap + 60)
    except subprocess.TimeoutExpired:
        return {"status": "timeout"}
    if p.returncode != 0:
        return {"status": "error", "message": p.stderr.strip().splitlines()[-1:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def core_time(msg: str) -> float | None:
    for part in msg.split(", "):
        if part.startswith("total "):
            return float(part.split()[1])
    return None


def fmt(x, spec=".2f"):
    return "-" if x is None else format(x, spec)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        method, kind, n, eps, cap, seed = sys.argv[2:8]
        print(json.dumps(child(method, kind, int(n), float(eps), float(cap), int(seed))))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="64,128,256,512,1024")
    ap.add_argument("--topologies", default="rr4,rr8,circ4")
    ap.add_argument("--methods", default="approx,milp,peer")
    ap.add_argument("--cap", type=float, default=300.0, help="wall-clock cap per run [s]")
    ap.add_argument("--epsilon", type=float, default=0.01)
    ap.add_argument("--warm", default=None, metavar="TRAFFIC,...",
                    help="instead: warm re-routing after random edge swaps at --sizes and "
                         "--topologies rr4,rr8 (traffic: a2a or instance JSON paths)")
    ap.add_argument("--swaps", type=int, default=5)
    ap.add_argument("--graph-seeds", default="0",
                    help="random regular graphs: networkx seeds to start from (one row each)")
    args = ap.parse_args()
    if args.warm:
        from bench_route_warm import warm_table

        warm_table(args)
        return
    methods = args.methods.split(",")
    load = os.getloadavg()
    print(f"# route at scale; cpus={os.cpu_count()}; load {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f}; cap {args.cap:g} s; epsilon {args.epsilon:g}; all-to-all 1 MB, 100 Gbps")
    print("| topology | graph | n | approx wall/cpu [s] | core [s] | RSS [MB] | cert. gap | vs opt |"
          " status | milp wall/cpu [s] | RSS [MB] | peer wall/cpu [s] | RSS [MB] |"
          " milp/approx (cpu) | peer/approx (cpu) | trees cpu [s] / gap | trees/approx (cpu) | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    cases = [(kind, n, g) for kind in args.topologies.split(",")
             for n in (int(x) for x in args.sizes.split(","))
             for g in ((0,) if kind.startswith("circ") else
                       tuple(int(x) for x in args.graph_seeds.split(",")))]
    for kind, n, g in cases:
        r = {m: run(m, kind, n, args.epsilon, args.cap, g) for m in methods}
        load = os.getloadavg()[0]
        a, e, p = r.get("approx", {}), r.get("milp", {}), r.get("peer", {})
        tr = r.get("trees", {})
        ok_t = tr.get("status") in ("optimal", "feasible")
        gt = (tr["objective"] - tr["bound"]) / tr["objective"] if ok_t else None
        ct = tr.get("cpu") if ok_t else None
        ok_a = a.get("status") in ("optimal", "feasible")
        ok_e = e.get("status") == "optimal"
        gap = (a["objective"] - a["bound"]) / a["objective"] if ok_a else None
        vs = (a["objective"] / e["objective"] - 1) if ok_a and ok_e else None
        ta, ca = (a.get("time"), a.get("cpu")) if ok_a else (None, None)
        te, ce = (e.get("time"), e.get("cpu")) if ok_e else (None, None)
        tp, cp = (p.get("time"), p.get("cpu")) if "objective" in p else (None, None)
        print(f"| {kind} | {g} | {n} | {fmt(ta)}/{fmt(ca)} | {fmt(core_time(a.get('message', '')))} | "
              f"{fmt(a.get('rss_mb'), '.0f')} | {fmt(gap, '.4f')} | {fmt(vs, '.4f')} | "
              f"{a.get('status', '-')}/{e.get('status', '-')} | {fmt(te)}/{fmt(ce)} | "
              f"{fmt(e.get('rss_mb'), '.0f')} | {fmt(tp)}/{fmt(cp)} | "
              f"{fmt(p.get('rss_mb'), '.0f')} | {fmt(ce / ca if ce and ca else None)} | "
              f"{fmt(cp / ca if cp and ca else None)} | {fmt(ct)} / {fmt(gt, '.4f')} | "
              f"{fmt(ct / ca if ct and ca else None)} | {load:.1f} |", flush=True)
    print(f"# load at end {os.getloadavg()[0]:.2f} (2 cores, 24 GiB, shared)")


if __name__ == "__main__":
    main()
