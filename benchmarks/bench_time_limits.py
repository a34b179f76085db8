"""Time-limit overrun of every exact method under load (issues 9 and 20: limits are honoured).

Every exact method must return within ``max(1.2 * limit, limit + 5 s)`` of being started, with
its incumbent and bound, or refuse the size up front (exit code 2). For each method and size
this times one whole ``topoopt-milp solve ... --time-limit L --out SOL`` process, from its
start to its exit (start-up, model building, the solver, evaluation, the independent checker
and writing included), on the bundled ``mixed`` family (coset AllReduce plus MP; select
methods on ``circulant`` all-to-all, route methods on the TopologyFinder topology, and
``--extra`` instances such as ``circulant/uniform-n64-d4.json`` for every alloc method).

``--beside`` (default on) keeps a second solve running beside the timed one the whole time
(``alloc-milp`` on ``circulant/uniform-n64-d4.json``, restarted when it ends), the load of
the issue. The machine's load average is printed per row (other users count too).

``--baseline SRC`` also times every case with the package at ``SRC`` (e.g. an older
checkout made with ``git archive COMMIT topoopt_milp | tar -x -C SRC``), right after the
current one, under the same load: the peer of the comparison.

    python benchmarks/bench_time_limits.py --limit 10 --sizes 16 32 64 128
    python benchmarks/bench_time_limits.py --limit 45 --sizes --methods alloc-milp \
        --baseline /tmp/old   # the issue's case, load scaled into the limit
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "instances"
EXACT = ("alloc-milp", "alloc-benders", "alloc-cpsat", "joint-milp", "joint-cpsat",
         "select-milp", "select-cpsat", "route-milp", "route-cpsat", "route-approx")
CLI = [sys.executable, "-c", "from topoopt_milp.cli import main; main()"]
BESIDE = ("alloc-milp", LIB / "circulant" / "uniform-n64-d4.json")


def allowance(limit: float) -> float:
    return max(1.2 * limit, limit + 5.0)


def instance_for(method: str, n: int, d: int, tmp: Path) -> Path | None:
    """The instance a method is timed on at size ``n`` (None if the library has none)."""
    if method.startswith("select"):
        path = LIB / "circulant" / f"uniform-n{n}-d{d}.json"
        return path if path.exists() else None
    path = LIB / "mixed" / f"mixed-n{n}-d{d}-g4-mp30.json"
    if not path.exists():
        return None
    return fixed(path, tmp) if method.startswith("route") else path


def fixed(path: Path, tmp: Path) -> Path:
    """``path`` with TopologyFinder's topology and rings fixed (a route instance)."""
    from topoopt_milp import registry
    from topoopt_milp.core.instance import Instance

    out = tmp / f"fixed-{path.stem}.json"
    if not out.exists():
        inst = Instance.load(path)
        tf = registry.solve(inst, "topologyfinder")
        inst.with_topology(tf.topology.links, tf.routing.rings).save(out)
    return out


def run(method: str, path: Path, limit: float, tmp: Path, source: str | None = None) -> dict:
    """One ``solve`` process (of the package at ``source``, default this checkout): wall time
    start to exit, peak RSS, exit code, status."""
    env = {**os.environ, "PYTHONPATH": source or str(ROOT)}
    sol = tmp / "sol.json"
    sol.unlink(missing_ok=True)
    load = os.getloadavg()[0]
    with open(tmp / "out.txt", "w+") as fo, open(tmp / "err.txt", "w+") as fe:
        t0 = time.perf_counter()
        proc = subprocess.Popen([*CLI, "-vv", "solve", str(path), "-m", method, "--time-limit",
                                 str(limit), "--out", str(sol)], stdout=fo, stderr=fe, env=env)
        timer = threading.Timer(max(10 * limit, limit + 600), proc.kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)  # the child's own peak memory
        wall = time.perf_counter() - t0
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0), fe.seek(0)
        out_text, err_text = fo.read(), fe.read()
    out = {"process_s": wall, "rc": proc.returncode, "maxrss_mb": usage.ru_maxrss / 1024,
           "load": max(load, os.getloadavg()[0]), "phases": phases(err_text, wall)}
    if proc.returncode == 2:
        out.update(status="refused", message=err_text.strip().splitlines()[-1][:90])
    elif sol.exists():
        data = json.loads(sol.read_text())
        out.update(status=data["status"], runtime_s=data["runtime_s"],
                   message=(data.get("message") or "")[:90])
    else:
        out.update(status="crash", message=(err_text or out_text).strip()[-90:])
    return out


PHASES = {"before": re.compile(r": ([0-9.]+) s of the [0-9.e+]+ s limit spent before the method"),
          "returned": re.compile(r": returned ([0-9.]+) s into the [0-9.e+]+ s limit"),
          "checked": re.compile(r"checked ([0-9.]+) s after the command started"),
          "written": re.compile(r"solution written ([0-9.]+) s after the command started")}


def phases(log: str, wall: float) -> str:
    """``before/method/check/write/exit`` seconds from the ``-vv`` log of a solve, each
    counted from the process start: start-up, reading and the warm start; the method (model,
    solver, extraction); evaluation and the independent checker; writing the file; what is
    left to the exit (printing, the interpreter's exit)."""
    t = {}
    for key, pat in PHASES.items():
        m = pat.findall(log)
        if m:
            t[key] = float(m[-1])
    if len(t) < len(PHASES):
        return "-"
    marks = [0.0, t["before"], t["returned"], t["checked"], t["written"], wall]
    return "/".join(f"{b - a:.1f}" for a, b in zip(marks, marks[1:], strict=False))


class Beside:
    """A second solve running beside the timed ones, restarted whenever it ends."""

    def __init__(self, tmp: Path) -> None:
        self.stop = threading.Event()
        self.proc: subprocess.Popen | None = None
        self.sol = tmp / "beside.json"
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        method, path = BESIDE
        while not self.stop.is_set():
            self.proc = subprocess.Popen([*CLI, "solve", str(path), "-m", method, "--time-limit",
                                          "60", "--out", str(self.sol)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.proc.wait()

    def __enter__(self) -> Beside:
        self.thread.start()
        time.sleep(3.0)  # let it get past start-up
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()
        self.thread.join()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=float, default=10.0)
    ap.add_argument("--sizes", type=int, nargs="*", default=[16, 32, 64, 128])
    ap.add_argument("--degree", type=int, default=4)
    ap.add_argument("--methods", nargs="+", default=list(EXACT))
    ap.add_argument("--extra", nargs="*", default=["circulant/uniform-n64-d4.json"],
                    help="Library instances (relative to instances/) timed with every "
                         "alloc and joint method too.")
    ap.add_argument("--no-beside", action="store_true", help="No second solve beside.")
    ap.add_argument("--baseline", default=None,
                    help="Also time every case with the package at this folder (a peer).")
    args = ap.parse_args()
    allow = allowance(args.limit)
    print(f"machine: {os.cpu_count()} cpus (shared), load {os.getloadavg()[0]:.2f}; limit "
          f"{args.limit:g} s; allowance max(1.2 x limit, limit + 5 s) = {allow:g} s; "
          f"beside: {'none' if args.no_beside else f'{BESIDE[0]} on {BESIDE[1].name}'}")
    print("\n| method | instance | status | process [s] | within allowance | own runtime [s] | "
          "before/method/check/write/exit [s] | load | peak RSS [MB] | note |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    worst = {}
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        runs = []
        for method in args.methods:
            for n in args.sizes:
                path = instance_for(method, n, args.degree, tmp)
                if path is not None:
                    runs.append((method, path))
            if method.startswith(("alloc", "joint")):
                runs += [(method, LIB / e) for e in args.extra]
            if method.startswith("route"):
                runs += [(method, fixed(LIB / e, tmp)) for e in args.extra]
        ctx = Beside(tmp) if not args.no_beside else None
        if ctx is not None:
            ctx.__enter__()
        try:
            for method, path in runs:
                r = run(method, path, args.limit, tmp)
                ok = "refused up front" if r["status"] == "refused" else (
                    "yes" if r["process_s"] <= allow else "NO")
                worst[method] = max(worst.get(method, 0.0), r["process_s"])
                own = r.get("runtime_s")
                print(f"| {method} | {path.stem} | {r['status']} | {r['process_s']:.1f} | {ok} | "
                      f"{'-' if own is None else f'{own:.1f}'} | {r['phases']} | {r['load']:.1f} | "
                      f"{r['maxrss_mb']:.0f} | {r.get('message', '')[:70]} |", flush=True)
                if args.baseline:
                    b = run(method, path, args.limit, tmp, args.baseline)
                    ok = "refused up front" if b["status"] == "refused" else (
                        "yes" if b["process_s"] <= allow else "NO")
                    own = b.get("runtime_s")
                    print(f"| (baseline) {method} | {path.stem} | {b['status']} | "
                          f"{b['process_s']:.1f} | {ok} | {'-' if own is None else f'{own:.1f}'} "
                          f"| {b['phases']} | {b['load']:.1f} | {b['maxrss_mb']:.0f} | "
                          f"{b.get('message', '')[:70]} |", flush=True)
        finally:
            if ctx is not None:
                ctx.__exit__(None, None, None)
    print("\nworst process time per method: " + ", ".join(f"{m} {t:.1f} s"
                                                          for m, t in worst.items()))
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
