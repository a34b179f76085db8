"""The coupled bound with relay ports, per d = 4 co-optimized instance (issue 16, item 2).

For every ``instances/coopt/*-n{N}-d4*.json`` of ``SIZES`` (resnet50 and vgg16 are closed and
skipped) it takes from ``results/headline.csv`` the best objective and the scope of its rings,
and as the *old* bound the largest of the headline's bound in that scope and the
neighbourhood / gateway bounds of that scope recorded in ``results/bench_bounds/d4.txt``.
It then runs :func:`~topoopt_milp.methods.bounds.coupled.coupled_bound` in the same scope
(``totient``: one ring split per group; relay port rows on) within ``TIME`` seconds and at most
``HOT`` hot nodes, and prints old and new bound, the gaps and the share of the gap closed::

    closed = (gap_old - gap_new) / gap_old

with the 1-minute load average on each line (2 cores shared with other agents). Usage::

    PYTHONPATH=. python benchmarks/bench_relay_ports.py TIME HOT SIZES [NAME ...]
    PYTHONPATH=. python benchmarks/bench_relay_ports.py 40 16 32,64,128
"""

from __future__ import annotations

import csv
import os
import re
import sys
import time
from pathlib import Path

from topoopt_milp.core.instance import Instance
from topoopt_milp.methods.bounds.coupled import coupled_bound

ROOT = Path(__file__).resolve().parents[1]
SUFFIX = {"100.0": "", "25.0": "-b25", "400.0": "-b400"}


def recorded_bounds() -> dict[str, dict[str, float]]:
    """``old``, ``nb_*`` and ``gw_*`` of ``results/bench_bounds/d4.txt`` per instance name."""
    out: dict[str, dict[str, float]] = {}
    for line in (ROOT / "results" / "bench_bounds" / "d4.txt").read_text().splitlines():
        m = re.match(r"(\S+-d4(?:-b\d+)?)\s+best", line)
        if m:
            out[m.group(1)] = {k: float(v) for k, v in re.findall(
                r"(old|nb_any|nb_totient|gw_any|gw_totient) ([0-9.e-]+)", line)}
    return out


def main() -> None:
    limit, max_hot, sizes, only = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(","), \
        sys.argv[4:]
    recorded = recorded_bounds()
    text = (ROOT / "results" / "headline.csv").read_text().splitlines()
    for r in csv.DictReader(text):
        if r["family"] != "coopt" or r["degree"] != "4" or r["n"] not in sizes:
            continue
        if r["workload"] in ("resnet50", "vgg16"):
            continue
        name = f"{r['workload']}-n{r['n']}-d4{SUFFIX[r['link_gbps']]}"
        if only and name not in only:
            continue
        scope, best = r["best_rings"], float(r["best_s"])
        rec = recorded.get(name, {})
        if scope == "any":
            old = max([float(r["bound_any_s"])] + [rec[k] for k in ("nb_any", "gw_any")
                                                   if k in rec])
        else:
            old = max([float(r["bound_any_s"]), float(r["bound_totient_s"])]
                      + list(rec.values()))
        inst = Instance.load(ROOT / "instances" / "coopt" / f"{name}.json")
        t0, info = time.perf_counter(), {}
        new = coupled_bound(inst, scope, limit, max_hot=max_hot, info=info)
        dt = time.perf_counter() - t0
        g0 = 100 * (best - old) / best
        g1 = 100 * (best - max(old, new)) / best
        closed = 100 * (g0 - g1) / g0 if g0 > 1e-9 else 0.0
        print(f"{name:22s} scope {scope:7s} best {best:.6g} old {old:.6g} coupled {new:.6g} "
              f"({dt:.1f}s, hot {info.get('hot')}, {info.get('status')}) gap {g0:.2f}% -> "
              f"{g1:.2f}% closed {closed:.1f}% | load {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
