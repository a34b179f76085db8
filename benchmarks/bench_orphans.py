"""Fault injection: kill -9 a running `bench` sweep and count what it leaves behind.

The sweep runs ``alloc-milp`` with CBC (PuLP's bundled binary: one Python child and one CBC
grandchild per run) on ``instances/dnn/dlrm-n16-d4.json`` with a 300 s time limit, ``--jobs J``
runs at a time, in its own session with a private ``TMPDIR``. Once J CBC processes solve, the
script sends SIGKILL either to the sweep's whole process group (``group``: what a job
scheduler, ``timeout -s KILL`` or a terminal's hang-up does) or to the sweep process alone
(``sweep``), then counts the sweep's descendants still running (zombies do not count) and the
files left in its ``TMPDIR`` at a few moments after the kill.

    python benchmarks/bench_orphans.py [--jobs 4] [--seeds 8]

Prints one table row per scenario: descendants before the kill, alive after 0.5 / 2 / 5 / 10 s,
and temporary files left after 10 s. Needs psutil (a dependency of distributed).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
INSTANCE = ROOT / "instances" / "dnn" / "dlrm-n16-d4.json"
MOMENTS = (0.5, 2.0, 5.0, 10.0)


def _alive(procs: list[psutil.Process]) -> int:
    n = 0
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            n += p.status() != psutil.STATUS_ZOMBIE
    return n


def measure(scenario: str, jobs: int, seeds: int, work: Path) -> dict:
    tmp = work / f"tmp-{scenario}"
    tmp.mkdir()
    cmd = [sys.executable, "-c", "from topoopt_milp.cli import main; main()", "bench", str(INSTANCE),
           "-m", "alloc-milp", "--set", "solver=cbc", "--time-limit", "300", "--seeds", str(seeds),
           "--jobs", str(jobs), "--store", str(work / f"{scenario}.sqlite"), "--no-progress"]
    env = {**os.environ, "TMPDIR": str(tmp)}
    sweep = subprocess.Popen(cmd, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    procs: list[psutil.Process] = []
    while time.monotonic() < deadline:
        procs = psutil.Process(sweep.pid).children(recursive=True)
        if sum("cbc" in p.name().lower() for p in procs if p.is_running()) >= jobs:
            break
        time.sleep(0.2)
    time.sleep(1.0)  # let CBC write its files
    procs = psutil.Process(sweep.pid).children(recursive=True)
    before = len(procs)
    if sweep.poll() is not None or not before:
        raise SystemExit(f"{scenario}: the sweep did not start its runs ({' '.join(cmd)})")
    t0 = time.monotonic()
    if scenario == "group":
        os.killpg(sweep.pid, signal.SIGKILL)
    else:
        os.kill(sweep.pid, signal.SIGKILL)
    sweep.wait()
    row = {"scenario": scenario, "before": before}
    for t in MOMENTS:
        time.sleep(max(0.0, t - (time.monotonic() - t0)))
        row[f"alive@{t:g}s"] = _alive(procs)
    row["tmp files"] = sum(1 for _ in tmp.rglob("*"))
    for p in procs:  # leave the machine clean whatever the result
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--seeds", type=int, default=8)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-orphans-"))
    try:
        rows = [measure(s, args.jobs, args.seeds, work) for s in ("group", "sweep")]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    cols = list(rows[0])
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    print(f"load: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
