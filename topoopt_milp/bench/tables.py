"""Gap tables from the run store: per instance and per family, as Markdown, LaTeX or CSV.

Definitions (every number in a table is computed here from the raw run rows; nothing is
edited by hand):

* **best bound** of an instance (per objective kind): the largest ``bound`` reported by any
  exact method's run on it (``method_backend`` milp or cpsat, status not ``error``; an
  ``optimal`` run's bound equals its objective), together with the analytic lower bound
  ``metrics.lower_bound_s`` (ideal switch / Moore bound, valid for every d-port topology) for
  communication-time objectives. ``bound_source`` names the method (or ``analytic``) giving it.
  ``bound_methods`` restricts the exact methods that count. Note that a *restricted* family's
  bound (select: circulant topologies only; route: one fixed topology) bounds that family's
  problem, not every topology: a heuristic can beat it, and then its gap is negative.
* **gap** of a run: ``gap_pct = 100 * (objective - best_bound) / objective`` (the python-mip
  convention used by :attr:`SolveResult.gap`, measured against the instance's best bound
  instead of the run's own); 0 for a run that attains the bound.
* per-instance rows aggregate the seeds of one (instance, method): ``objective`` is the mean
  over the seeds that returned a solution (``objective_min`` the best), ``gap_pct`` the mean of
  the per-run gaps, ``runtime_s`` the mean of the method's own runtimes, ``status`` the status
  (``"optimal 2, error 1"`` when the seeds disagree).
* **shifted geometric mean** of runtimes ``t_1..t_k`` with shift ``s = 1`` second:
  ``sgm = exp( (1/k) * sum_i ln(t_i + s) ) - s``. The shift keeps sub-second heuristic runs
  from dominating the mean (the MIPLIB convention). Runs without a solution are left out of
  runtime and gap statistics; they count in ``errors`` / ``no_solution``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

SGM_SHIFT_S = 1.0
EXACT_BACKENDS = ("milp", "cpsat")
SOLVED = ("optimal", "feasible")


def shifted_geomean(values: Sequence[float] | pd.Series, shift: float = SGM_SHIFT_S) -> float:
    """``exp(mean(ln(t + shift))) - shift``; NaN for no values."""
    x = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if x.size == 0:
        return math.nan
    return float(np.exp(np.log(x + shift).mean()) - shift)


def _kind(df: pd.DataFrame) -> pd.Series:
    return df["objective_kind"].fillna("comm_time")


def best_bounds(
    runs: pd.DataFrame, bound_methods: Sequence[str] | None = None, analytic: bool = True
) -> pd.DataFrame:
    """Best bound per (instance_hash, objective_kind): columns ``best_bound``, ``bound_source``."""
    runs = runs.assign(objective_kind=_kind(runs))
    exact = runs[runs["method_backend"].isin(EXACT_BACKENDS) & (runs["status"] != "error")]
    if bound_methods is not None:
        exact = exact[exact["method"].isin(list(bound_methods))]
    cands = [exact.loc[exact["bound"].notna(), ["instance_hash", "objective_kind", "bound", "method"]]
             .rename(columns={"bound": "value", "method": "source"})]
    if analytic:
        lb = runs[runs["objective_kind"] == "comm_time"].copy()
        lb["value"] = lb["metrics"].map(lambda m: m.get("lower_bound_s") if isinstance(m, dict) else None)
        lb = lb[lb["value"].notna()]
        lb = lb.assign(source="analytic")[["instance_hash", "objective_kind", "value", "source"]]
        cands.append(lb)
    allc = pd.concat(cands, ignore_index=True)
    allc["value"] = allc["value"].astype(float)
    if allc.empty:
        return pd.DataFrame(columns=["instance_hash", "objective_kind", "best_bound", "bound_source"])
    # Largest bound wins; ties go to an exact method's name (sorted before "analytic" by the key).
    allc["_exact"] = allc["source"] != "analytic"
    allc = allc.sort_values(["value", "_exact", "source"], ascending=[False, False, True])
    best = allc.drop_duplicates(["instance_hash", "objective_kind"])
    return best.rename(columns={"value": "best_bound", "source": "bound_source"})[
        ["instance_hash", "objective_kind", "best_bound", "bound_source"]
    ].reset_index(drop=True)


def run_gaps(
    runs: pd.DataFrame, bound_methods: Sequence[str] | None = None, analytic: bool = True
) -> pd.DataFrame:
    """Every run with its instance's ``best_bound``, ``bound_source`` and ``gap_pct``."""
    runs = runs.assign(objective_kind=_kind(runs))
    out = runs.merge(best_bounds(runs, bound_methods, analytic),
                     on=["instance_hash", "objective_kind"], how="left")
    obj = out["objective"].astype(float)
    bnd = out["best_bound"].astype(float)
    solved = out["status"].isin(SOLVED) & obj.notna()
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.where(obj != 0, 100.0 * (obj - bnd) / obj.abs(), np.where(bnd == 0, 0.0, np.nan))
    out["gap_pct"] = np.where(solved & bnd.notna(), gap, np.nan)
    return out


def _status_text(statuses: pd.Series) -> str:
    counts = statuses.value_counts()
    if len(counts) == 1:
        return str(counts.index[0])
    return ", ".join(f"{s} {c}" for s, c in counts.items())


INSTANCE_COLUMNS = ["family", "instance", "n", "degree", "method", "backend", "seeds", "status",
                    "objective", "objective_min", "best_bound", "bound_source", "gap_pct",
                    "runtime_s"]
FAMILY_COLUMNS = ["family", "method", "backend", "instances", "runs", "optimal", "errors",
                  "mean_gap_pct", "max_gap_pct", "sgm_runtime_s"]


def instance_table(runs: pd.DataFrame, **bound_kw) -> pd.DataFrame:
    """One row per (instance, method) with seed-aggregated objective, gap and runtime."""
    if runs.empty:
        return pd.DataFrame(columns=INSTANCE_COLUMNS)
    g = run_gaps(runs, **bound_kw)
    g["ok_obj"] = g["objective"].where(g["status"].isin(SOLVED))
    g["ok_rt"] = g["runtime_s"].where(g["status"].isin(SOLVED))
    rows = []
    for (fam, name, _ihash, _kind, method), grp in g.groupby(
        ["family", "instance_name", "instance_hash", "objective_kind", "method"], sort=True, dropna=False
    ):
        rows.append({
            "family": fam, "instance": name, "n": grp["n"].iloc[0], "degree": grp["degree"].iloc[0],
            "method": method, "backend": grp["method_backend"].iloc[0], "seeds": len(grp),
            "status": _status_text(grp["status"]), "objective": grp["ok_obj"].mean(),
            "objective_min": grp["ok_obj"].min(), "best_bound": grp["best_bound"].iloc[0],
            "bound_source": grp["bound_source"].iloc[0], "gap_pct": grp["gap_pct"].mean(),
            "runtime_s": grp["ok_rt"].mean(),
        })
    df = pd.DataFrame(rows, columns=INSTANCE_COLUMNS)
    return df.sort_values(["family", "n", "instance", "method"], kind="stable").reset_index(drop=True)


def family_table(runs: pd.DataFrame, **bound_kw) -> pd.DataFrame:
    """One row per (family, method): instances, runs, optimal runs, errors, mean and max gap
    over solved runs and the shifted geometric mean runtime (shift 1 s) of solved runs."""
    if runs.empty:
        return pd.DataFrame(columns=FAMILY_COLUMNS)
    g = run_gaps(runs, **bound_kw)
    rows = []
    for (fam, method), grp in g.groupby(["family", "method"], sort=True, dropna=False):
        solved = grp[grp["status"].isin(SOLVED)]
        rows.append({
            "family": fam, "method": method, "backend": grp["method_backend"].iloc[0],
            "instances": grp["instance_hash"].nunique(), "runs": len(grp),
            "optimal": int((grp["status"] == "optimal").sum()),
            "errors": int((grp["status"] == "error").sum()),
            "mean_gap_pct": solved["gap_pct"].mean(), "max_gap_pct": solved["gap_pct"].max(),
            "sgm_runtime_s": shifted_geomean(solved["runtime_s"].astype(float)),
        })
    return pd.DataFrame(rows, columns=FAMILY_COLUMNS)


WIDE_VALUES = ("gap_pct", "objective", "runtime_s")
WIDE_KEYS = ("family", "instance", "n", "best_bound", "bound_source")


def wide_table(runs: pd.DataFrame, value: str = "gap_pct", **bound_kw) -> pd.DataFrame:
    """The per-instance table pivoted for a paper: one row per instance (family, instance,
    n, best bound and its source), one column per method holding ``value`` (seed-aggregated
    as in :func:`instance_table`)."""
    if value not in WIDE_VALUES:
        raise ValueError(f"value: unknown wide-table value {value!r} (known: {', '.join(WIDE_VALUES)})")
    t = instance_table(runs, **bound_kw)
    if t.empty:
        return pd.DataFrame(columns=list(WIDE_KEYS))
    keys = list(WIDE_KEYS)
    # Missing bounds would drop rows from the pivot index; pivot on a filled copy.
    t = t.assign(best_bound=t["best_bound"].fillna(-1.0), bound_source=t["bound_source"].fillna("-"))
    wide = t.pivot_table(index=keys, columns="method", values=value, aggfunc="first", dropna=False)
    wide = wide.reset_index()
    wide.columns.name = None
    wide["best_bound"] = wide["best_bound"].where(wide["best_bound"] >= 0)
    wide = wide.dropna(subset=[c for c in wide.columns if c not in keys], how="all")
    return wide.sort_values(["family", "n", "instance"], kind="stable").reset_index(drop=True)


# -- rendering --------------------------------------------------------------------------

_FORMATS = {
    "objective": "{:.6g}", "objective_min": "{:.6g}", "bound": "{:.6g}", "best_bound": "{:.6g}",
    "gap_pct": "{:.2f}",
    "mean_gap_pct": "{:.2f}", "max_gap_pct": "{:.2f}", "runtime_s": "{:.3g}", "sgm_runtime_s": "{:.3g}",
}


def _formatted(df: pd.DataFrame, formats: dict[str, str] | None = None) -> pd.DataFrame:
    out = df.copy()
    formats = {**_FORMATS, **(formats or {})}
    for c in out.columns:
        fmt = formats.get(c)
        out[c] = out[c].map(
            lambda v, fmt=fmt: "-" if v is None or (isinstance(v, float) and math.isnan(v))
            else (fmt.format(v) if fmt else str(v))
        )
    return out


def render(df: pd.DataFrame, fmt: str, caption: str | None = None,
           formats: dict[str, str] | None = None) -> str:
    """``md`` (GitHub pipe table), ``latex`` (a booktabs ``tabular`` inside a ``table``; needs
    ``\\usepackage{booktabs}``) or ``csv`` (full precision, empty cells for missing values)."""
    if fmt == "csv":
        return df.to_csv(index=False)
    shown = _formatted(df, formats)
    if fmt == "md":
        align = ["right" if pd.api.types.is_numeric_dtype(df[c]) else "left" for c in df.columns]
        return shown.to_markdown(index=False, disable_numparse=True, colalign=align) + "\n"
    if fmt == "latex":
        shown = latex_escape_cells(shown)
        shown.columns = [c.replace("_", r"\_") for c in df.columns]
        align = "".join("r" if pd.api.types.is_numeric_dtype(df[c]) else "l" for c in df.columns)
        body = shown.to_latex(index=False, escape=False, column_format=align)
        if caption is None:
            return body
        cap = _latex_escape(caption)
        return "\\begin{table}[htbp]\n\\centering\n\\caption{" + cap + "}\n" + body + "\\end{table}\n"
    raise ValueError(f"format: unknown table format {fmt!r} (known: md, latex, csv)")


_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "_": r"\_", "&": r"\&", "%": r"\%", "#": r"\#",
                   "$": r"\$", "{": r"\{", "}": r"\}"}


def _latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)


def latex_escape_cells(df: pd.DataFrame) -> pd.DataFrame:
    """Escape LaTeX specials in string cells (``\\ _ & % # $ { }``)."""
    return df.map(lambda v: _latex_escape(v) if isinstance(v, str) else v)


def table(runs: pd.DataFrame, by: str, fmt: str, wide: str | None = None, **bound_kw) -> str:
    """The text of ``topoopt-milp table``: ``by`` is ``instance`` or ``family``; ``wide``
    (``gap_pct``, ``objective`` or ``runtime_s``) pivots the per-instance table to one column
    per method."""
    if by == "instance" and wide is not None:
        df = wide_table(runs, wide, **bound_kw)
        fmts = {"gap_pct": "{:.2f}", "objective": "{:.6g}", "runtime_s": "{:.3g}"}[wide]
        methods = [c for c in df.columns if c not in WIDE_KEYS]
        what = {"gap_pct": "gap to the best bound [%]", "objective": "communication time [s]",
                "runtime_s": "runtime [s]"}[wide]
        return render(df, fmt, caption=f"Per-instance {what} by method",
                      formats=dict.fromkeys(methods, fmts))
    if by == "instance":
        df, cap = instance_table(runs, **bound_kw), "Per-instance gaps to the best bound"
    elif by == "family":
        df, cap = family_table(runs, **bound_kw), "Per-family summary"
    else:
        raise ValueError(f"by: unknown grouping {by!r} (known: instance, family)")
    return render(df, fmt, caption=cap)
