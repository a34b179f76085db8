"""Limits at the documented maximum n = 10^4 (issue 20): route-approx, TopologyFinder, the
expander and lower-bounds, each one whole ``topoopt-milp`` process.

The instance is the one of ``tests/test_fuzz_defects.py``'s large-n test: ``mixed`` traffic,
n = 10^4, d = 8, two coset AllReduce groups of 5000 and 80,000 sparse MP pairs (seed 1;
100,000 routed commodities). Each row times one process from its start to its exit with
``os.wait4``: wall seconds, CPU seconds (user + system) and peak RSS, plus the machine's load
average around it (2 cores shared with other users: the load is part of the figure).

1. ``expander`` (no limit): the random 8-regular topology, written as an edge list; its
   shortest-path routing is the start route-approx begins from (the same hop-shortest
   routing of the same rings), so its objective is route-approx's "before".
2. ``route-approx --topology EXPANDER.edgelist --time-limit L`` (default 20 and 60): within
   ``max(1.2 L, L + 5 s)``, or refused up front (exit 2) when start-up and the estimated
   work after the solver already exceed that; its objective is never above the start's.
3. ``topologyfinder`` (no limit): greedy MP rounds above n = 256 (its size switch).
4. ``lower-bounds --time-limit 20``.

    python benchmarks/bench_limits_large.py [--limits 20 60] [--skip tf expander ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "from topoopt_milp.cli import main; main()"]


def allowance(limit: float) -> float:
    return max(1.2 * limit, limit + 5.0)


def timed(args: list[str], out: Path | None) -> dict:
    """:func:`run` with the child's own CPU and peak RSS (``os.wait4``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if out is not None:
        out.unlink(missing_ok=True)
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        t0 = time.perf_counter()
        proc = subprocess.Popen([*CLI, *args], stdout=fo, stderr=fe, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        fo.seek(0), fe.seek(0)
        stdout, stderr = fo.read(), fe.read()
    sol = json.loads(out.read_text()) if out is not None and out.exists() else None
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_gb": usage.ru_maxrss / 1e6,
            "rc": os.waitstatus_to_exitcode(status), "load": (load0, os.getloadavg()[0]),
            "last_err": (stderr.strip().splitlines() or [""])[-1][:150], "solution": sol,
            "stdout": stdout}


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.6g}"


def row(name: str, r: dict, limit: float | None = None, before: float | None = None) -> str:
    sol = r["solution"] or {}
    obj, bound = sol.get("objective"), sol.get("bound")
    if r["rc"] == 2:
        verdict = "refused up front"
    elif limit is None:
        verdict = "-"
    else:
        verdict = "yes" if r["wall"] <= allowance(limit) else "NO"
    worse = "-" if before is None or obj is None else ("NO" if obj <= before * (1 + 1e-9)
                                                       else "WORSE")
    note = sol.get("message", "") if sol else r["last_err"]
    return (f"| {name} | {'-' if limit is None else f'{limit:g}'} | {sol.get('status', r['rc'])} "
            f"| {r['wall']:.1f} | {verdict} | {r['cpu']:.1f} | {r['rss_gb']:.2f} | "
            f"{r['load'][0]:.1f}-{r['load'][1]:.1f} | {fmt(before)} | {fmt(obj)} | {worse} | "
            f"{fmt(bound)} | {note[:110]} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limits", type=float, nargs="+", default=[20.0, 60.0],
                    help="route-approx time limits")
    ap.add_argument("--skip", nargs="*", default=[],
                    choices=["route-approx", "topologyfinder", "lower-bounds"])
    ap.add_argument("--keep", default=None, help="keep the instance and solutions here")
    args = ap.parse_args()
    from topoopt_milp.workloads import generators

    print(f"machine: {os.cpu_count()} cpus (shared), load {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(args.keep or tmpdir)
        tmp.mkdir(parents=True, exist_ok=True)
        inst = tmp / "mixed-n10000-d8.json"
        generators.mixed(10_000, 8, mp_pattern="sparse", pairs=80_000, seed=1).save(inst)
        print("\n| run | limit [s] | status | wall [s] | within allowance | CPU [s] | peak RSS "
              "[GB] | load | objective before [s] | objective [s] | worse than start | "
              "bound [s] | note |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        exp = tmp / "expander.json"
        r = timed(["solve", str(inst), "-m", "expander", "--out", str(exp)], exp)
        print(row("expander", r), flush=True)
        start = (r["solution"] or {}).get("objective")
        edges = tmp / "expander.edgelist"
        subprocess.run([*CLI, "export", str(exp), "--format", "edgelist", "-o", str(edges)],
                       check=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                       stdout=subprocess.DEVNULL)
        if "route-approx" not in args.skip:
            for limit in args.limits:
                out = tmp / f"route-approx-{limit:g}.json"
                r = timed(["solve", str(inst), "-m", "route-approx", "--topology", str(edges),
                           "--time-limit", f"{limit:g}", "--out", str(out)], out)
                print(row("route-approx", r, limit, start), flush=True)
        if "topologyfinder" not in args.skip:
            out = tmp / "topologyfinder.json"
            r = timed(["solve", str(inst), "-m", "topologyfinder", "--out", str(out)], out)
            print(row("topologyfinder", r), flush=True)
        if "lower-bounds" not in args.skip:
            out = tmp / "lower-bounds.json"
            r = timed(["solve", str(inst), "-m", "lower-bounds", "--time-limit", "20", "--out",
                       str(out)], out)
            print(row("lower-bounds", r, 20.0), flush=True)
    print(f"\nload after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
