"""The validation table: does the fluid objective predict the simulated iteration?

For every instance of the headline families (``coopt``, ``mixed``) that the run store holds,
the solutions of TopologyFinder and TotientPerms with their own routing and with LP routing
(``topologyfinder``, ``totientperms``, ``-lp``) and the best solution are simulated
(:mod:`topoopt_milp.core.simulate`) and compared with their fluid ``T_comm``. The run store
keeps objectives, not solutions, so the solutions are made again here: the four TopoOpt
methods are deterministic (seed 0) and give the headline's solutions back (the row records
both objectives); the ``best`` row is the best of those four, ``demand-greedy-lp`` and
``alloc-alternate`` re-run with ``best_time_limit`` seconds (the headline's alloc-alternate
ran 60 s, so the re-run may end above the headline's best: ``best_headline_s`` says by how
much).

Columns per (instance, method): ``fluid_s`` (the fluid ``T_comm``, also what the checker
recomputes), ``simulated_s`` (rings and MP together, no latency), ``sim_ratio`` = simulated /
fluid, ``ar_sim_ratio`` and ``mp_sim_ratio`` (the rings alone, the MP flows alone, each against its
own fluid time: what step synchronisation and multi-hop MP contention cost separately),
``latency_sim_ratio`` (simulated with ``LATENCY_S`` per hop and ``OVERHEAD_S`` per message,
against the fluid time with its latency term), ``critical`` (what ends last), ``sim_wall_s``.

Rows are cached in ``simulation.csv``: a re-run simulates only what is missing.

Which instances (:func:`plan_of_simulation`): the quick plan simulates its own subset (the
n <= 16 instances it runs, with a 5 s alloc-alternate); the full plan those up to
``n = FULL_MAX_N`` (128: the 103 coopt and mixed instances, n = 12 to 128).
``topoopt-milp reproduce --simulation-only`` regenerates this table alone from the
existing store (no sweep, no other file); with ``--cached-only`` it simulates nothing and
writes the table of the instances whose rows the csv holds (after an interrupted run).
Measured cost of one instance's rows (six solves, five solutions simulated four times each):
n = 32 21-76 s wall (8-27 CPU s, load 3-8); n = 64, 2026-12-04 (load 3-6 on 2 shared cores,
23 of them with the engine before core/maxmin_kernel.py's bottleneck lists): 9 s to 10 min
wall per instance (mixed-n64-d8-g4-mp05 the slowest), the 30 in 58 min wall with up to
three processes, 56 min of it simulating (summed ``sim_wall_s``). The LP-routed solutions
take most of it (dlrm-n64-d4, TF+LP: 12 CPU s for its four simulations). n = 128,
2026-12-05, level engine (load 3-4.5): the LP-routed solutions take 44 s to 12 min wall
each for their four simulations (candle-n128-d4 44-62 s, candle-n128-d8 245-288 s,
dlrm-n128-d4 730 s for TF+LP; bert-n128-d8 1149-1560 s in an earlier run, engine not
recorded), so the 24 instances take hours; 4 of them (bert and candle, d = 4 and 8) were in
``results/simulation.csv`` after that run. A solution met again among one instance's rows is
not simulated again (:func:`instance_rows`): the best row always repeats one of the others,
and at n = 128 TF+LP and TP+LP are often one solution (172 of the csv's 415 rows then
repeated another row's columns). With that, 2026-12-05 (load 3-6.6, two runs in parallel on
disjoint instances, their rows merged): dlrm-n128-d4 1032 s wall (TF+LP 689 s, TP+LP 341 s,
best reused), gpt3-13b-n128-d4 351 s, gpt3-1.3b-n128-d8 188 s, the other coopt n = 128
instances 0.1-102 s. Since route-milp returns vertex routings (crossover; its module
docstring), the whole table (103 instances, every row solved and simulated again) took 38
min wall in two processes on disjoint halves (2026-12-05, load about 2): 1,791 s of
simulation in all, 1,472 s of it at n = 128, the slowest instance ncf-n128-d8 (TP+LP 345 s
for its four simulations).
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.instance import Instance
from ..core.simulate import simulate
from ..pipeline import solve_checked
from .headline import FAMILIES, headline_table, workload_of
from .names import inside
from .render import render

log = logging.getLogger(__name__)

TOPOOPT = ("topologyfinder", "totientperms", "topologyfinder-lp", "totientperms-lp")
BEST_CANDIDATES = ("demand-greedy-lp", "alloc-alternate")
METHODS = (*TOPOOPT, "best")
LATENCY_S = 1e-6  # per hop: cut-through forwarding through a server NIC
OVERHEAD_S = 5e-6  # per message: launch and completion of one RDMA transfer
SHORT = {"topologyfinder": "TF", "totientperms": "TP", "topologyfinder-lp": "TF+LP",
         "totientperms-lp": "TP+LP", "best": "best"}
COLUMNS = ["family", "instance", "workload", "n", "degree", "link_gbps", "method", "solved_by",
           "headline_s", "fluid_s", "simulated_s", "sim_ratio", "ar_sim_ratio",
           "mp_sim_ratio", "latency_sim_ratio", "critical", "best_headline_s", "sim_wall_s"]


FULL_MAX_N = 128


def plan_of_simulation(quick: bool) -> dict:
    """``max_n`` and ``best_time_limit`` of the quick and the full plan (module docstring)."""
    return {"max_n": 16, "best_time_limit": 5.0} if quick else {
        "max_n": FULL_MAX_N, "best_time_limit": 10.0}


def _ratio(sim: float, fluid: float) -> float:
    return sim / fluid if fluid > 0 else math.nan


def simulate_solution(instance: Instance, result) -> dict:
    """The simulation columns of one solution (module docstring)."""
    t0 = time.perf_counter()
    full = simulate(instance, result.topology, result.routing, latency=0.0)
    ar = simulate(instance, result.topology, result.routing, latency=0.0, parts="ar") \
        if result.routing.rings else None
    mp = simulate(instance, result.topology, result.routing, latency=0.0, parts="mp") \
        if instance.mp else None
    lat = simulate(instance, result.topology, result.routing, latency=LATENCY_S,
                   overhead=OVERHEAD_S)
    return {"fluid_s": full.fluid_s, "simulated_s": full.simulated_s, "sim_ratio": full.ratio,
            "ar_sim_ratio": math.nan if ar is None else _ratio(ar.simulated_s, ar.fluid_s),
            "mp_sim_ratio": math.nan if mp is None else _ratio(mp.simulated_s, mp.fluid_s),
            "latency_sim_ratio": lat.ratio, "critical": full.critical,
            "sim_wall_s": time.perf_counter() - t0}


def headline_values(head: dict) -> dict:
    """The headline's objective per simulated method (the ``headline_s`` column)."""
    return {"topologyfinder": head.get("tf_s"), "totientperms": head.get("tp_s"),
            "topologyfinder-lp": head.get("tf_lp_s"), "totientperms-lp": head.get("tp_lp_s"),
            "best": head.get("best_s")}


def _head_of(heads: dict, row: dict) -> dict | None:
    """The headline row of a cached simulation row (``None``: not in today's headline)."""
    try:
        key = (row["family"], int(row["n"]), int(row["degree"]), float(row["link_gbps"]),
               row["workload"])
    except (TypeError, ValueError):  # a row without its instance's columns
        return None
    return heads.get(key)


def instance_rows(path: Path, family: str, headline_row: dict | None,
                  best_time_limit: float) -> list[dict]:
    """The rows of one instance: the four TopoOpt methods and the best of them and the
    candidates of :data:`BEST_CANDIDATES` (each solved here, checked, simulated)."""
    inst = Instance.load(path)
    base = {"family": family, "instance": inst.name, "workload": workload_of(dict(inst.meta)),
            "n": inst.n, "degree": inst.degree, "link_gbps": inst.link_gbps}
    solved = {}
    for method in (*TOPOOPT, *BEST_CANDIDATES):
        limit = best_time_limit if method in BEST_CANDIDATES else 120.0
        res = solve_checked(inst, method, time_limit=limit)
        if res.violations or res.topology is None or res.objective is None:
            log.error("simulation: %s on %s gave no checked solution", method, inst.name)
            continue
        solved[method] = res
    best_method = min(solved, key=lambda m: solved[m].objective) if solved else None
    head = headline_row or {}
    headline = headline_values(head)
    rows = []
    done: dict[tuple, dict] = {}  # simulation columns per distinct solution
    for method in METHODS:
        key = best_method if method == "best" else method
        if key not in solved:
            continue
        res = solved[key]
        # The best row is always one of the solved solutions, and at n = 128 TF+LP and
        # TP+LP are often the same solution too: the simulation is a function of the
        # topology and routing alone, so a solution met before is not simulated again (its
        # columns are reused, with the seconds this row took, about 0).
        t0 = time.perf_counter()
        same = (res.topology.links.tobytes(), res.routing)
        cols = done.get(same)
        if cols is None:
            cols = done[same] = simulate_solution(inst, res)
        else:
            cols = {**cols, "sim_wall_s": time.perf_counter() - t0}
        row = {**base, "method": method, "solved_by": key, "headline_s": headline.get(method),
               "best_headline_s": head.get("best_s"), **cols}
        rows.append(row)
        log.info("simulation %s %s: fluid %.4g s, simulated %.4g s (ratio %.4f) in %.1f s",
                 inst.name, method, row["fluid_s"], row["simulated_s"], row["sim_ratio"],
                 row["sim_wall_s"])
    return rows


def simulation_table(runs: pd.DataFrame, out: Path, library: Path | None = None,
                     max_n: int | None = None, best_time_limit: float = 10.0,
                     families=FAMILIES, cached_only: bool = False) -> pd.DataFrame:
    """Rows for every headline-family instance of ``runs`` with ``n <= max_n`` (all when
    ``None``), read from ``library/<family>/<file name>`` (else the path the store records);
    rows already in ``out/simulation.csv`` (same instance and method) are kept, not
    recomputed. ``cached_only``: nothing is solved or simulated, instances without all their
    rows in the csv are left out (the table of an interrupted run)."""
    cache = out / "simulation.csv"
    old = pd.read_csv(cache) if cache.exists() else pd.DataFrame(columns=COLUMNS)
    head = headline_table(runs, families=families)
    heads = {(r["family"], int(r["n"]), int(r["degree"]), float(r["link_gbps"]), r["workload"]):
             r for r in head.to_dict(orient="records")}
    runs = runs[runs["family"].isin(list(families))]
    todo = runs.drop_duplicates("instance_hash")[["family", "instance_name", "instance_path", "n"]]
    rows = []
    for rec in todo.sort_values(["n", "instance_name"]).to_dict(orient="records"):
        if max_n is not None and int(rec["n"]) > max_n:
            continue
        have = old[(old["family"] == rec["family"]) & (old["instance"] == rec["instance_name"])]
        if len(have) and set(METHODS) <= set(have["method"]):
            # the simulation is of solutions solved here; the headline's numbers beside them
            # are today's (a better best solution in the store changes best_headline_s)
            for row in have.to_dict(orient="records"):
                h = _head_of(heads, row)
                if h is not None:
                    row = {**row, "headline_s": headline_values(h).get(row["method"]),
                           "best_headline_s": h.get("best_s")}
                rows.append(row)
            continue
        if cached_only:
            log.warning("simulation: %s has no rows in %s, left out", rec["instance_name"], cache)
            continue
        path = Path(str(rec["instance_path"]))
        if library is not None and (library / rec["family"] / path.name).is_file():
            path = library / rec["family"] / path.name
        if not path.is_file():
            log.warning("simulation: %s not found, skipped", path)
            continue
        inst = Instance.load(path)
        key = (rec["family"], inst.n, inst.degree, float(inst.link_gbps), workload_of(dict(inst.meta)))
        rows.extend(instance_rows(path, rec["family"], heads.get(key), best_time_limit))
        # keep what is done, and the cached rows of instances later in the order: without
        # them an interrupted run dropped those from the csv (seen on 2026-12-05: a run
        # started at mixed-n128-* lost resnet50-n128-* and vgg16-n128-*)
        seen = {(r["family"], r["instance"]) for r in rows}
        later = old[[(f, i) not in seen for f, i in zip(old["family"], old["instance"])]]
        pd.concat([pd.DataFrame(rows, columns=COLUMNS), later]).to_csv(cache, index=False)
    df = pd.DataFrame(rows, columns=COLUMNS)
    return df.sort_values(["family", "n", "workload", "degree", "link_gbps",
                           "method"]).reset_index(drop=True)


# -- summaries ---------------------------------------------------------------------------
def ratio_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per method: instances, median and maximum of each ratio."""
    rows = []
    for method in METHODS:
        g = df[df["method"] == method]
        if g.empty:
            continue
        row = {"method": SHORT[method], "instances": len(g)}
        for col in ("sim_ratio", "ar_sim_ratio", "mp_sim_ratio", "latency_sim_ratio"):
            v = pd.to_numeric(g[col], errors="coerce").dropna()
            row[f"median_{col}"] = v.median() if len(v) else math.nan
            row[f"max_{col}"] = v.max() if len(v) else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def ranking_checks(df: pd.DataFrame, tol: float = 1e-9) -> dict[str, tuple[int, int]]:
    """How many instances keep each headline comparison's sign in simulation, out of how
    many: ``(kept, total)`` for TF vs TP (who is faster, own routing and LP routing), own vs
    LP routing (the routing gap, for TF and TP) and TF+LP vs best (the topology gap)."""
    wide = df.pivot_table(index=["family", "instance"], columns="method",
                          values=["fluid_s", "simulated_s"], aggfunc="first")

    def sign(x: float, y: float) -> int:
        return 0 if abs(x - y) <= tol * max(abs(x), abs(y)) else (1 if x > y else -1)

    pairs = {"TF vs TP (own routing)": ("topologyfinder", "totientperms"),
             "TF+LP vs TP+LP": ("topologyfinder-lp", "totientperms-lp"),
             "TF own vs TF+LP (routing gap)": ("topologyfinder", "topologyfinder-lp"),
             "TP own vs TP+LP (routing gap)": ("totientperms", "totientperms-lp"),
             "TF+LP vs best (topology gap)": ("topologyfinder-lp", "best")}
    out = {}
    for label, (a, b) in pairs.items():
        kept = total = 0
        for _, row in wide.iterrows():
            try:
                fa, fb = row[("fluid_s", a)], row[("fluid_s", b)]
                sa, sb = row[("simulated_s", a)], row[("simulated_s", b)]
            except KeyError:
                continue
            if any(pd.isna(v) for v in (fa, fb, sa, sb)):
                continue
            total += 1
            kept += sign(fa, fb) == sign(sa, sb)
        out[label] = (kept, total)
    return out


def summary_lines(df: pd.DataFrame) -> list[str]:
    if df.empty:
        return ["no coopt or mixed instance simulated"]
    s = ratio_summary(df)
    parts = [f"{r['method']} median {r['median_sim_ratio']:.4f}, max {r['max_sim_ratio']:.4f} "
             f"({r['instances']})" for r in s.to_dict(orient="records")]
    checks = ranking_checks(df)
    kept = "; ".join(f"{k}: {a}/{b}" for k, (a, b) in checks.items())
    return [f"Simulated / fluid time (no latency): {'; '.join(parts)}.",
            f"Headline comparisons whose sign survives simulation (instances): {kept}."]


FORMATS = {c: "{:.4g}" for c in ("headline_s", "fluid_s", "simulated_s", "best_headline_s")} | {
    c: "{:.4f}" for c in ("sim_ratio", "ar_sim_ratio", "mp_sim_ratio", "latency_sim_ratio")} | {
    "link_gbps": "{:g}", "sim_wall_s": "{:.2f}"}
SUMMARY_FORMATS = {f"{s}_{c}": "{:.4f}" for s in ("median", "max")
                   for c in ("sim_ratio", "ar_sim_ratio", "mp_sim_ratio", "latency_sim_ratio")}


def caption(df: pd.DataFrame) -> str:
    return ("Simulated against fluid communication time (topoopt-milp simulate: ring "
            "reduce-scatter/all-gather in 2(k-1) synchronised steps per ring, MP flows on their "
            "paths, max-min fair sharing; no latency unless named). sim_ratio = simulated / "
            "fluid; ar_sim_ratio, mp_sim_ratio: the rings alone and the MP flows alone; "
            "latency_sim_ratio: with "
            f"{LATENCY_S * 1e6:g} us per hop and {OVERHEAD_S * 1e6:g} us per message, against "
            "the fluid time plus max hops x latency. best = the best of TF, TP (own and LP "
            "routing), demand-greedy+LP and alloc-alternate re-run here (solved_by). "
            + " ".join(summary_lines(df)))


def write_simulation(runs: pd.DataFrame, out: Path, library: Path | None = None,
                     max_n: int | None = None, best_time_limit: float = 10.0,
                     cached_only: bool = False) -> list[Path]:
    """``out/simulation.{csv,md,png}`` (and the figure's PDF); returns the paths.
    ``cached_only``: see :func:`simulation_table`."""
    df = simulation_table(runs, out, library, max_n=max_n, best_time_limit=best_time_limit,
                          cached_only=cached_only)
    written = []
    csv_path = inside(out, "simulation.csv")
    csv_path.write_text(render(df, "csv"))
    written.append(csv_path)
    md = inside(out, "simulation.md")
    summary = render(ratio_summary(df), "md", formats=SUMMARY_FORMATS) if len(df) else ""
    md.write_text(render(df, "md", caption=caption(df), formats=FORMATS) + "\n\n" + summary + "\n")
    written.append(md)
    if len(df):
        written.extend(plot_simulation(df, inside(out, "simulation.png")))
    return written


def plot_simulation(df: pd.DataFrame, out: Path) -> list[Path]:
    """Simulated against fluid time, one panel per method: the ratio simulated / fluid (y)
    over the fluid ``T_comm`` (x, log scale), one marker per instance; 1 (dashed) is where
    the fluid objective predicts the simulated iteration exactly."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    from .plots import STYLE, TEXT_IN, method_style, save

    methods = [m for m in METHODS if (df["method"] == m).any()]
    ratio = pd.to_numeric(df["sim_ratio"], errors="coerce")
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(methods), figsize=(TEXT_IN, 2.3), sharex=True,
                                 sharey=True, squeeze=False, layout="constrained")
        for ax, method in zip(axes[0], methods, strict=True):
            g = df[df["method"] == method]
            style = method_style("alloc-alternate" if method == "best" else method)
            for family, marker in (("coopt", "o"), ("mixed", "s")):
                h = g[g["family"] == family]
                if len(h):
                    ax.scatter(h["fluid_s"], h["sim_ratio"], s=10, marker=marker,
                               facecolors="none", edgecolors=style["color"], linewidths=0.7,
                               label=family)
            ax.axhline(1.0, color="k", linestyle="--", linewidth=0.6)
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())
            r = pd.to_numeric(g["sim_ratio"], errors="coerce")
            ax.set_title(f"{SHORT[method]}\nmedian {r.median():.3f}, max {r.max():.3f}")
            ax.set_xlabel("fluid T_comm [s]")
            ax.grid(True, alpha=0.3, linewidth=0.5)
        top = float(np.nanmax(ratio)) if len(ratio.dropna()) else 1.0
        axes[0][0].set_ylim(0.98, max(1.05, top * 1.03))
        axes[0][0].set_ylabel("simulated / fluid")
        axes[0][0].legend(frameon=False, loc="upper left")
        fig.suptitle("Simulated iteration (max-min flows, synchronised ring steps) vs fluid "
                     "objective", fontsize=STYLE["axes.titlesize"])
    return save(fig, out)
