"""Cheap lower-bound families on the d = 4 coopt and mixed instances (issue 16, item 2): how much
of the certified gap of ``results/headline.csv`` each closes, and its CPU time.

Per instance file of ``--families`` at degree ``--degree`` and sizes ``--sizes`` (default
32 64 128), the best solution and the bound that certifies it (``best_s``, ``best_rings``,
``bound_s`` of ``results/headline.csv``, whose rows match by family, workload, n, d and link
rate) and these bounds:

* ``ideal``, ``moore``: :func:`~topoopt_milp.core.evaluate.ideal_switch_time`,
  :func:`~topoopt_milp.core.evaluate.moore_lower_bound` (scope any);
* ``ph_any``, ``ph_totient``: :func:`~topoopt_milp.methods.bounds.counting.port_hop_bound`;
* ``matching_any``, ``matching_totient``:
  :func:`~topoopt_milp.methods.bounds.matching.matching_bound` in each ring scope (the any one
  covers every solution, the totient one a best solution with TotientPerms rings);
* ``potential`` (experimental, not in the package): node potentials ``mu_ij = w_i / 2 + w_j / 2``
  on the arcs before the topology is known. For a topology ``L`` with ``d`` ports a node, weak
  LP duality gives ``T B sum_a mu_a L_a >= sum_k D_k dist_mu(k)``; the left side is at most
  ``T B d sum_v w_v`` for every ``L``, and a path's length is ``w_s / 2 + w_t / 2`` plus the
  weights of its intermediate nodes, which per source are at least the Moore slots with the
  cheapest relays (``d`` slots free, ``d - 1`` slots at each of the ``d`` smallest weights,
  then ``d (d-1)^j`` slots at the sum of the ``j + 1`` smallest; a ring edge goes to the
  successor that makes the source's sum least). Uniform weights give the hop count, a weight
  on the busiest node the ideal switch; the best of ``w = (load / max load)^p + eps`` over a
  small grid is reported.

``closed = (max(old, new) - old) / (best - old)`` for a bound valid in the best solution's scope
(``matching`` below: ``matching_totient`` when the best solution's rings are TotientPerms
orders, else ``matching_any``); the new certified gap is ``100 (best - max(old, new)) / best``.
The machine load is printed with the table (2 cores, 24 GiB, shared with other agents). Usage::

    python benchmarks/bench_bound_families.py [--sizes 32 64 128] [--csv out.csv]
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from topoopt_milp.bench.headline import workload_of
from topoopt_milp.core.evaluate import ideal_switch_time, moore_lower_bound
from topoopt_milp.core.instance import Instance
from topoopt_milp.methods.bounds.counting import port_hop_bound
from topoopt_milp.methods.bounds.matching import matching_bound

ROOT = Path(__file__).resolve().parents[1]


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} on {os.cpu_count()} cpus"


def _slots(w_sorted: np.ndarray, d: int, k: int) -> np.ndarray:
    """The ``k`` cheapest relay costs of a source (module docstring), ascending."""
    costs = [0.0] * d
    for i in range(min(d, len(w_sorted))):
        costs += [float(w_sorted[i])] * (d - 1)
    prefix, j, width = np.cumsum(w_sorted), 2, d * (d - 1) ** 2
    while len(costs) < k:
        costs += [float(prefix[min(j, len(prefix)) - 1])] * max(width, 1)
        j, width = j + 1, width * (d - 1)
    return np.sort(np.array(costs[:k]))


def _relays(M: np.ndarray, ring: list, w: np.ndarray, d: int) -> float:
    n, total = len(w), 0.0
    for s in range(n):
        costs = _slots(np.sort(np.delete(w, s)), d, n - 1)
        base = float(np.sort(np.delete(M[s], s))[::-1] @ costs)
        extra = 0.0
        for e, cand in ring[s]:  # the successor that costs the source least
            best = min(float(np.sort(np.delete(M[s] + e * (np.arange(n) == t), s))[::-1]
                             @ costs) for t in cand)
            extra += best - base
        total += base + extra
    return total


def potential_bound(inst: Instance) -> float:
    """The experimental node-potential bound (module docstring), seconds, scope any."""
    n, d, B = inst.n, inst.degree, inst.link_bytes_per_s
    M = inst.mp_matrix()
    out, inn = inst.node_out_in_bytes()
    load_ = np.maximum(out, inn)
    ring: list[list] = [[] for _ in range(n)]
    for g in inst.allreduce:
        if g.edge_bytes > 0:
            for s in g.members:
                ring[s].append((g.edge_bytes, [t for t in g.members if t != s]))
    best = 0.0
    for p in (0, 0.5, 1, 2, 4, 8, 16):
        for eps in (0, 0.01, 0.1, 0.3):
            w = (load_ / load_.max()) ** p + eps
            ends = 0.5 * (w * out).sum() + 0.5 * (w * inn).sum()
            relays = max(_relays(M, ring, w, d), _relays(M.T, ring, w, d))
            best = max(best, (ends + relays) / (B * d * w.sum()))
    return float(best)


def _plain(x):
    """Read-only mappings (an instance's ``meta``) as dicts, as the headline read them."""
    return {k: _plain(v) for k, v in x.items()} if isinstance(x, Mapping) else x


def headline_rows() -> pd.DataFrame:
    df = pd.read_csv(ROOT / "results" / "headline.csv")
    return df.set_index(["family", "workload", "n", "degree", "link_gbps"])


def closed(best: float, old: float, new: float) -> float | None:
    if best - old <= 1e-4 * best:
        return None  # nothing left to close
    return max(0.0, min(new, best) - old) / (best - old)


def timed(f, *args):
    c0 = time.process_time()
    value = f(*args)
    return value, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--families", nargs="+", default=["coopt", "mixed"])
    ap.add_argument("--degree", type=int, default=4)
    ap.add_argument("--sizes", nargs="+", type=int, default=[32, 64, 128])
    ap.add_argument("--no-potential", action="store_true", help="skip the experimental family")
    ap.add_argument("--csv", default=None)
    args = ap.parse_args()
    print(f"# bench_bound_families: {load()}; 2 cores, 24 GiB, shared", flush=True)
    head = headline_rows()
    rows = []
    for fam in args.families:
        for path in sorted(glob.glob(str(ROOT / "instances" / fam / "*.json"))):
            inst = Instance.load(path)
            if inst.degree != args.degree or inst.n not in args.sizes:
                continue
            key = (fam, workload_of(_plain(inst.meta)), inst.n, inst.degree, inst.link_gbps)
            if key not in head.index:
                print(f"{inst.name}: no headline row, skipped", flush=True)
                continue
            h = head.loc[key]
            h = h.iloc[0] if isinstance(h, pd.DataFrame) else h
            row = {"family": fam, "instance": inst.name, "n": inst.n, "best_s": h["best_s"],
                   "best_rings": h["best_rings"], "old_bound_s": h["bound_s"],
                   "old_by": h["bound_by"]}
            row["ideal"], row["ideal_cpu"] = timed(ideal_switch_time, inst)
            row["moore"], row["moore_cpu"] = timed(moore_lower_bound, inst)
            row["ph_any"], row["ph_any_cpu"] = timed(port_hop_bound, inst, "any")
            row["ph_totient"], row["ph_totient_cpu"] = timed(port_hop_bound, inst, "totient")
            for scope in ("any", "totient"):
                row[f"matching_{scope}"], row[f"matching_{scope}_cpu"] = timed(
                    matching_bound, inst, scope)
            scope = "totient" if row["best_rings"] == "totient" else "any"
            row["matching"], row["matching_cpu"] = (row[f"matching_{scope}"],
                                                    row[f"matching_{scope}_cpu"])
            if not args.no_potential:
                row["potential"], row["potential_cpu"] = timed(potential_bound, inst)
            old = row["old_bound_s"]
            for b in ("matching", "potential"):
                if b in row:
                    row[f"closed_{b}"] = closed(row["best_s"], old, row[b])
            row["old_gap_pct"] = 100 * (row["best_s"] - old) / row["best_s"]
            for b in ("matching", "potential"):
                if b in row:
                    row[f"gap_{b}_pct"] = 100 * (row["best_s"] - max(old, row[b])) / row["best_s"]
            rows.append(row)
            pot = (f" potential {row['potential']:.5g} ({row['potential_cpu']:.1f}s)"
                   if "potential" in row else "")
            print(f"{inst.name:24s} best {row['best_s']:.5g} ({row['best_rings']}) old "
                  f"{old:.5g} ideal {row['ideal']:.5g} moore {row['moore']:.5g} ph_any "
                  f"{row['ph_any']:.5g} ph_tot {row['ph_totient']:.5g} matching any "
                  f"{row['matching_any']:.5g} ({row['matching_any_cpu']:.2f}s) totient "
                  f"{row['matching_totient']:.5g} ({row['matching_totient_cpu']:.2f}s){pot} gap "
                  f"{row['old_gap_pct']:.2f}% -> {row['gap_matching_pct']:.2f}% | {load()}",
                  flush=True)
    df = pd.DataFrame(rows)
    if args.csv:
        df.to_csv(args.csv, index=False)
    if df.empty:
        return
    print("\n# share of the certified gap closed (instances with an open gap), per family")
    for fam, grp in df.groupby("family"):
        open_ = grp[[x is not None and x == x for x in grp["closed_matching"]]]
        for b in [b for b in ("matching", "potential") if f"closed_{b}" in grp]:
            v = [0.0 if x is None or x != x else float(x) for x in open_[f"closed_{b}"]]
            helped = sum(1 for x in v if x > 0)
            new = open_[f"gap_{b}_pct"]
            print(f"{fam:6s} closed_{b:10s} median {100 * statistics.median(v):5.1f}%  max "
                  f"{100 * max(v):5.1f}%  helped {helped}/{len(v)}; certified gap median "
                  f"{open_['old_gap_pct'].median():.2f}% -> {new.median():.2f}%, max "
                  f"{open_['old_gap_pct'].max():.2f}% -> {new.max():.2f}%")
        for scope in ("any", "totient"):
            cpu = grp[f"matching_{scope}_cpu"]
            print(f"{fam:6s} matching_{scope} CPU s: median {cpu.median():.2f}, max "
                  f"{cpu.max():.2f}")
    print(f"# {load()}")


if __name__ == "__main__":
    main()
