"""alloc-orbit against the LP-routed heuristics and the best solution on record, on the
instances with a shift symmetry (issue 16, the upper side).

For every instance file that matches, the period of its symmetry is computed
(:func:`topoopt_milp.methods.alloc_orbit.symmetry.period`); instances without one are listed
and skipped. The others are solved in this process, one after the other, through
:func:`topoopt_milp.pipeline.solve_checked` (the independent checker re-verifies every
solution) by ``topologyfinder-lp`` and ``totientperms-lp`` (the peers, same run) and by
``alloc-orbit --time-limit T``. The table gives each objective, alloc-orbit / the better
peer, the record (the lowest solution and the highest bound covering every topology and ring
order, ``bound_any_s``, over ``results/headline.csv`` and every ``results/certify*.csv``)
and the certified gap that bound gives alloc-orbit's solution when it beats the record.
Usage::

    python benchmarks/bench_alloc_orbit.py [--match n128-d4] [--time-limit 300]
        [--out results/bench-alloc-orbit]

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
from topoopt_milp.methods.alloc_orbit.symmetry import period
from topoopt_milp.pipeline import solve_checked

PEERS = ("topologyfinder-lp", "totientperms-lp")


def record(results: Path, inst: Instance) -> dict:
    """The record of ``inst``: ``best_s`` (lowest) and ``bound_any_s`` (highest) over the
    headline row (matched by workload, n, d, link rate) and the certify tables' rows (by
    name); ``{}`` when none has it."""
    best, bound = [], []
    head = results / "headline.csv"
    if head.exists():
        h = pd.read_csv(head)
        workload = (inst.meta or {}).get("workload") or inst.name.split("-n")[0]
        h = h[(h["workload"] == workload) & (h["n"] == inst.n) & (h["degree"] == inst.degree)
              & (h["link_gbps"] == inst.link_gbps)]
        best += h["best_s"].dropna().tolist()
        bound += h["bound_any_s"].dropna().tolist()
    for f in results.glob("certify*.csv"):
        c = pd.read_csv(f)
        if {"instance", "new_best_s", "bound_any_s"} <= set(c.columns):
            c = c[c["instance"] == inst.name]
            best += pd.to_numeric(c["new_best_s"], errors="coerce").dropna().tolist()
            bound += pd.to_numeric(c["bound_any_s"], errors="coerce").dropna().tolist()
    if not best or not bound:
        return {}
    lo, hi = min(best), max(bound)
    return {"best_s": lo, "bound_any_s": hi, "gap_any_pct": 100 * (lo - hi) / lo}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", nargs="+", default=["instances/coopt", "instances/mixed"])
    ap.add_argument("--match", nargs="*", default=["n64-d4.json", "n128-d4.json"],
                    help="only instance files whose name contains one of these strings")
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--results", default="results", help="where the record is read")
    ap.add_argument("--out", default="results/bench-alloc-orbit")
    a = ap.parse_args()
    files = sorted(p for d in a.instances for p in Path(d).glob("*.json")
                   if any(m in p.name for m in a.match))
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    rows, skipped = [], []
    for f in files:
        inst = Instance.load(f)
        s = period(inst)
        if s == inst.n:
            skipped.append(inst.name)
            continue
        row = {"instance": inst.name, "period": s, "load_1min": round(os.getloadavg()[0], 2)}
        for name in (*PEERS, "alloc-orbit"):
            t = time.perf_counter()
            knobs = {"time_limit": a.time_limit} if name == "alloc-orbit" else {}
            res = solve_checked(inst, name, **knobs)
            row[name] = res.objective
            row[f"{name}_status"] = res.status.value
            row[f"{name}_wall_s"] = round(time.perf_counter() - t, 1)
        peer = min(row[p] for p in PEERS if row[p] is not None)
        orbit = row["alloc-orbit"]
        row["orbit_vs_peer"] = None if orbit is None else round(orbit / peer, 4)
        old = record(Path(a.results), inst)
        row["record_best_s"] = old.get("best_s")
        row["record_bound_any_s"] = old.get("bound_any_s")
        row["record_gap_any_pct"] = old.get("gap_any_pct")
        if orbit is not None and old.get("bound_any_s") is not None \
                and orbit < float(old["best_s"]):
            row["new_gap_any_pct"] = round(100 * (orbit - old["bound_any_s"]) / orbit, 2)
        rows.append(row)
        print(row, flush=True)
    df = pd.DataFrame(rows)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out.with_suffix(".csv"), index=False)
    cols = ["instance", "period", *PEERS, "alloc-orbit", "orbit_vs_peer", "alloc-orbit_wall_s",
            "record_best_s", "record_bound_any_s", "record_gap_any_pct", "new_gap_any_pct",
            "load_1min"]
    table = df.reindex(columns=cols)
    statuses = df[[f"{m}_status" for m in (*PEERS, "alloc-orbit")]].stack()
    errors = int((statuses == "error").sum())
    better = table[table["alloc-orbit"] < table["record_best_s"] * (1 - 1e-9)]
    lines = [
        "# alloc-orbit: invariant topologies vs the LP-routed heuristics and the record\n",
        f"`python benchmarks/bench_alloc_orbit.py --match {' '.join(a.match)} --time-limit "
        f"{a.time_limit:g}` started {started}; machine: {os.cpu_count()} cores, "
        f"{platform.machine()}, one run at a time (load before each instance in `load_1min`). "
        "Objectives: the communication time [s] of the checked solution; `record_*`: the "
        f"lowest solution and highest bound covering every ring order in `{a.results}` "
        "(headline.csv and the certify tables) and their gap; `new_gap_any_pct`: that bound "
        "against alloc-orbit's solution, where it beats the record. Checker errors: "
        f"{errors}.\n",
        table.to_markdown(index=False, floatfmt=".6g"),
        "",
        f"* no shift symmetry (skipped): {', '.join(skipped) or 'none'}",
        f"* alloc-orbit better than the better peer on "
        f"{int((table['orbit_vs_peer'] < 1 - 1e-9).sum())} of {len(table)}; median ratio "
        f"{table['orbit_vs_peer'].median():.4f}",
        f"* alloc-orbit better than the record on {len(better)} of {len(table)}: "
        + ", ".join(f"{r.instance} {r.record_gap_any_pct:.2f}% -> {r.new_gap_any_pct:.2f}%"
                    for r in better.itertuples()),
    ]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
