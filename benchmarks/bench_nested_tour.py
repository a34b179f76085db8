"""group-split's nested layout and MP tours side by side (issue 16, the upper side): for each
instance, group-split's topology with its ring layout ``sorted`` or ``nested`` and its cross
links by the ``mp`` or the ``tour`` rule (TotientPerms-jump pattern, ring ports as given),
each routed as alloc-search routes a start with its own rings: the route LP with a free
ring split over the TotientPerms orders, two tours of the topology per group and the
start's own orders, checked by the independent checker (:func:`..alloc_search.reroute`).
The record is the best solution of the store (``results/runs.sqlite``). Usage::

    python benchmarks/bench_nested_tour.py [--match candle-n128-d4 ...] [--ring-ports 0 2]
        [--out results/bench-nested-tour]

writes OUT.md and OUT.csv.
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from topoopt_milp.core.instance import Instance
from topoopt_milp.core.params import SolveOptions
from topoopt_milp.core.topology import Topology
from topoopt_milp.methods.alloc_search.reroute import reroute
from topoopt_milp.methods.alloc_search.tours import tour_candidates
from topoopt_milp.methods.heuristics.group_split import group_split_links

COMBOS = (("sorted", "mp"), ("sorted", "tour"), ("nested", "mp"), ("nested", "tour"))


def routed(inst: Instance, ports: int, layout: str, cross: str) -> tuple[float | None, str]:
    """The checked objective of group-split's topology under the free-split route LP."""
    L, rings, a, made = group_split_links(inst, ports, kind="jumps", cross=cross,
                                          layout=layout)
    cands = tour_candidates(inst, L, None, count=2)
    for r in rings:
        if inst.allreduce[r.group].edge_bytes > 0 and tuple(r.order) not in cands[r.group]:
            cands[r.group] = [*cands[r.group], tuple(r.order)]
    sol, why = reroute(inst, Topology(L), cands, SolveOptions())
    return (None, why) if sol is None else (sol.objective_s, f"{a} ring ports, {made} links")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", nargs="+", default=["instances/coopt"])
    ap.add_argument("--match", nargs="*", default=["candle-n128-d4"],
                    help="only instance files whose name contains one of these strings")
    ap.add_argument("--ring-ports", nargs="+", type=int, default=[0, 2],
                    help="group-split's ring ports (0: its own rule)")
    ap.add_argument("--out", default="results/bench-nested-tour")
    a = ap.parse_args()
    files = sorted(p for d in a.instances for p in Path(d).glob("*.json")
                   if any(m in p.name for m in a.match))
    store = sqlite3.connect("results/runs.sqlite")
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    rows = []
    for f in files:
        inst = Instance.load(f)
        record = store.execute(
            "select min(objective) from runs where instance_name = ? and status in "
            "('feasible', 'optimal') and objective_kind = 'comm_time'", (inst.name,)
        ).fetchone()[0] or float("nan")
        for ports in a.ring_ports:
            for layout, cross in COMBOS:
                load = os.getloadavg()[0]
                t = time.perf_counter()
                obj, note = routed(inst, ports, layout, cross)
                rows.append({"instance": inst.name, "ring_ports": ports, "layout": layout,
                             "cross": cross, "objective_s": obj, "record_s": record,
                             "vs_record": None if obj is None else round(obj / record, 4),
                             "note": note, "wall_s": round(time.perf_counter() - t, 1),
                             "load_1min": round(load, 2)})
                print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out.with_suffix(".csv"), index=False)
    best = df.loc[df.groupby("instance")["objective_s"].idxmin()]
    lines = [
        "# group-split: nested layout and MP tours, routed as an alloc-search start\n",
        f"`python benchmarks/bench_nested_tour.py --match {' '.join(a.match)} --ring-ports "
        f"{' '.join(map(str, a.ring_ports))}` started {started}; machine: {os.cpu_count()} "
        f"cores, {platform.machine()}; load (1 min) {df['load_1min'].min():.1f}-"
        f"{df['load_1min'].max():.1f}. Objective: the communication time [s] of the checked "
        "solution (free ring split over TotientPerms orders, tours and the start's own "
        "orders); record: the best solution in results/runs.sqlite before this run.\n",
        df.drop(columns=["record_s"]).to_markdown(index=False, floatfmt=".6g"),
        "",
        *(f"* {r.instance}: best {r.objective_s:.6g} s ({r.layout}, {r.cross}, ring ports "
          f"{r.ring_ports}), record {r.record_s:.6g} s, ratio {r.vs_record}"
          for r in best.itertuples()),
    ]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
