"""Figures from the run store (matplotlib, Agg backend: no display needed).

Kinds (``topoopt-milp plot STORE --kind K --out FIG.png|pdf|svg``):

* ``gap`` -- mean gap to the best covering bound (``gap_pct`` of :mod:`.gaps`) over the
  instances at each value of the varying parameter (:func:`choose_axes`), one line per
  method; the title names the family and the bounds used.
* ``runtime`` -- shifted geometric mean runtime (shift 1 s) of the solved runs at each value
  of the varying parameter, one line per method; log scale.
* ``profile`` -- Dolan-More performance profile. For instance ``p`` and method ``s`` with
  measure ``t_ps`` (the seed-mean objective by default, or the runtime), the ratio
  ``r_ps = t_ps / min_s t_ps`` (``inf`` when ``s`` found no solution), and the curve of ``s``
  is ``rho_s(tau) = |{p : r_ps <= tau}| / |P|`` over the instances every method was run on.
* ``iteration`` -- iteration time against link bandwidth for workload results, one panel
  per workload.

**Which x axis.** A family varies some instance parameters and fixes others (the bandwidth
family: only the link rate; dnn: ``n`` and ``d``; mixed: the MP share and ``n``).
:func:`choose_axes` reads them from the runs: among the parameters of :data:`AXES` that take
more than one value, the x axis is the one with the most values (ties: the order of
:data:`AXES`); the model size is used only when none of them varies. A second varying
parameter with at most four values gives one panel per value, when every panel then still
has two x values (else its values are averaged, and the axis label says so). An axis whose
values span a factor of 10 or more is logarithmic (shares stay linear).

**Telling methods apart.** Every method keeps one colour, marker and line style in every
figure (its place in the registry); markers are hollow so that coinciding points of two
methods both show, and a series equal to another at every point says so in its legend entry
(``totientperms (= topologyfinder)``).

Figures are sized for a column of a two-column paper (3.4 in wide, 7 pt text; panels use
the text width) and :func:`save` writes a PDF beside every PNG.

Workload-results contract (``iteration``): a run belongs to a workload when its instance's
``meta`` has a string ``"workload"`` (the model, e.g. ``"dlrm"``); the x value is
``meta["bandwidth_gbps"]`` when present, else the instance's ``link_gbps``; the y value is the
run's ``metrics["iteration_time_s"]`` (compute time + communication time, see
:func:`topoopt_milp.core.evaluate.iteration_time`). One line per method in each workload's panel,
the seed mean at each bandwidth.
"""

from __future__ import annotations

import io
import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot: figures are files, never windows

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from .. import registry  # noqa: E402
from ..core.errors import InputError  # noqa: E402
from ..core.outfile import write_bytes  # noqa: E402
from .gaps import SOLVED, run_gaps  # noqa: E402
from .tables import instance_table, natural_key, shifted_geomean  # noqa: E402

KINDS = ("gap", "runtime", "profile", "iteration")
COLUMN_IN = 3.4   # a column of a two-column paper
TEXT_IN = 7.0     # the text width: figures with panels
HEIGHT_IN = 2.4
STYLE = {"font.size": 7, "axes.titlesize": 7, "axes.labelsize": 7, "legend.fontsize": 6,
         "xtick.labelsize": 6, "ytick.labelsize": 6, "lines.linewidth": 1.0,
         "lines.markersize": 4, "axes.linewidth": 0.6, "savefig.dpi": 200,
         "pdf.fonttype": 42, "svg.fonttype": "none"}
_MARKERS = "osD^vP*X<>"
_LINES = ("-", "--", ":", "-.")
COINCIDE_RTOL = 1e-9


class NoDataError(InputError):
    """The store has no rows the requested figure can use."""


# -- styles and coinciding series ------------------------------------------------------------

def method_style(method: str) -> dict:
    """Colour, marker and line style of ``method``, the same in every figure."""
    names = list(registry.METHODS)
    i = names.index(method) if method in names else len(names) + zlib.crc32(method.encode()) % 20
    return {"color": f"C{i % 10}", "marker": _MARKERS[i % 9],  # periods 10, 9, 4: distinct
            "linestyle": _LINES[i % len(_LINES)], "markerfacecolor": "none"}


def coinciding(series: dict[str, pd.Series]) -> dict[str, str]:
    """``{method: earlier method}`` for every series equal to an earlier one (same x values,
    y equal within :data:`COINCIDE_RTOL`)."""
    same: dict[str, str] = {}
    names = list(series)
    for k, a in enumerate(names):
        for b in names[:k]:
            if b in same:
                continue
            sa, sb = series[a], series[b]
            if list(sa.index) == list(sb.index) and np.allclose(
                    sa.to_numpy(float), sb.to_numpy(float), rtol=COINCIDE_RTOL, atol=1e-15,
                    equal_nan=True):
                same[a] = b
                break
    return same


def _labels(panels: list[dict[str, pd.Series]]) -> dict[str, str]:
    """Legend label per method: its name, with ``(= other)`` when its series equal an earlier
    method's in every panel."""
    methods = list(dict.fromkeys(m for series in panels for m in series))
    joined = {m: pd.concat({k: series[m] for k, series in enumerate(panels) if m in series})
              for m in methods}
    same = coinciding(joined)
    return {m: m + (f" (= {same[m]})" if m in same else "") for m in methods}


def _draw_lines(ax, series: dict[str, pd.Series], labels: dict[str, str]) -> None:
    for method, s in series.items():
        ax.plot(s.index, s.to_numpy(float), label=labels[method], **method_style(method))


# -- which parameter varies --------------------------------------------------------------------

def _meta(m, *keys):
    for k in keys:
        if not isinstance(m, dict):
            return None
        m = m.get(k)
    return m


def _number(v):
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else np.nan


@dataclass(frozen=True)
class Axis:
    """An instance parameter a figure can be drawn against."""

    key: str
    label: str
    value: Callable[[pd.Series], float]
    percent: bool = False


AXES = (
    Axis("mp_share", "MP share of bytes", lambda r: _number(_meta(r["instance_meta"], "params",
                                                                  "mp_share")), percent=True),
    Axis("n", "servers n", lambda r: _number(r["n"])),
    Axis("link_gbps", "link rate B [Gbps]", lambda r: _number(r["link_gbps"])),
    Axis("degree", "ports per server d", lambda r: _number(r["degree"])),
)
MODEL_AXIS = Axis("model_params", "model parameters (log)",
                  lambda r: _number(_meta(r["instance_meta"], "params")))


def instance_parameters(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run: the value of every axis of :data:`AXES` and :data:`MODEL_AXIS`."""
    out = pd.DataFrame(index=runs.index)
    for axis in (*AXES, MODEL_AXIS):
        out[axis.key] = [axis.value(r) for _, r in runs.iterrows()] if len(runs) else []
    return out


def choose_axes(params: pd.DataFrame) -> tuple[Axis, Axis | None]:
    """The x axis and the panel axis (or ``None``) of a family (module docstring)."""
    counts = {a.key: params[a.key].nunique() for a in (*AXES, MODEL_AXIS)}
    varying = [a for a in AXES if counts[a.key] > 1]
    if not varying:
        x = MODEL_AXIS if counts[MODEL_AXIS.key] > 1 else AXES[1]
        return x, None
    x = max(varying, key=lambda a: (counts[a.key], -AXES.index(a)))
    for p in varying:
        if p is x or counts[p.key] > 4:
            continue
        per_panel = params.groupby(p.key)[x.key].nunique()
        if (per_panel >= 2).all():
            return x, p
    return x, None


def _si(t: float) -> str:
    """``2.5e7`` -> ``25M``, ``1.3e9`` -> ``1.3B``: model sizes on an axis."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(t) >= scale:
            return f"{t / scale:g}{suffix}"
    return f"{t:g}"


def _scale(ax, axis: Axis, values) -> None:
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if axis is MODEL_AXIS:
        # model sizes cluster (GPT-3 13B next to CANDLE's 12.6B): decade ticks, SI labels
        if len(v) and v.min() > 0 and v.max() / v.min() >= 10:
            ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _: _si(t)))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda t, _: ""))
        return
    if len(v) and v.min() > 0 and v.max() / v.min() >= 10 and not axis.percent:
        powers_of_two = np.allclose(np.log2(v), np.round(np.log2(v)))
        ax.set_xscale("log", base=2 if powers_of_two else 10)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _: f"{t:g}"))
    if axis.percent:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _: f"{100 * t:g}%"))
    if len(v) and len(np.unique(v)) <= 8:
        ax.set_xticks(np.unique(v))
        ax.minorticks_off() if ax.get_xscale() == "log" else None


# -- figure scaffolding -------------------------------------------------------------------------

def _panels(count: int):
    width = COLUMN_IN if count == 1 else TEXT_IN
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, count, figsize=(width, HEIGHT_IN), sharey=True,
                                 squeeze=False, layout="constrained")
    return fig, list(axes[0])


def outputs(out) -> list[Path]:
    """The files a figure goes to: ``out`` (one path or several, one drawing), and a PDF
    beside a PNG when no vector format (PDF, SVG) is among them."""
    paths = [Path(out)] if isinstance(out, str | Path) else [Path(p) for p in out]
    suffixes = {p.suffix.lower() for p in paths}
    if ".png" in suffixes and not suffixes & {".pdf", ".svg"}:
        paths += [p.with_suffix(".pdf") for p in paths if p.suffix.lower() == ".png"]
    return paths


def save(fig, out) -> list[Path]:
    """Write ``fig`` to every file of :func:`outputs` and close it."""
    paths = outputs(out)
    with plt.rc_context(STYLE):
        for p in paths:
            buf = io.BytesIO()  # drawn in memory, written by the one writer of outputs
            fig.savefig(buf, format=p.suffix.lstrip(".").lower() or None)
            write_bytes(p, buf.getvalue())
    plt.close(fig)
    return paths


def _finish(fig, axes, title: str) -> None:
    with plt.rc_context(STYLE):
        for ax in axes:
            ax.grid(True, which="major", alpha=0.3, linewidth=0.5)
        handles, labels = {}, []
        for ax in axes:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                if lab not in handles:
                    handles[lab] = h
                    labels.append(lab)
        fig.suptitle(title, fontsize=STYLE["axes.titlesize"])
        if labels:
            # as many legend columns as fit the figure's width (measured, not guessed)
            renderer = fig.canvas.get_renderer()
            for ncol in range(min(len(labels), 5), 0, -1):
                legend = fig.legend([handles[lab] for lab in labels], labels,
                                    loc="outside lower center", ncol=ncol, frameon=False,
                                    handlelength=2.6, columnspacing=1.2)
                if ncol == 1 or legend.get_window_extent(renderer).width <= 0.94 * fig.bbox.width:
                    break
                legend.remove()
            fig.set_figheight(HEIGHT_IN + 0.13 * math.ceil(len(labels) / ncol))


def _families(runs: pd.DataFrame) -> str:
    fams = sorted(runs["family"].dropna().astype(str).unique(), key=natural_key) \
        if "family" in runs else []
    return ", ".join(fams) if fams else "all runs"


def _by_axes(df: pd.DataFrame, value: str, agg) -> tuple[Axis, Axis | None, dict]:
    """``{panel value: {method: Series(x -> agg(value))}}`` over ``df``'s runs."""
    params = instance_parameters(df)
    x, panel = choose_axes(params.loc[df.index])
    df = df.assign(_x=params[x.key], _p=params[panel.key] if panel else 0.0)
    out: dict = {}
    for p, grp in df.groupby("_p", sort=True):
        out[p] = {m: g.groupby("_x")[value].agg(agg).sort_index()
                  for m, g in sorted(grp.groupby("method"), key=lambda t: method_order(t[0]))}
    return x, panel, out


def method_order(method: str) -> tuple:
    names = list(registry.METHODS)
    return (names.index(method) if method in names else len(names), method)


def _panel_title(panel: Axis | None, value) -> str:
    if panel is None:
        return ""
    text = f"{100 * value:g}%" if panel.percent else f"{value:g}"
    return f"{panel.label.split(' [')[0]} = {text}"


def _line_figure(df: pd.DataFrame, value: str, agg, ylabel: str, title: str, out,
                 ylog: bool = False) -> list[Path]:
    x, panel, data = _by_axes(df, value, agg)
    fig, axes = _panels(len(data))
    labels = _labels(list(data.values()))
    with plt.rc_context(STYLE):
        for ax, (p, series) in zip(axes, data.items(), strict=True):
            _draw_lines(ax, series, labels)
            _scale(ax, x, [v for s in series.values() for v in s.index])
            ax.set_xlabel(x.label + _averaged(df, x, panel))
            ax.set_title(_panel_title(panel, p))
            if ylog:
                ax.set_yscale("log")
        axes[0].set_ylabel(ylabel)
    _finish(fig, axes, title)
    return save(fig, out)


def _averaged(df: pd.DataFrame, x: Axis, panel: Axis | None) -> str:
    """How many instances each point averages, for the x label."""
    keys = [x.key] + ([panel.key] if panel else [])
    per_x = instance_parameters(df).assign(h=df["instance_hash"]).groupby(keys)["h"].nunique()
    if per_x.max() <= 1:
        return ""
    count = f"{per_x.min()}" if per_x.min() == per_x.max() else f"{per_x.min()}-{per_x.max()}"
    return f" ({count} instances per point)"


# -- the figures ------------------------------------------------------------------------------------

def bound_sources(g: pd.DataFrame) -> str:
    """The bounds behind a figure's gaps, in words for its title."""
    src = sorted(g["bound_source"].dropna().unique(), key=lambda s: (s == "analytic", s))
    return ", ".join(src) if src else "none"


def plot_gap(runs: pd.DataFrame, out, **bound_kw) -> list[Path]:
    g = run_gaps(runs, **bound_kw)
    g = g[g["gap_pct"].notna()]
    if g.empty:
        raise NoDataError("plot gap: no solved run has a bound to compare with")
    # the mean over seeds per instance first, then over the instances at each x value
    per_inst = g.groupby(["method", "instance_hash"], as_index=False).agg(
        gap_pct=("gap_pct", "mean"), **{c: (c, "first") for c in (
            "instance_meta", "n", "degree", "link_gbps", "family")})
    title = f"{_families(g)}: gap to the best valid bound ({bound_sources(g)})"
    return _line_figure(per_inst, "gap_pct", "mean", "gap to bound [%]", title, out)


def plot_runtime(runs: pd.DataFrame, out) -> list[Path]:
    ok = runs[runs["status"].isin(SOLVED) & runs["runtime_s"].notna()].copy()
    if ok.empty:
        raise NoDataError("plot runtime: no solved run")
    ok["runtime_s"] = ok["runtime_s"].astype(float)
    title = f"{_families(ok)}: runtime of solved runs"
    return _line_figure(ok, "runtime_s", lambda s: shifted_geomean(s), "runtime [s] "
                        "(shifted geo. mean)", title, out, ylog=True)


def profile_ratios(runs: pd.DataFrame, measure: str = "objective") -> pd.DataFrame:
    """Performance ratios ``r_ps`` (rows: instances, columns: methods); ``inf`` = failure.
    Bounds-only methods (backend ``analytic``: ``lower-bounds``) return no solution by
    design and are left out rather than drawn as failing everywhere."""
    if "method_backend" in runs:
        runs = runs[runs["method_backend"] != "analytic"]
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


def plot_profile(runs: pd.DataFrame, out, measure: str = "objective") -> list[Path]:
    ratios = profile_ratios(runs, measure)
    finite = ratios.replace(math.inf, np.nan).stack()
    tau_max = max(float(finite.max()) if not finite.empty else 1.0, 1.0) * 1.05 + 1e-9
    n_inst = len(ratios)
    curves = {}
    for method in sorted(ratios.columns, key=method_order):
        r = np.sort(ratios[method].to_numpy())
        r = r[np.isfinite(r)]
        xs = np.concatenate([[1.0], r, [tau_max]])
        ys = np.concatenate([[0.0], np.arange(1, len(r) + 1) / n_inst, [len(r) / n_inst]])
        ys[0] = float((r <= 1.0 + 1e-12).sum()) / n_inst  # rho(1): methods attaining the best
        curves[method] = pd.Series(ys, index=xs)
    same = coinciding(curves)
    fig, (ax,) = _panels(1)
    with plt.rc_context(STYLE):
        for method, s in curves.items():
            label = method + (f" (= {same[method]})" if method in same else "")
            style = {**method_style(method), "marker": None}
            ax.step(s.index, s.to_numpy(), where="post", label=label, **style)
        ax.set_xlabel(f"ratio tau = {measure} / best {measure}")
        ax.set_ylabel("fraction of instances with ratio <= tau")
        ax.set_ylim(-0.02, 1.02)
        if tau_max > 10:
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _: f"{t:g}"))
    _finish(fig, [ax], f"{_families(runs)}: performance profile, {measure} ({n_inst} instances)")
    return save(fig, out)


def workload_rows(runs: pd.DataFrame) -> pd.DataFrame:
    """Rows obeying the workload contract, with ``workload``, ``bandwidth_gbps`` and
    ``iteration_time_s`` columns."""
    df = runs[runs["status"].isin(SOLVED)].copy()
    df["workload"] = df["instance_meta"].map(lambda m: _meta(m, "workload"))
    df = df[df["workload"].map(lambda w: isinstance(w, str)).astype(bool)]
    bw = df["instance_meta"].map(lambda m: _meta(m, "bandwidth_gbps"))
    df["bandwidth_gbps"] = bw.where(bw.notna(), df["link_gbps"]).astype(float)
    df["iteration_time_s"] = df["metrics"].map(lambda m: _meta(m, "iteration_time_s"))
    return df[df["iteration_time_s"].notna()]


def plot_iteration(runs: pd.DataFrame, out) -> list[Path]:
    df = workload_rows(runs)
    if df.empty:
        raise NoDataError("plot iteration: no solved run on an instance with meta.workload")
    workloads = sorted(df["workload"].unique(), key=natural_key)
    panels = [{m: g.groupby("bandwidth_gbps")["iteration_time_s"].mean().sort_index()
               for m, g in sorted(df[df["workload"] == wl].groupby("method"),
                                  key=lambda t: method_order(t[0]))} for wl in workloads]
    labels = _labels(panels)
    fig, axes = _panels(len(workloads))
    with plt.rc_context(STYLE):
        for ax, wl, series in zip(axes, workloads, panels, strict=True):
            grp = df[df["workload"] == wl]
            _draw_lines(ax, series, labels)
            _scale(ax, AXES[2], grp["bandwidth_gbps"])
            ax.set_yscale("log")
            ax.set_title(wl)
            ax.set_xlabel("link rate B [Gbps]")
        axes[0].set_ylabel("iteration time [s]")
    _finish(fig, axes, f"{_families(df)}: iteration time (compute + communication) vs link rate")
    return save(fig, out)


def plot(runs: pd.DataFrame, kind: str, out, measure: str = "objective",
         **bound_kw) -> list[Path]:
    """Draw figure ``kind`` from the run rows into ``out`` (format from its extension; a PNG
    gets a PDF beside it; a list of paths: exactly those); returns the files written."""
    if kind not in KINDS:
        raise InputError(f"kind: unknown figure {kind!r} (known: {', '.join(KINDS)})")
    if runs.empty:
        raise NoDataError(f"plot {kind}: the store holds no runs")
    if kind == "gap":
        return plot_gap(runs, out, **bound_kw)
    if kind == "runtime":
        return plot_runtime(runs, out)
    if kind == "profile":
        return plot_profile(runs, out, measure)
    return plot_iteration(runs, out)
