"""A lever of the matching bound (``methods/bounds/matching.py``) on the coopt and mixed
instances: how much of the certified gap (every ring order) it closes, and its cost (issue 16,
item 2). The levers:

* ``levels`` (Lemma 3: the MP bytes within ``h`` hops fit in a b-matching of degree ``M_h``,
  for every level ``h >= 2``), switched off by ``MAX_LEVELS = 0``;
* ``idle`` (:mod:`~topoopt_milp.methods.bounds.idle`: the arc capacity that the nodes' send /
  receive imbalance keeps idle), switched off by an idle capacity of 0.

Per instance:

* ``matching_s``: :func:`~topoopt_milp.methods.bounds.matching.matching_bound` (scope
  ``any``) with the lever switched off, and ``lever_s`` with it; each timed here (CPU
  seconds);
* ``bound_any_s``, ``best_s``: the best bound valid for every ring order and the best
  solution of the headline (``results/headline.csv``'s rows, rebuilt from ``--store``);
* ``closed = (max(bound_any, lever) - bound_any) / (best - bound_any)`` and the gap against
  every ring order before and after.

Only instances with an open gap (``best > bound_any``) are listed. The machine load is
printed with the table (2 cores, 24 GiB). Usage::

    python benchmarks/bench_level_matching.py [--lever levels|idle]
        [--store results/runs.sqlite] [--match mixed-n128] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import pandas as pd

from topoopt_milp.bench.headline import headline_table, workload_of
from topoopt_milp.bench.render import render
from topoopt_milp.bench.runner import find_instances
from topoopt_milp.bench.store import load_runs
from topoopt_milp.methods.bounds import matching

ROOT = Path(__file__).resolve().parents[1]


def sig(x: float) -> float:
    return float(f"{x:.7g}")


def timed_bound(inst, lever: str, on: bool) -> tuple[float, float]:
    """``(matching bound [s], CPU s)`` with ``lever`` switched on or off."""
    saved = matching.MAX_LEVELS, matching.idle_capacity
    if not on and lever == "levels":
        matching.MAX_LEVELS = 0
    if not on and lever == "idle":
        matching.idle_capacity = lambda _inst: 0.0
    try:
        t0 = time.process_time()
        value = matching.matching_bound(inst, "any")
        return value, time.process_time() - t0
    finally:
        matching.MAX_LEVELS, matching.idle_capacity = saved


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", nargs="+", default=[str(ROOT / "instances" / f)
                                                       for f in ("coopt", "mixed")])
    ap.add_argument("--lever", choices=("levels", "idle"), default="levels")
    ap.add_argument("--store", type=Path, default=ROOT / "results" / "runs.sqlite")
    ap.add_argument("--match", nargs="*", default=None)
    ap.add_argument("--out", type=Path, default=None, help="also write the table here (md)")
    args = ap.parse_args(argv)
    head = headline_table(load_runs(args.store))
    key = ["family", "workload", "n", "degree", "link_gbps"]
    head = head.set_index(key)
    rows = []
    for found in find_instances(args.instances):
        inst = found.instance
        if inst is None or (args.match and not any(m in found.path.name for m in args.match)):
            continue
        at = (found.path.parent.name, workload_of(inst.to_dict().get("meta")), inst.n, inst.degree,
              float(inst.link_gbps))
        if at not in head.index:
            continue
        row = head.loc[at]
        best, bound = float(row["best_s"]), float(row["bound_any_s"])
        if not best > bound:
            continue
        before, cpu0 = timed_bound(inst, args.lever, False)
        after, cpu1 = timed_bound(inst, args.lever, True)
        new = max(bound, after)
        rows.append({"instance": inst.name, "n": inst.n, "d": inst.degree,
                     "best_s": sig(best), "bound_any_s": sig(bound),
                     "bound_any_by": row["bound_any_by"], "matching_s": sig(before),
                     "lever_s": sig(after), "gain_pct": round(100 * (after / before - 1), 2),
                     "cpu_s": round(cpu0, 2), "lever_cpu_s": round(cpu1, 2),
                     "gap_before_pct": round(100 * (best - bound) / best, 2),
                     "gap_after_pct": round(100 * (best - new) / best, 2),
                     "closed_pct": round(100 * (new - bound) / (best - bound), 1)})
        print(json.dumps(rows[-1]), flush=True)
    df = pd.DataFrame(rows)
    l1, l5 = os.getloadavg()[:2]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [f"# matching bound with the lever `{args.lever}`: share of the certified gap "
             "(every ring order) it closes\n",
             f"`python benchmarks/bench_level_matching.py --lever {args.lever}` ({when}, load "
             f"{l1:.2f} {l5:.2f} on "
             f"{os.cpu_count() or 1} cpus; 2 cores, 24 GiB); store `{args.store.name}`.\n"]
    if len(df):
        moved = df[df["closed_pct"] > 0]
        lines += [render(df, "md"), "",
                  f"Instances with an open gap: {len(df)}; the lever raises the matching bound on "
                  f"{int((df['gain_pct'] > 0).sum())} (median gain "
                  f"{statistics.median(df['gain_pct']):.2f}%, max {df['gain_pct'].max():.2f}%) "
                  f"and the best bound on {len(moved)} (gap closed: median "
                  f"{statistics.median(moved['closed_pct']) if len(moved) else 0:.1f}%, max "
                  f"{moved['closed_pct'].max() if len(moved) else 0:.1f}%). CPU: "
                  f"{df['cpu_s'].sum():.1f} s without the lever, "
                  f"{df['lever_cpu_s'].sum():.1f} s with it."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
