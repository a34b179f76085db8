"""The port-class bound (``methods/bounds/port_classes.py``) on the coopt and mixed instances:
how much of the certified gap (every ring order) it closes, beside the other bounds of the
same ``lower-bounds`` run, and its CPU time (issue 16, item 2).

Per instance with disjoint AllReduce groups:

* ``port_class``: :func:`~topoopt_milp.methods.bounds.port_classes.port_class_bound`, timed
  here (CPU seconds);
* ``others``: the best of the other bounds of the latest ``lower-bounds --rings any`` run in
  ``--store`` that reports them (its message lists every bound; ``port_class_any`` left out),
  and its name;
* ``best``: the best solution known, the least objective of the store's runs and of the
  solution files in ``--solutions`` (certify's, each re-checked by the independent checker
  here before it counts);
* ``closed = (max(others, port_class) - others) / (best - others)`` (a port-class value
  within the message's 6 digits of ``others`` counts as no gain) and the certified gap
  against every ring order before and after.

The machine load is printed with the table (2 cores, 24 GiB). Usage::

    python benchmarks/bench_port_classes.py [--store results/runs.sqlite]
        [--solutions results/certify-solutions] [--match mixed-n128] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import time
from pathlib import Path

import pandas as pd

from topoopt_milp.bench.render import render
from topoopt_milp.bench.runner import find_instances
from topoopt_milp.bench.store import load_runs
from topoopt_milp.core.check import check_solution
from topoopt_milp.methods.bounds.port_classes import parts_of, port_class_bound

ROOT = Path(__file__).resolve().parents[1]
REL = 1e-5  # the precision of the bounds a lower-bounds message lists
PAIR = re.compile(r"([a-z_]+) ([0-9.eE+-]+)")


def other_bounds(message: str) -> tuple[str, float]:
    """The best bound named in a lower-bounds message, ``port_class_any`` left out."""
    pairs = [(k, float(v)) for k, v in PAIR.findall(message.split(";", 1)[1])
             if k != "port_class_any"]
    return max(pairs, key=lambda kv: kv[1]) if pairs else ("-", 0.0)


def sig(x: float) -> float:
    return float(f"{x:.7g}")


def solution_files(folder: Path | None) -> dict[str, dict]:
    out = {}
    for path in sorted(folder.glob("*.json.gz")) if folder else ():
        with gzip.open(path, "rt") as fh:
            out[path.name[:-len(".json.gz")]] = json.load(fh)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", nargs="+", default=[str(ROOT / "instances" / f)
                                                       for f in ("coopt", "mixed")])
    ap.add_argument("--store", type=Path, default=ROOT / "results" / "runs.sqlite")
    ap.add_argument("--solutions", type=Path, default=ROOT / "results" / "certify-solutions")
    ap.add_argument("--match", nargs="*", default=None)
    ap.add_argument("--out", type=Path, default=None, help="also write the table here (md)")
    args = ap.parse_args(argv)
    runs = load_runs(args.store)
    lb = runs[(runs["method"] == "lower-bounds") & runs["message"].fillna("").str.contains("_any")]
    lb = lb[lb["params"].map(lambda p: (p or {}).get("rings") == "any")]
    best_runs = runs[runs["objective"].notna() & (runs["objective_kind"].fillna("comm_time")
                                                  == "comm_time")]
    files = solution_files(args.solutions)
    rows = []
    for found in find_instances(args.instances):
        inst = found.instance
        if inst is None or (args.match and not any(m in found.path.name for m in args.match)):
            continue
        if parts_of(inst) is None or not inst.allreduce:
            continue
        h = inst.content_hash()
        mine = lb[lb["instance_hash"] == h].sort_values("finished_at")
        if mine.empty:
            continue
        other_name, other = other_bounds(str(mine.iloc[-1]["message"]))
        objs = best_runs.loc[best_runs["instance_hash"] == h, "objective"].astype(float)
        best = float(objs.min()) if len(objs) else float("inf")
        sol = files.get(inst.name)
        if sol is not None and sol["objective"] < best and not check_solution(inst.to_dict(), sol):
            best = float(sol["objective"])
        t0 = time.process_time()
        pc = port_class_bound(inst)
        cpu = time.process_time() - t0
        # the message gives the other bounds to 6 digits: a port-class value within that of
        # them is no gain
        new = pc if pc > other * (1 + REL) else other
        rows.append({"instance": inst.name, "family": found.path.parent.name, "n": inst.n,
                     "d": inst.degree, "best_s": sig(best), "others_s": sig(other),
                     "others_by": other_name, "port_class_s": sig(pc),
                     "port_class_cpu_s": round(cpu, 2),
                     "gap_before_pct": round(max(0.0, 100 * (best - other) / best), 2),
                     "gap_after_pct": round(max(0.0, 100 * (best - new) / best), 2),
                     "closed_pct": round(100 * (new - other) / (best - other), 1)
                     if new > other else 0.0})
        print(json.dumps(rows[-1]), flush=True)
    df = pd.DataFrame(rows)
    l1, l5 = os.getloadavg()[:2]
    load = f"load {l1:.2f} {l5:.2f} on {os.cpu_count() or 1} cpus"
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = ["# port-class bound: share of the certified gap (every ring order) it closes\n",
             f"`python benchmarks/bench_port_classes.py` ({when}, "
             f"{load}; 2 cores, 24 GiB); store `{args.store.name}`, solutions "
             f"`{args.solutions.name}`.\n", render(df, "md"), ""]
    for (fam, d), grp in df.groupby(["family", "d"]):
        helped = int((grp["closed_pct"] > 1e-9).sum())
        lines.append(f"* {fam} d = {d}: helped {helped}/{len(grp)}; closed median "
                     f"{statistics.median(grp['closed_pct']):.1f}%, max {grp['closed_pct'].max():.1f}%; "
                     f"certified gap median {statistics.median(grp['gap_before_pct']):.2f}% -> "
                     f"{statistics.median(grp['gap_after_pct']):.2f}%, max "
                     f"{grp['gap_before_pct'].max():.2f}% -> {grp['gap_after_pct'].max():.2f}%; "
                     f"CPU s median {statistics.median(grp['port_class_cpu_s']):.2f}, max "
                     f"{grp['port_class_cpu_s'].max():.2f}")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out is not None:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
