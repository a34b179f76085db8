"""Figures from the run store (matplotlib, Agg backend: no display needed).

Kinds (``topoopt-milp plot STORE --kind K --out FIG.png|pdf|svg``):

* ``gap`` -- mean gap to the best covering bound (``gap_pct`` of :mod:`.gaps`) over the
  instances of each size ``n``, one line per method.
* ``runtime`` -- shifted geometric mean runtime (shift 1 s) of the solved runs at each ``n``,
  one line per method, the line style giving the backend (heuristic solid, milp dashed, cpsat
  dotted); log scale.
* ``profile`` -- Dolan-More performance profile. For instance ``p`` and method ``s`` with
  measure ``t_ps`` (the seed-mean objective by default, or the runtime), the ratio
  ``r_ps = t_ps / min_s t_ps`` (``inf`` when ``s`` found no solution), and the curve of ``s``
  is ``rho_s(tau) = |{p : r_ps <= tau}| / |P|`` over the instances every method was run on.
* ``iteration`` -- iteration time against link bandwidth for workload results.

Workload-results contract (``iteration``): a run belongs to a workload when its instance's
``meta`` has a string ``"workload"`` (the model, e.g. ``"dlrm"``); the x value is
``meta["bandwidth_gbps"]`` when present, else the instance's ``link_gbps``; the y value is the
run's ``metrics["iteration_time_s"]`` (compute time + communication time, see
:func:`topoopt_milp.evaluate.iteration_time`). One line per (workload, method), the seed mean
at each bandwidth. Instance generators that want their results plotted set these meta keys.
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")  # before pyplot: figures are files, never windows

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ..errors import InputError
from .gaps import SOLVED, run_gaps  # noqa: E402
from .tables import instance_table, shifted_geomean  # noqa: E402

KINDS = ("gap", "runtime", "profile", "iteration")
_STYLE = {"heuristic": "-", "milp": "--", "cpsat": ":"}


class NoDataError(InputError):
    """The store has no rows the requested figure can use."""


def _finish(fig, ax, out: str, title: str) -> None:
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    entries = len(ax.get_legend_handles_labels()[0])
    if entries > 8:  # a long legend goes beside the axes instead of over the curves
        fig.set_size_inches(fig.get_size_inches()[0] + 3.5, fig.get_size_inches()[1])
        ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    elif entries:
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def plot_gap(runs: pd.DataFrame, out: str, **bound_kw) -> None:
    g = run_gaps(runs, **bound_kw)
    g = g[g["gap_pct"].notna()]
    if g.empty:
        raise NoDataError("plot gap: no solved run has a bound to compare with")
    # Mean over seeds per instance first, then over the instances of each n.
    per_inst = g.groupby(["method", "instance_hash", "n"], as_index=False)["gap_pct"].mean()
    fig, ax = plt.subplots(figsize=(6, 4))
    for method, grp in per_inst.groupby("method"):
        s = grp.groupby("n")["gap_pct"].mean().sort_index()
        ax.plot(s.index, s.values, marker="o", label=method)
    ax.set_xlabel("servers n")
    ax.set_ylabel("gap to best bound [%]")
    _finish(fig, ax, out, "Gap to the best bound")


def plot_runtime(runs: pd.DataFrame, out: str) -> None:
    ok = runs[runs["status"].isin(SOLVED) & runs["runtime_s"].notna()]
    if ok.empty:
        raise NoDataError("plot runtime: no solved run")
    fig, ax = plt.subplots(figsize=(6, 4))
    for method, grp in ok.groupby("method"):
        backend = grp["method_backend"].iloc[0]
        s = grp.groupby("n")["runtime_s"].agg(lambda x: shifted_geomean(x.astype(float))).sort_index()
        ax.plot(s.index, s.values, marker="o", linestyle=_STYLE.get(backend, "-."),
                label=f"{method} [{backend}]")
    ax.set_xlabel("servers n")
    ax.set_ylabel("runtime [s] (shifted geometric mean, shift 1 s)")
    ax.set_yscale("log")
    _finish(fig, ax, out, "Runtime scaling")


def profile_ratios(runs: pd.DataFrame, measure: str = "objective") -> pd.DataFrame:
    """Performance ratios ``r_ps`` (rows: instances, columns: methods); ``inf`` = failure."""
    tab = instance_table(runs)
    col = {"objective": "objective", "runtime": "runtime_s"}.get(measure)
    if col is None:
        raise InputError(f"measure: unknown profile measure {measure!r} (known: objective, runtime)")
    wide = tab.pivot_table(index="instance", columns="method", values=col, aggfunc="first", dropna=False)
    # Keep instances on which every method was run (a missing run is not a failure).
    ran = tab.pivot_table(index="instance", columns="method", values="seeds", aggfunc="first")
    wide = wide.loc[ran.notna().all(axis=1)].astype(float)
    if wide.empty:
        raise NoDataError("plot profile: no instance was run with every method")
    wide = wide.where(wide > 0, np.nan) if measure == "runtime" else wide
    best = wide.min(axis=1)
    ratios = wide.div(best, axis=0)
    return ratios.fillna(math.inf)


def plot_profile(runs: pd.DataFrame, out: str, measure: str = "objective") -> None:
    ratios = profile_ratios(runs, measure)
    finite = ratios.replace(math.inf, np.nan).stack()
    tau_max = max(float(finite.max()) if not finite.empty else 1.0, 1.0) * 1.05 + 1e-9
    fig, ax = plt.subplots(figsize=(6, 4))
    n_inst = len(ratios)
    for method in ratios.columns:
        r = np.sort(ratios[method].to_numpy())
        r = r[np.isfinite(r)]
        xs = np.concatenate([[1.0], r, [tau_max]])
        ys = np.concatenate([[0.0], np.arange(1, len(r) + 1) / n_inst, [len(r) / n_inst]])
        # rho(1) counts the methods that attain the best value.
        ys[0] = float((r <= 1.0 + 1e-12).sum()) / n_inst
        ax.step(xs, ys, where="post", label=method)
    ax.set_xlabel(f"performance ratio tau ({measure} / best {measure})")
    ax.set_ylabel("fraction of instances with ratio <= tau")
    ax.set_ylim(-0.02, 1.02)
    if tau_max > 10:
        ax.set_xscale("log", base=2)
    _finish(fig, ax, out, f"Performance profile ({n_inst} instances)")


def workload_rows(runs: pd.DataFrame) -> pd.DataFrame:
    """Rows obeying the workload contract, with ``workload``, ``bandwidth_gbps`` and
    ``iteration_time_s`` columns."""
    def meta_get(m, key):
        return m.get(key) if isinstance(m, dict) else None

    df = runs[runs["status"].isin(SOLVED)].copy()
    df["workload"] = df["instance_meta"].map(lambda m: meta_get(m, "workload"))
    df = df[df["workload"].map(lambda w: isinstance(w, str)).astype(bool)]
    bw = df["instance_meta"].map(lambda m: meta_get(m, "bandwidth_gbps"))
    df["bandwidth_gbps"] = bw.where(bw.notna(), df["link_gbps"]).astype(float)
    df["iteration_time_s"] = df["metrics"].map(lambda m: meta_get(m, "iteration_time_s"))
    return df[df["iteration_time_s"].notna()]


def plot_iteration(runs: pd.DataFrame, out: str) -> None:
    df = workload_rows(runs)
    if df.empty:
        raise NoDataError("plot iteration: no solved run on an instance with meta.workload")
    fig, ax = plt.subplots(figsize=(6, 4))
    # colour = workload, marker and line style = method, so both can be told apart
    colours = {w: f"C{i % 10}" for i, w in enumerate(sorted(df["workload"].unique()))}
    methods = sorted(df["method"].unique())
    styles = {m: ("osv^Dxp*"[i % 8], ["-", "--", ":", "-."][i % 4]) for i, m in enumerate(methods)}
    for (wl, method), grp in df.groupby(["workload", "method"]):
        s = grp.groupby("bandwidth_gbps")["iteration_time_s"].mean().sort_index()
        marker, line = styles[method]
        ax.plot(s.index, s.values, marker=marker, linestyle=line, color=colours[wl],
                label=f"{wl}: {method}")
    ax.set_xlabel("link bandwidth B [Gbps]")
    ax.set_ylabel("iteration time [s]")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _finish(fig, ax, out, "Iteration time vs bandwidth")


def plot(runs: pd.DataFrame, kind: str, out: str, measure: str = "objective", **bound_kw) -> None:
    """Draw figure ``kind`` from the run rows into ``out`` (format from its extension)."""
    if kind not in KINDS:
        raise InputError(f"kind: unknown figure {kind!r} (known: {', '.join(KINDS)})")
    if runs.empty:
        raise NoDataError(f"plot {kind}: the store holds no runs")
    if kind == "gap":
        plot_gap(runs, out, **bound_kw)
    elif kind == "runtime":
        plot_runtime(runs, out)
    elif kind == "profile":
        plot_profile(runs, out, measure)
    elif kind == "iteration":
        plot_iteration(runs, out)
    else:
        raise InputError(f"kind: unknown figure {kind!r} (known: {', '.join(KINDS)})")
