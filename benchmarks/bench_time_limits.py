"""Time-limit overrun of every exact method on a size ladder (issue 9: limits are honoured).

Every exact method must return within ``max(1.2 * limit, limit + 5 s)`` of being called, with
its incumbent and bound, or refuse the size up front. For each method and size this runs one
``topoopt-milp solve`` in a fresh process (so start-up is measured once, separately, and peak
memory is the run's own) on the bundled ``mixed`` family (coset AllReduce plus MP; select
methods on ``circulant`` all-to-all, route methods on the TopologyFinder topology), and prints
a Markdown table: wall time of the solve call, the allowance, the method's own runtime, peak
RSS, status, and whether the size was refused.

    python benchmarks/bench_time_limits.py --limit 10 --sizes 16 32 64 128
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
LIB = ROOT / "instances"
EXACT = ("alloc-milp", "alloc-benders", "alloc-cpsat", "joint-milp", "joint-cpsat",
         "select-milp", "select-cpsat", "route-milp", "route-cpsat", "route-approx")
CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from topoopt_milp import registry
from topoopt_milp.core.errors import InputError
from topoopt_milp.core.instance import Instance
from topoopt_milp.pipeline import solve_checked
inst = Instance.load(sys.argv[1])
method, limit = sys.argv[2], float(sys.argv[3])
imported = time.perf_counter() - t0
t1 = time.perf_counter()
try:
    res = solve_checked(inst, method, time_limit=limit)
    out = {"status": res.status.value, "objective": res.objective, "bound": res.bound,
           "runtime_s": res.runtime_s, "violations": len(res.violations),
           "message": res.message[:160]}
except InputError as exc:
    out = {"status": "refused", "message": str(exc)[:160]}
out["call_s"] = time.perf_counter() - t1
out["import_s"] = imported
import resource
out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("RESULT " + json.dumps(out))
"""


def instance_for(method: str, n: int, d: int, tmp: Path) -> Path | None:
    """The instance a method is timed on at size ``n`` (None if the library has none)."""
    if method.startswith("select"):
        path = LIB / "circulant" / f"uniform-n{n}-d{d}.json"
        return path if path.exists() else None
    path = LIB / "mixed" / f"mixed-n{n}-d{d}-g4-mp30.json"
    if not path.exists():
        return None
    if not method.startswith("route"):
        return path
    from topoopt_milp import registry
    from topoopt_milp.core.instance import Instance

    inst = Instance.load(path)
    tf = registry.solve(inst, "topologyfinder")
    fixed = tmp / f"fixed-n{n}-d{d}.json"
    inst.with_topology(tf.topology.links, tf.routing.rings).save(fixed)
    return fixed


def run(method: str, path: Path, limit: float) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), method, str(limit)],
                          capture_output=True, text=True, timeout=max(10 * limit, limit + 600))
    wall = time.perf_counter() - t0
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    out = json.loads(line[7:]) if line else {"status": "crash", "message": proc.stderr[-300:],
                                             "maxrss_mb": float("nan")}
    out.update(process_s=wall)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=float, default=10.0)
    ap.add_argument("--sizes", type=int, nargs="+", default=[16, 32, 64, 128])
    ap.add_argument("--degree", type=int, default=4)
    ap.add_argument("--methods", nargs="+", default=list(EXACT))
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}; limit {args.limit:g} s; "
          f"allowance max(1.2 x limit, limit + 5 s) = {max(1.2 * args.limit, args.limit + 5):g} s")
    print("\n| method | n | status | solve call [s] | within allowance | own runtime [s] | "
          "process [s] | peak RSS [MB] | note |")
    print("|---|---|---|---|---|---|---|---|---|")
    allowance = max(1.2 * args.limit, args.limit + 5)
    with tempfile.TemporaryDirectory() as tmp:
        for method in args.methods:
            for n in args.sizes:
                path = instance_for(method, n, args.degree, Path(tmp))
                if path is None:
                    continue
                r = run(method, path, args.limit)
                ok = "refused up front" if r["status"] == "refused" else (
                    "yes" if r.get("call_s", 1e9) <= allowance else "NO")
                own = r.get("runtime_s")
                print(f"| {method} | {n} | {r['status']} | {r.get('call_s', float('nan')):.1f} | "
                      f"{ok} | {'-' if own is None else f'{own:.1f}'} | {r['process_s']:.1f} | "
                      f"{r['maxrss_mb']:.0f} | {r.get('message', '')[:70]} |", flush=True)
    print(f"\nload after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
