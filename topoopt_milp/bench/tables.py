"""Gap tables from the run store: per instance and per family, as Markdown, LaTeX or CSV.

Definitions (every number in a table is computed here from the raw run rows; nothing is
edited by hand):

* **best bound** of a run: the largest bound whose scope covers the run's solution, among the
  exact runs on the same instance and the analytic lower bound (:mod:`.gaps`, the one rule of
  every table, ``compare`` and the reference values). ``bound_source`` names the method (or
  ``analytic``) and ``bound_scope`` its scope in words; by default only bounds on every
  topology or on the candidate circulants count (scope levels 1 and 2), never a restricted
  model's bound for another method's run. ``bound_methods`` restricts the methods that give
  bounds, ``analytic = False`` drops the analytic bound.
* **gap** of a run: ``gap_pct = 100 * (objective - best_bound) / objective`` (the python-mip
  convention) and ``ratio = objective / best_bound``; a covering bound above the objective
  beyond solver tolerance is reported in ``gap_error``, never as a number.
* per-instance rows aggregate the seeds of one (instance, method): ``objective`` is the mean
  over the seeds that returned a solution (``objective_min`` the best), ``gap_pct`` and
  ``ratio`` the means of the per-run values, ``runtime_s`` the mean of the method's own
  runtimes, ``status`` the status (``"optimal 2, error 1"`` when the seeds disagree);
  ``routing_gap_pct`` the mean gap to the route LP on the run's own topology and rings, where
  such a run exists (the ``-lp`` heuristics).
* per-family rows count every status (``optimal`` is proven within the family's own problem;
  a restricted model proving its own optimum counts as ``feasible``).
* **shifted geometric mean** of runtimes ``t_1..t_k`` with shift ``s = 1`` second:
  ``sgm = exp( (1/k) * sum_i ln(t_i + s) ) - s``. The shift keeps sub-second heuristic runs
  from dominating the mean (the MIPLIB convention). Runs without a solution are left out of
  runtime and gap statistics.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..errors import InputError
from .gaps import SOLVED, routing_gaps, run_gaps

SGM_SHIFT_S = 1.0
STATUSES = ("optimal", "feasible", "infeasible", "no_solution", "error")


def shifted_geomean(values: Sequence[float] | pd.Series, shift: float = SGM_SHIFT_S) -> float:
    """``exp(mean(ln(t + shift))) - shift``; NaN for no values."""
    x = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if x.size == 0:
        return math.nan
    return float(np.exp(np.log(x + shift).mean()) - shift)


def natural_key(text) -> tuple:
    """Sort key that orders embedded numbers numerically (b10 < b25 < b100)."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(text)))


def _status_text(statuses: pd.Series) -> str:
    counts = statuses.value_counts()
    if len(counts) == 1:
        return str(counts.index[0])
    return ", ".join(f"{s} {c}" for s, c in counts.items())


def _sources(series: pd.Series) -> str:
    counts = series.dropna().value_counts()
    return ", ".join(f"{s} {c}" if len(counts) > 1 else str(s) for s, c in counts.items()) or "-"


INSTANCE_COLUMNS = ["family", "instance", "n", "degree", "method", "kind", "seeds", "status",
                    "objective", "objective_min", "best_bound", "bound_source", "bound_scope",
                    "gap_pct", "ratio", "routing_gap_pct", "runtime_s", "gap_error"]
FAMILY_COLUMNS = ["family", "method", "kind", "instances", "runs", *STATUSES, "mean_gap_pct",
                  "max_gap_pct", "mean_ratio", "bound_sources", "sgm_runtime_s", "gap_errors"]


def _method_kind(runs: pd.DataFrame) -> pd.Series:
    if "method_kind" in runs:
        return runs["method_kind"].fillna(runs["method_backend"])
    return runs["method_backend"]


def gap_rows(runs: pd.DataFrame, **bound_kw) -> pd.DataFrame:
    """Every run with its best bound, gap and routing gap (see the module docstring)."""
    g = run_gaps(runs, **bound_kw)
    g["routing_gap_pct"] = routing_gaps(runs).to_numpy() if not runs.empty else []
    g["kind"] = _method_kind(g) if not g.empty else []
    return g


def instance_table(runs: pd.DataFrame, **bound_kw) -> pd.DataFrame:
    """One row per (instance, method) with seed-aggregated objective, gap and runtime."""
    if runs.empty:
        return pd.DataFrame(columns=INSTANCE_COLUMNS)
    g = gap_rows(runs, **bound_kw)
    g["ok_obj"] = g["objective"].where(g["status"].isin(SOLVED)).astype(float)
    g["ok_rt"] = g["runtime_s"].where(g["status"].isin(SOLVED)).astype(float)
    g["objective_kind"] = g["objective_kind"].fillna("comm_time")
    rows = []
    for (fam, name, _ihash, _kind, method), grp in g.groupby(
        ["family", "instance_name", "instance_hash", "objective_kind", "method"], sort=True, dropna=False
    ):
        errors = [e for e in grp["gap_error"] if isinstance(e, str)]
        rows.append({
            "family": fam, "instance": name, "n": grp["n"].iloc[0], "degree": grp["degree"].iloc[0],
            "method": method, "kind": grp["kind"].iloc[0], "seeds": len(grp),
            "status": _status_text(grp["status"]), "objective": grp["ok_obj"].mean(),
            "objective_min": grp["ok_obj"].min(), "best_bound": grp["best_bound"].max(),
            "bound_source": _sources(grp["bound_source"]), "bound_scope": _sources(grp["bound_scope"]),
            "gap_pct": grp["gap_pct"].mean(), "ratio": grp["ratio"].mean(),
            "routing_gap_pct": grp["routing_gap_pct"].mean(), "runtime_s": grp["ok_rt"].mean(),
            "gap_error": "; ".join(errors) or None,
        })
    df = pd.DataFrame(rows, columns=INSTANCE_COLUMNS)
    return _natural_sort(df, ["family", "n", "instance", "method"])


def _natural_sort(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    if df.empty:
        return df.reset_index(drop=True)
    order = sorted(range(len(df)), key=lambda i: tuple(
        natural_key(df[k].iloc[i]) if k != "n" else (float(df[k].iloc[i]),) for k in keys))
    return df.iloc[order].reset_index(drop=True)


def family_table(runs: pd.DataFrame, **bound_kw) -> pd.DataFrame:
    """One row per (family, method): instances, runs and a count per status, mean and max gap
    and mean ratio over solved runs, the bound sources used, and the shifted geometric mean
    runtime (shift 1 s) of solved runs."""
    if runs.empty:
        return pd.DataFrame(columns=FAMILY_COLUMNS)
    g = gap_rows(runs, **bound_kw)
    rows = []
    for (fam, method), grp in g.groupby(["family", "method"], sort=True, dropna=False):
        solved = grp[grp["status"].isin(SOLVED)]
        rows.append({
            "family": fam, "method": method, "kind": grp["kind"].iloc[0],
            "instances": grp["instance_hash"].nunique(), "runs": len(grp),
            **{st: int((grp["status"] == st).sum()) for st in STATUSES},
            "mean_gap_pct": solved["gap_pct"].mean(), "max_gap_pct": solved["gap_pct"].max(),
            "mean_ratio": solved["ratio"].mean(), "bound_sources": _sources(solved["bound_source"]),
            "sgm_runtime_s": shifted_geomean(solved["runtime_s"].astype(float)),
            "gap_errors": int(grp["gap_error"].map(lambda e: isinstance(e, str)).sum()),
        })
    return _natural_sort(pd.DataFrame(rows, columns=FAMILY_COLUMNS), ["family", "method"])


WIDE_VALUES = ("gap_pct", "objective", "runtime_s", "ratio")
WIDE_KEYS = ("family", "instance", "n")


def wide_table(runs: pd.DataFrame, value: str = "gap_pct", **bound_kw) -> tuple[pd.DataFrame, dict]:
    """The per-instance table pivoted for a paper: one row per instance (family, instance,
    ``n``), one column per method holding ``value`` (seed-aggregated as in
    :func:`instance_table`). Returns the table and, for gap and ratio tables, the bound key:
    ``{(row, method): letter}`` and ``{letter: "source [scope]"}`` (which bound each cell is
    measured against)."""
    if value not in WIDE_VALUES:
        raise InputError(f"value: unknown wide-table value {value!r} (known: {', '.join(WIDE_VALUES)})")
    t = instance_table(runs, **bound_kw)
    if t.empty:
        return pd.DataFrame(columns=list(WIDE_KEYS)), {"cells": {}, "legend": {}}
    keys = list(WIDE_KEYS)
    wide = t.pivot_table(index=keys, columns="method", values=value, aggfunc="first", dropna=False)
    wide = wide.reset_index()
    wide.columns.name = None
    wide = wide.dropna(subset=[c for c in wide.columns if c not in keys], how="all")
    wide = _natural_sort(wide, ["family", "n", "instance"])
    key = {"cells": {}, "legend": {}}
    if value in ("gap_pct", "ratio"):
        labels: dict[str, str] = {}
        for _, r in t.iterrows():
            if not isinstance(r["bound_source"], str) or r["bound_source"] == "-":
                continue
            text = f"{r['bound_source']} [{r['bound_scope']}]"
            letter = labels.setdefault(text, "abcdefghijklmnopqrstuvwxyz"[len(labels) % 26])
            key["cells"][(r["family"], r["instance"], r["method"])] = letter
        key["legend"] = {v: k for k, v in labels.items()}
    return wide, key


# -- rendering --------------------------------------------------------------------------

_FORMATS = {
    "objective": "{:.6g}", "objective_min": "{:.6g}", "bound": "{:.6g}", "best_bound": "{:.6g}",
    "gap_pct": "{:.2f}", "routing_gap_pct": "{:.2f}", "ratio": "{:.3f}", "mean_ratio": "{:.3f}",
    "mean_gap_pct": "{:.2f}", "max_gap_pct": "{:.2f}", "runtime_s": "{:.3g}", "sgm_runtime_s": "{:.3g}",
}


def _cell(v, fmt: str | None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if fmt is None:
        return str(v)
    text = fmt.format(v)
    # a value that rounds to zero from below reads 0, never -0.00
    return fmt.format(0.0) if text.startswith("-") and float(text) == 0 else text


def _formatted(df: pd.DataFrame, formats: dict[str, str] | None = None) -> pd.DataFrame:
    out = df.copy().astype(object)
    formats = {**_FORMATS, **(formats or {})}
    for c in out.columns:
        out[c] = [_cell(v, formats.get(c)) for v in df[c]]
    return out


def render(df: pd.DataFrame, fmt: str, caption: str | None = None,
           formats: dict[str, str] | None = None, marks: dict | None = None) -> str:
    """``md`` (GitHub pipe table), ``latex`` (a booktabs ``tabular`` inside a ``table``; needs
    ``\\usepackage{booktabs}``) or ``csv`` (full precision, empty cells for missing values).
    ``marks[(row index, column)]`` appends a bound letter to a cell (md and LaTeX)."""
    if fmt == "csv":
        return df.to_csv(index=False)
    shown = _formatted(df, formats)
    marks = marks or {}
    if fmt == "md":
        for (i, c), letter in marks.items():
            if shown.at[i, c] != "-":
                shown.at[i, c] = f"{shown.at[i, c]} ({letter})"
        align = ["right" if pd.api.types.is_numeric_dtype(df[c]) else "left" for c in df.columns]
        text = shown.to_markdown(index=False, disable_numparse=True, colalign=align) + "\n"
        return (caption + "\n\n" if caption else "") + text
    if fmt == "latex":
        shown = latex_escape_cells(shown)
        for (i, c), letter in marks.items():
            if shown.at[i, c] != "-":
                shown.at[i, c] = f"{shown.at[i, c]}\\textsuperscript{{{letter}}}"
        shown.columns = [_latex_escape(str(c)) for c in df.columns]
        align = "".join("r" if pd.api.types.is_numeric_dtype(df[c]) else "l" for c in df.columns)
        body = shown.to_latex(index=False, escape=False, column_format=align)
        if caption is None:
            return body
        cap = _latex_escape(caption)
        return "\\begin{table}[htbp]\n\\centering\n\\caption{" + cap + "}\n" + body + "\\end{table}\n"
    raise InputError(f"format: unknown table format {fmt!r} (known: md, latex, csv)")


_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "_": r"\_", "&": r"\&", "%": r"\%", "#": r"\#",
                   "$": r"\$", "{": r"\{", "}": r"\}"}


def _latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)


def latex_escape_cells(df: pd.DataFrame) -> pd.DataFrame:
    """Escape LaTeX specials in string cells (``\\ _ & % # $ { }``)."""
    return df.map(lambda v: _latex_escape(v) if isinstance(v, str) else v)


def table(runs: pd.DataFrame, by: str, fmt: str, wide: str | None = None, **bound_kw) -> str:
    """The text of ``topoopt-milp table``: ``by`` is ``instance`` or ``family``; ``wide``
    (``gap_pct``, ``ratio``, ``objective`` or ``runtime_s``) pivots the per-instance table to
    one column per method; gap and ratio cells carry the letter of the bound they are
    measured against, explained in the caption."""
    bounds = _bound_note(bound_kw)
    if by == "instance" and wide is not None:
        df, key = wide_table(runs, wide, **bound_kw)
        fmts = {"gap_pct": "{:.2f}", "ratio": "{:.3f}", "objective": "{:.6g}",
                "runtime_s": "{:.3g}"}[wide]
        methods = [c for c in df.columns if c not in WIDE_KEYS]
        what = {"gap_pct": "gap to the best covering bound [%]", "ratio": "objective / best "
                "covering bound", "objective": "communication time [s]",
                "runtime_s": "runtime [s]"}[wide]
        marks = {}
        for i, r in df.iterrows():
            for m in methods:
                letter = key["cells"].get((r["family"], r["instance"], m))
                if letter:
                    marks[(i, m)] = letter
        legend = "; ".join(f"{k} = {v}" for k, v in key["legend"].items())
        if fmt == "csv" and key["legend"]:
            for m in methods:
                df[f"{m} bound"] = [key["legend"].get(key["cells"].get((r["family"], r["instance"], m)))
                                    for _, r in df.iterrows()]
        cap = f"Per-instance {what} by method ({bounds})" + (f". Bounds: {legend}" if legend else "")
        return render(df, fmt, caption=cap, formats=dict.fromkeys(methods, fmts), marks=marks)
    if by == "instance":
        df = instance_table(runs, **bound_kw)
        cap = f"Per-instance gaps to the best covering bound ({bounds})"
    elif by == "family":
        df = family_table(runs, **bound_kw)
        cap = f"Per-family summary; gaps to the best covering bound ({bounds})"
    else:
        raise InputError(f"by: unknown grouping {by!r} (known: instance, family)")
    return render(df, fmt, caption=cap)


def _bound_note(bound_kw: dict) -> str:
    methods = bound_kw.get("bound_methods")
    who = "exact methods" if methods is None else ", ".join(methods)
    analytic = "" if bound_kw.get("analytic", True) is False else " and the analytic bound"
    return f"bounds of {who}{analytic} whose scope contains the solution"
