"""group-split's ring patterns side by side: TotientPerms jumps, random Hamiltonian cycles
(shortened by the cycle descent) and ``best`` (the default: the lower busiest-arc estimate of
the split LP), each with LP routing, on the d = 4 coopt and mixed instances (issue 16, the
upper side).

For every instance and seed it runs ``group-split-lp --pattern P`` in this process through
:func:`topoopt_milp.pipeline.solve_checked` (the independent checker re-verifies every
solution) and reports the objective, the wall time and the 1-minute load; per instance, the
ratio random / jumps and whether ``best`` picked the better of the two. Usage::

    python benchmarks/bench_group_split.py [--match n128-d4 n64-d4] [--seeds 2]
        [--out results/bench-group-split]

writes OUT.md and OUT.csv.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from topoopt_milp.core.instance import Instance
from topoopt_milp.pipeline import solve_checked

PATTERNS = ("jumps", "random", "best")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", nargs="+", default=["instances/coopt", "instances/mixed"])
    ap.add_argument("--match", nargs="*", default=["n64-d4", "n128-d4"],
                    help="only instance files whose name contains one of these strings")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--out", default="results/bench-group-split")
    a = ap.parse_args()
    files = sorted(p for d in a.instances for p in Path(d).glob("*.json")
                   if any(m in p.name for m in a.match))
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    rows = []
    for f in files:
        inst = Instance.load(f)
        for seed in range(a.seeds):
            for pattern in PATTERNS:
                load = os.getloadavg()[0]
                t = time.perf_counter()
                res = solve_checked(inst, "group-split-lp", seed=seed, pattern=pattern)
                rows.append({"instance": inst.name, "seed": seed, "pattern": pattern,
                             "objective_s": res.objective, "status": str(res.status.value),
                             "wall_s": round(time.perf_counter() - t, 2),
                             "load_1min": round(load, 2)})
                print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    wide = df.pivot_table(index=["instance", "seed"], columns="pattern",
                          values="objective_s").reset_index()
    wide = wide[["instance", "seed", *PATTERNS]]
    wide["random_vs_jumps"] = (wide["random"] / wide["jumps"]).round(4)
    wide["best_picked_better"] = (wide["best"] <= wide[["jumps", "random"]].min(axis=1)
                                  * (1 + 1e-9))
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out.with_suffix(".csv"), index=False)
    errors = int((df["status"] == "error").sum())
    lines = [
        "# group-split-lp: ring pattern jumps vs random vs best\n",
        f"`python benchmarks/bench_group_split.py --match {' '.join(a.match)} --seeds "
        f"{a.seeds}` started {started}; machine: {os.cpu_count()} cores, "
        f"{platform.machine()}; load (1 min) {df['load_1min'].min():.1f}-"
        f"{df['load_1min'].max():.1f}. Objective: the communication time [s] of the checked "
        f"solution; checker errors: {errors}.\n",
        wide.to_markdown(index=False, floatfmt=".6g"),
        "",
        f"* random better than jumps on {int((wide['random_vs_jumps'] < 1).sum())} of "
        f"{len(wide)} (instance, seed); median random / jumps "
        f"{wide['random_vs_jumps'].median():.4f}",
        f"* best picked the better pattern on {int(wide['best_picked_better'].sum())} of "
        f"{len(wide)}",
        f"* wall per run: median {df['wall_s'].median():.1f} s, max {df['wall_s'].max():.1f} s",
    ]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
