"""route-approx through the command line at scale (issue 18, item 2): n = 1024, d = 8,
all-to-all, within 1% certified, <= 120 s CPU and <= 4 GB for the whole command.

Writes the instance (``topoopt-milp generate uniform``, 1 MB per ordered pair, 100 Gbps) and
one random regular topology per ``--graph-seeds`` entry (the first connected networkx graph
from that seed on, as an edge list), then runs::

    topoopt-milp solve A2A.json -m route-approx --topology rrD.edgelist --epsilon 0.01 -o SOL

as a child process; its CPU seconds (user + system) and peak RSS come from ``os.wait4`` (the
whole command: reading, solving, assembling the routing, the independent checker, writing),
the certified gap from the solution file. The 1-minute load average is recorded per row.

Usage::

    python benchmarks/bench_route_cli.py [--n 1024] [--degree 8] [--graph-seeds 0,11]
        [--epsilon 0.01] [--workdir /tmp/route_cli]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import networkx as nx


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--degree", type=int, default=8)
    ap.add_argument("--graph-seeds", default="0,11")
    ap.add_argument("--epsilon", type=float, default=0.01)
    ap.add_argument("--workdir", default="/tmp/route_cli")
    args = ap.parse_args(argv)
    exe = shutil.which("topoopt-milp") or os.path.join(os.path.dirname(sys.executable),
                                                       "topoopt-milp")
    os.makedirs(args.workdir, exist_ok=True)
    inst = os.path.join(args.workdir, f"a2a-n{args.n}-d{args.degree}.json")
    if not os.path.exists(inst):
        subprocess.run([exe, "generate", "uniform", "--n", str(args.n), "--degree",
                        str(args.degree), "--gbps", "100", "--bytes", "1e6", "--out", inst],
                       check=True, capture_output=True)
    print(f"# route-approx through the CLI, n = {args.n}, d = {args.degree}, all-to-all, "
          f"epsilon {args.epsilon:g}; 2 cores, shared")
    print("| graph seed | wall [s] | CPU user + sys [s] | peak RSS [GB] | objective [s] | "
          "bound [s] | cert. gap | how | load before / after |")
    print("|---|---|---|---|---|---|---|---|---|")
    for seed in (int(s) for s in args.graph_seeds.split(",")):
        for s in range(seed, seed + 100):
            g = nx.random_regular_graph(args.degree, args.n, seed=s)
            if nx.is_connected(g):
                break
        topo = os.path.join(args.workdir, f"rr{args.degree}-s{seed}.edgelist")
        nx.write_edgelist(g, topo, data=False)
        sol = os.path.join(args.workdir, f"sol-s{seed}.json")
        load0 = os.getloadavg()[0]
        t = time.perf_counter()
        p = subprocess.Popen([exe, "solve", inst, "-m", "route-approx", "--topology", topo,
                              "--epsilon", str(args.epsilon), "-o", sol],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        if status != 0:
            print(f"| {seed} | {wall:.1f} | {ru.ru_utime + ru.ru_stime:.1f} | - | - | - | - | "
                  f"exit {status}: {p.stderr.read().decode()[-200:]!r} | |")
            continue
        with open(sol) as f:
            d = json.load(f)
        how = "hop-balanced" if "hop-balanced" in (d.get("message") or "") else "column generation"
        print(f"| {seed} | {wall:.1f} | {ru.ru_utime:.1f} + {ru.ru_stime:.1f} = "
              f"{ru.ru_utime + ru.ru_stime:.1f} | {ru.ru_maxrss / 1e6:.2f} | "
              f"{d['objective']:.6g} | {d['bound']:.6g} | {d['gap']:.4f} | {how} | "
              f"{load0:.1f} / {os.getloadavg()[0]:.1f} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
