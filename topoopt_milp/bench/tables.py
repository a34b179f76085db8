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
* per-family rows count every status (``optimal`` is proven within the method's own problem;
  a restricted model proving its own optimum counts as ``feasible``). A run of a bounds-only
  method (backend ``analytic``: ``lower-bounds``) that returned its bound is shown with
  status ``bound`` (column ``bound_only``), not ``no_solution``: it was never meant to return
  a solution, and a reader would take "no solution" for a failure.
* **shifted geometric mean** of runtimes ``t_1..t_k`` with shift ``s = 1`` second:
  ``sgm = exp( (1/k) * sum_i ln(t_i + s) ) - s``. The shift keeps sub-second heuristic runs
  from dominating the mean (the MIPLIB convention). Runs without a solution are left out of
  runtime and gap statistics.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..core.errors import InputError
from .gaps import SOLVED, routing_gaps, run_gaps
from .render import join_tables, latex_label, render

SGM_SHIFT_S = 1.0
STATUSES = ("optimal", "feasible", "infeasible", "no_solution", "error")
BOUND_STATUS = "bound"  # the shown status of a bounds-only run that returned its bound
BOUNDS_ONLY_BACKEND = "analytic"  # the backend of the bounds-only methods (no solution, a bound)
# family-table count columns: one per status, and bounds-only runs (not a status of a solve)
STATUS_COLUMNS = {"optimal": "optimal", "feasible": "feasible", "bound_only": BOUND_STATUS,
                  "infeasible": "infeasible", "no_solution": "no_solution", "error": "error"}


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
FAMILY_COLUMNS = ["family", "method", "kind", "instances", "runs", *STATUS_COLUMNS, "mean_gap_pct",
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
    if not g.empty:
        g["status"] = shown_status(g)
    return g


def shown_status(runs: pd.DataFrame) -> pd.Series:
    """The status a table shows: the stored one, except ``bound`` for a run of a bounds-only
    method (backend ``analytic``) that returned no solution but a finite bound."""
    status = runs["status"].copy()
    if "method_backend" not in runs:
        return status
    bound = pd.to_numeric(runs["bound"], errors="coerce")
    bounds_only = (runs["method_backend"] == BOUNDS_ONLY_BACKEND) & (status == "no_solution") \
        & np.isfinite(bound.to_numpy(dtype=float, na_value=np.nan))
    status[bounds_only] = BOUND_STATUS
    return status


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
            **{col: int((grp["status"] == st).sum()) for col, st in STATUS_COLUMNS.items()},
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
        texts = {(r["family"], r["instance"], r["method"]): f"{r['bound_source']} [{r['bound_scope']}]"
                 for _, r in t.iterrows()
                 if isinstance(r["bound_source"], str) and r["bound_source"] != "-"}
        labels = _letters(texts.values())
        key["cells"] = {cell: labels[text] for cell, text in texts.items()}
        key["legend"] = {v: k for k, v in labels.items()}
    return wide, key


# -- text --------------------------------------------------------------------------------

# The LaTeX version of the per-instance table: the columns a paper prints (the bound's source
# and scope become a letter on the bound, explained in the caption; Markdown, CSV and JSON
# keep every column).
LATEX_INSTANCE_COLUMNS = ["instance", "n", "degree", "method", "seeds", "status", "objective",
                          "best_bound", "gap_pct", "ratio", "routing_gap_pct", "runtime_s"]
WIDE_FORMATS = {"gap_pct": "{:.2f}", "ratio": "{:.3f}", "objective": "{:.6g}", "runtime_s": "{:.3g}"}
WIDE_WHAT = {"gap_pct": "Gap [%] of each method to the best valid bound",
             "ratio": "Ratio objective / best valid bound of each method",
             "objective": "Communication time [s] of each method",
             "runtime_s": "Runtime [s] of each method"}
LABELS = {"instance": "tab:instances", "family": "tab:families", "wide": "tab:{}"}


def gap_table(runs: pd.DataFrame, by: str, fmt: str, wide: str | None = None,
              label: str | None = None, **bound_kw) -> str:
    """The text of the gap tables: ``by`` is ``instance`` or ``family``; ``wide``
    (``gap_pct``, ``ratio``, ``objective`` or ``runtime_s``) pivots the per-instance table to
    one column per method. Gap and ratio cells carry the letter of the bound they are
    measured against, explained in the caption. ``fmt`` is ``md``, ``latex``, ``csv`` or
    ``json`` (:mod:`.render`). In LaTeX, per-instance tables are split into one table per
    family (labels ``LABEL-<family>``, default ``tab:instances-<family>`` and
    ``tab:gaps-<family>``), and the family table groups its rows by family
    (``tab:families``)."""
    if by not in ("instance", "family"):
        raise InputError(f"by: unknown grouping {by!r} (known: instance, family, headline)")
    if wide is not None and by != "instance":
        raise InputError("wide: only with by = instance")
    bounds = _bound_note(bound_kw, runs)
    if by == "family":
        df = family_table(runs, **bound_kw)
        cap = ("Per-family summary by method: runs per status (optimal = proven within the "
               "method's own problem; a restricted model's own optimum counts as feasible), mean "
               "and max gap [%] and mean ratio objective / bound over solved runs, and the shifted "
               f"geometric mean runtime (shift 1 s) of solved runs. {bounds}")
        return render(df, fmt, caption=cap, label=label or LABELS["family"],
                      group="family" if fmt == "latex" else None)
    if wide is not None:
        return _wide_text(runs, wide, fmt, label, bounds, bound_kw)
    df = instance_table(runs, **bound_kw)
    cap = ("Per-instance results by method, means over seeds: status, objective (communication "
           "time), best valid bound, gap [%], ratio objective / bound, routing gap [%] (to the "
           "route LP on the method's own topology and rings) and runtime. " + bounds)
    if fmt != "latex":
        return render(df, fmt, caption=cap)
    texts = {i: f"{r['bound_source']} [{r['bound_scope']}]" for i, r in df.iterrows()
             if isinstance(r["bound_source"], str) and r["bound_source"] != "-"}
    letters = _letters(texts.values())
    marks = {(i, "best_bound"): letters[t] for i, t in texts.items()}
    cols = LATEX_INSTANCE_COLUMNS + (["gap_error"] if df["gap_error"].notna().any() else [])
    return _per_family(df, cols, cap, marks, letters, label or LABELS["instance"])


def _letters(texts) -> dict[str, str]:
    """A letter per distinct text, in order of first appearance (aa, ab, ... after z)."""
    out: dict[str, str] = {}
    for t in texts:
        if t not in out:
            k = len(out)
            out[t] = string.ascii_lowercase[k] if k < 26 else (
                string.ascii_lowercase[k // 26 - 1] + string.ascii_lowercase[k % 26])
    return out


def _legend(marks: dict, letters: dict[str, str], rows=None, columns=None) -> tuple[dict, str]:
    """The marks of ``rows`` x ``columns`` (all when ``None``) and the caption sentence that
    explains them; a table measured against one bound only names it and carries no marks."""
    kept = {k: v for k, v in marks.items()
            if (rows is None or k[0] in rows) and (columns is None or k[1] in columns)}
    used = set(kept.values())
    names = {v: k for k, v in letters.items()}
    if len(used) == 1:
        return {}, f"Every value is measured against one bound: {names[used.pop()]}."
    items = [f"{v} = {k}" for k, v in letters.items() if v in used]
    return kept, ("A letter names the bound: " + "; ".join(items) + ".") if items else ""


def _wide_text(runs, wide, fmt, label, bounds, bound_kw) -> str:
    df, key = wide_table(runs, wide, **bound_kw)
    methods = [c for c in df.columns if c not in WIDE_KEYS]
    marks = {}
    for i, r in df.iterrows():
        for m in methods:
            letter = key["cells"].get((r["family"], r["instance"], m))
            if letter:
                marks[(i, m)] = letter
    cap = f"{WIDE_WHAT[wide]}, per instance; - where the method did not run or found no solution."
    if wide in ("gap_pct", "ratio"):
        cap += " " + bounds
    letters = {v: k for k, v in key["legend"].items()}
    if fmt in ("csv", "json") and letters:
        for m in methods:
            df[f"{m} bound"] = [key["legend"].get(key["cells"].get((r["family"], r["instance"], m)))
                                for _, r in df.iterrows()]
    fmts = dict.fromkeys(methods, WIDE_FORMATS[wide])
    if fmt != "latex":
        shown, legend = _legend(marks, letters)
        return render(df, fmt, caption=f"{cap} {legend}".strip(), formats=fmts, marks=shown)
    stem = {"gap_pct": "gaps", "ratio": "ratios", "objective": "objectives",
            "runtime_s": "runtimes"}[wide]
    return _per_family(df, ["instance", "n", *methods], cap, marks, letters,
                       label or LABELS["wide"].format(stem), formats=fmts)


def _per_family(df, cols, caption, marks, letters, label, formats=None) -> str:
    """One LaTeX table per family: the family's rows, ``cols`` that hold a value there."""
    parts = []
    for family, sub in df.groupby("family", sort=False, dropna=False):
        keep = [c for c in cols if c in sub and (c in ("instance", "n", "degree", "method")
                                                 or sub[c].notna().any())]
        shown, legend = _legend(marks, letters, set(sub.index), set(keep))
        cap = f"Family {family}. {caption} {legend}".strip()
        parts.append(render(sub[keep], "latex", caption=cap, formats=formats, marks=shown,
                            label=latex_label(label + "-" + str(family))))
    return join_tables(parts) if parts else render(df[cols], "latex", caption=caption, label=label)


def _bound_note(bound_kw: dict, runs: pd.DataFrame | None = None) -> str:
    methods = bound_kw.get("bound_methods")
    who = "the exact methods" if methods is None else ", ".join(methods)
    analytic = "" if bound_kw.get("analytic", True) is False else (
        " and the analytic bound (ideal switch / Moore)")
    note = (f"Gap = 100 (objective - bound) / objective, where the bound is the largest lower "
            f"bound among those of {who}{analytic} whose scope contains the solution.")
    if runs is not None and "objective_kind" in runs and \
            (runs["objective_kind"].fillna("comm_time") != "comm_time").any():
        note += " Objectives are in seconds, or in hops for diameter / total-hops runs."
    return note
