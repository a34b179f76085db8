"""Stronger lower bounds on the coopt and mixed instances (issue 16, item 2): how much of the
certified gap each new bound closes.

For every instance file of ``--families`` (default ``coopt mixed``) at the degrees
``--degrees`` (default 4) and sizes ``--sizes``, it reads from the store (``--store``, default
``results/runs.sqlite``, the runs behind ``results/headline.csv``) the best solution found, its
method and whether its rings lie in the TotientPerms orders, and the old best bound covering
it (the headline's ``bound_s``). The stored instance is matched by content hash, so a file that
changed since the runs is skipped. Then it computes the new bounds:

* ``nb_any``: :func:`~topoopt_milp.methods.bounds.neighbourhood.neighbourhood_bound`, scope
  any ring order (covers every solution);
* ``nb_totient``: the same with the TotientPerms ring space (covers the best solution only when
  its rings are TotientPerms orders; otherwise reported but not used);
* ``gw_any``, ``gw_totient``: :func:`~topoopt_milp.methods.bounds.gateway.gateway_bound`, the
  same two scopes;
* ``cp``: :func:`~topoopt_milp.methods.bounds.coupled.coupled_bound`, the busiest nodes'
  neighbourhood MILPs coupled through their shared neighbours and relay ports, in the best
  solution's scope (totient: one ring split per group; at most ``--coupled-hot`` nodes);
  ``closed_cp`` is measured from ``prev``, the best of the headline's
  bound and the four bounds above that cover the best solution;

each within ``--time`` seconds, and per bound the share of the gap it closes::

    closed = (max(old, new) - old) / (best - old)        (0 when the gap was already closed)

with the new certified gap ``100 (best - max(old, new)) / best``. Per family it prints the
median and max of ``closed`` over the instances with an open gap (> 0.01%). The machine load
is printed with the table (2 cores, 24 GiB, shared with other agents). Usage::

    python benchmarks/bench_bounds.py [--degrees 4 8] [--sizes 128] [--time 30]
        [--coupled-time 60] [--coupled-hot 16] [--csv out.csv]
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import time
from pathlib import Path

import pandas as pd

from topoopt_milp.bench.store import load_runs
from topoopt_milp.bench.tables import gap_rows
from topoopt_milp.core.instance import Instance
from topoopt_milp.methods.bounds.coupled import coupled_bound
from topoopt_milp.methods.bounds.gateway import gateway_bound
from topoopt_milp.methods.bounds.neighbourhood import neighbourhood_bound

ROOT = Path(__file__).resolve().parents[1]


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} on {os.cpu_count()} cpus"


def best_known(store: str, families) -> pd.DataFrame:
    """Per stored instance: best objective, its method, whether its rings are TotientPerms
    orders, and the best bound covering it (as in the headline)."""
    runs = load_runs(store)
    runs = runs[runs["family"].isin(list(families))]
    g = gap_rows(runs)
    g = g[g["objective"].notna() & (g["objective_kind"].fillna("comm_time") == "comm_time")]
    rows = []
    for (name, ihash), grp in g.groupby(["instance_name", "instance_hash"]):
        best = grp.loc[grp["objective"].astype(float).idxmin()]
        feats = best["features"] if isinstance(best["features"], dict) else {}
        rows.append({"instance": name, "hash": ihash, "best_s": float(best["objective"]),
                     "best_by": best["method"], "totient_rings": bool(feats.get("rings_totient")),
                     "old_bound_s": float(best["best_bound"]), "old_by": best["bound_source"]})
    return pd.DataFrame(rows)


def closed(best: float, old: float, new: float) -> float | None:
    if best - old <= 1e-4 * best:
        return None  # nothing left to close
    return max(0.0, min(new, best) - old) / (best - old)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--families", nargs="+", default=["coopt", "mixed"])
    ap.add_argument("--degrees", nargs="+", type=int, default=[4])
    ap.add_argument("--sizes", nargs="+", type=int, default=None)
    ap.add_argument("--names", nargs="+", default=None, help="only these instance names")
    ap.add_argument("--time", type=float, default=30.0, help="seconds per bound and instance")
    ap.add_argument("--store", default=str(ROOT / "results" / "runs.sqlite"))
    ap.add_argument("--coupled-hot", type=int, default=16, help="hot nodes of cp")
    ap.add_argument("--coupled-time", type=float, default=None,
                    help="seconds for cp (default: --time)")
    ap.add_argument("--csv", default=None)
    args = ap.parse_args()
    print(f"# bench_bounds: {load()}; 2 cores, 24 GiB, shared", flush=True)
    known = best_known(args.store, args.families).set_index("hash")
    rows = []
    files = sorted(f for fam in args.families
                   for f in glob.glob(str(ROOT / "instances" / fam / "*.json")))
    for path in files:
        inst = Instance.load(path)
        if inst.degree not in args.degrees or (args.sizes and inst.n not in args.sizes):
            continue
        if args.names and inst.name not in args.names:
            continue
        h = inst.content_hash()
        if h not in known.index:
            print(f"{inst.name}: not in the store (or changed), skipped", flush=True)
            continue
        k = known.loc[h]
        row = {"family": Path(path).parent.name, "instance": inst.name, "n": inst.n,
               "d": inst.degree, "best_s": k["best_s"], "best_by": k["best_by"],
               "totient_rings": k["totient_rings"], "old_bound_s": k["old_bound_s"],
               "old_by": k["old_by"]}
        for scope in ("any", "totient"):
            info: dict = {}
            t0 = time.perf_counter()
            row[f"nb_{scope}_s"] = neighbourhood_bound(inst, scope, args.time, info=info)
            row[f"nb_{scope}_time"] = time.perf_counter() - t0
            row[f"nb_{scope}_nodes"] = "+".join(f"{k} {v}/{inst.n}"
                                                for k, v in info["examined"].items())
            t0 = time.perf_counter()
            row[f"gw_{scope}_s"] = gateway_bound(inst, scope, args.time, info=info)
            row[f"gw_{scope}_time"] = time.perf_counter() - t0
            row[f"gw_{scope}_groups"] = f"{info['examined']}/{info['groups']}"
        usable = [row["nb_any_s"], row["gw_any_s"]] + (
            [row["nb_totient_s"], row["gw_totient_s"]] if row["totient_rings"] else [])
        prev = max(row["old_bound_s"], *usable)
        info = {}
        t0, c0 = time.perf_counter(), time.process_time()
        row["cp_scope"] = "totient" if row["totient_rings"] else "any"
        row["cp_s"] = coupled_bound(inst, row["cp_scope"], args.coupled_time or args.time,
                                    max_hot=args.coupled_hot, info=info)
        row["cp_time"] = time.perf_counter() - t0
        row["cp_cpu"] = time.process_time() - c0
        row["cp_info"] = f"hot {info.get('hot', 0)}, {info.get('status', '-')}"
        row["prev_bound_s"] = prev
        row["closed_cp"] = closed(row["best_s"], prev, row["cp_s"])
        new = max(prev, row["cp_s"])
        for scope in ("any", "totient"):
            for b in ("nb", "gw"):
                row[f"closed_{b}_{scope}"] = closed(row["best_s"], row["old_bound_s"],
                                                    row[f"{b}_{scope}_s"])
        row["closed_best"] = closed(row["best_s"], row["old_bound_s"], new)
        row["prev_gap_pct"] = 100 * (row["best_s"] - prev) / row["best_s"]
        row["old_gap_pct"] = 100 * (row["best_s"] - row["old_bound_s"]) / row["best_s"]
        row["new_gap_pct"] = 100 * (row["best_s"] - new) / row["best_s"]
        rows.append(row)
        print(f"{inst.name:28s} best {row['best_s']:.5g} ({row['best_by']}, totient rings "
              f"{row['totient_rings']}) old {row['old_bound_s']:.5g} nb_any {row['nb_any_s']:.5g} "
              f"({row['nb_any_time']:.1f}s, {row['nb_any_nodes']}) nb_totient "
              f"{row['nb_totient_s']:.5g} ({row['nb_totient_time']:.1f}s, "
              f"{row['nb_totient_nodes']}) gw_any {row['gw_any_s']:.5g} ({row['gw_any_time']:.1f}s) "
              f"gw_totient {row['gw_totient_s']:.5g} ({row['gw_totient_time']:.1f}s, groups "
              f"{row['gw_totient_groups']}) prev {prev:.5g} cp_{row['cp_scope']} {row['cp_s']:.5g} "
              f"({row['cp_time']:.1f}s wall, {row['cp_cpu']:.1f}s cpu, "
              f"{row['cp_info']}) gap {row['old_gap_pct']:.1f}% -> "
              f"{row['prev_gap_pct']:.1f}% -> {row['new_gap_pct']:.1f}% | {load()}", flush=True)
    df = pd.DataFrame(rows)
    if args.csv:
        df.to_csv(args.csv, index=False)
    if df.empty:
        return
    print("\n# share of the gap closed, per family and per coopt workload (instances with an "
          "open gap)")
    df["workload"] = [name.split("-n")[0] for name in df["instance"]]
    groups = [(fam, grp) for fam, grp in df.groupby("family")]
    groups += [(f"coopt/{w}", grp) for w, grp in df[df["family"] == "coopt"].groupby("workload")]
    for label, grp in groups:
        open_ = grp[[x is not None and x == x for x in grp["closed_best"]]]
        if open_.empty:
            continue
        for col in ("closed_nb_any", "closed_nb_totient", "closed_gw_any", "closed_gw_totient",
                    "closed_cp", "closed_best"):
            v = [0.0 if x is None or x != x else float(x) for x in open_[col]]
            print(f"{label:16s} {col:17s} median {100 * statistics.median(v):5.1f}%  max "
                  f"{100 * max(v):5.1f}%  ({len(v)} instances; certified gap median "
                  f"{open_['old_gap_pct'].median():.1f}% -> {open_['new_gap_pct'].median():.1f}%, "
                  f"max {open_['old_gap_pct'].max():.1f}% -> {open_['new_gap_pct'].max():.1f}%)")
    print(f"# {load()}")


if __name__ == "__main__":
    main()
