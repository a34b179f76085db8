"""Which bound a run is measured against, and its gap: the one rule of every table.

For a solved run ``r`` (status optimal or feasible, with its solution's
:class:`~topoopt_milp.core.scope.Features`), the **best bound** is the largest bound ``b`` among

* the bounds of the exact runs on the same instance (same content hash) and objective kind,
  status not ``error``, whose :class:`~topoopt_milp.core.scope.Scope` *covers* ``r``'s solution
  (:meth:`Scope.covers`: topology space, ring space and routing), and
* the analytic lower bound (``metrics.lower_bound_s``: ideal switch / Moore, valid for every
  topology, ring order and routing) for ``comm_time`` runs,

restricted to the scope levels asked for: by default levels 1 and 2 (every topology, the
candidate circulants) -- the gap to the optimum of the instance's problem. Level 4 (a fixed
topology: the route LP on a heuristic's own topology and rings) gives the *routing gap*
instead (:func:`routing_gaps`). ``bound_methods`` restricts which methods' bounds count (a
restricted model then bounds its own run only).

``gap_pct = 100 (objective - bound) / objective`` and ``ratio = objective / bound``. A bound
that covers a run yet exceeds its objective by more than ``NEGATIVE_TOL`` (relative) means a
bound is invalid: the gap is then not a number but ``gap_error`` says which bound and why; a
smaller excess is solver tolerance and reads 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..core.scope import ANALYTIC, Features, Scope

SOLVED = ("optimal", "feasible")
NEGATIVE_TOL = 1e-6  # relative excess of a covering bound over an objective: solver tolerance
DEFAULT_LEVELS = (1, 2)
GAP_COLUMNS = ["best_bound", "bound_source", "bound_scope", "gap_pct", "ratio", "gap_error"]


def _kind(df: pd.DataFrame) -> pd.Series:
    return df["objective_kind"].fillna("comm_time") if "objective_kind" in df else pd.Series(
        "comm_time", index=df.index)


def _scope(value) -> Scope | None:
    return Scope.from_dict(value) if isinstance(value, dict) else None


def _features(value) -> Features | None:
    return Features.from_dict(value) if isinstance(value, dict) else None


def bound_candidates(runs: pd.DataFrame, bound_methods: Sequence[str] | None = None,
                     analytic: bool = True) -> pd.DataFrame:
    """Every usable bound: columns ``instance_hash``, ``objective_kind``, ``value``,
    ``source``, ``scope`` (:class:`Scope`), ``run_key``."""
    rows = []
    kinds = _kind(runs)
    col = runs.get("method_kind", pd.Series(None, index=runs.index))
    for (idx, r), kind, mkind in zip(runs.iterrows(), kinds, col, strict=True):
        scope = _scope(r.get("scope"))
        explicit = bound_methods is not None and r["method"] in bound_methods
        if scope is None or pd.isna(r.get("bound")) or r["status"] == "error":
            continue
        if bound_methods is not None and not explicit:
            continue
        if mkind == "heuristic" and scope.level != 4:
            continue
        rows.append((r["instance_hash"], kind, float(r["bound"]), r["method"], scope,
                     r.get("run_key", idx)))
    if analytic:
        for (ihash, kind), grp in runs.assign(objective_kind=kinds).groupby(
                ["instance_hash", "objective_kind"]):
            if kind != "comm_time":
                continue
            lbs = [m.get("lower_bound_s") for m in grp["metrics"] if isinstance(m, dict)]
            lbs = [v for v in lbs if v is not None and np.isfinite(v)]
            if lbs:
                rows.append((ihash, kind, float(max(lbs)), "analytic", ANALYTIC, None))
    return pd.DataFrame(rows, columns=["instance_hash", "objective_kind", "value", "source",
                                       "scope", "run_key"])


def run_gaps(runs: pd.DataFrame, bound_methods: Sequence[str] | None = None,
             analytic: bool = True, levels: Sequence[int] = DEFAULT_LEVELS) -> pd.DataFrame:
    """Every run with its best covering bound and gap (module docstring): the columns
    :data:`GAP_COLUMNS` are added."""
    out = runs.copy()
    for c in GAP_COLUMNS:
        out[c] = None
    if runs.empty:
        return out
    cands = bound_candidates(runs, bound_methods, analytic)
    if not cands.empty:
        # a restricted bound enters only when asked for by name (and then bounds its own run)
        asked = set(bound_methods or ())
        cands = cands[[s.level in levels or (s.restricted and src in asked)
                       for s, src in zip(cands["scope"], cands["source"], strict=True)]]
    by_key = {k: g for k, g in cands.groupby(["instance_hash", "objective_kind"])}
    kinds = _kind(runs)
    values = {c: [] for c in GAP_COLUMNS}
    for (_, r), kind in zip(runs.iterrows(), kinds, strict=True):
        best = _best(r, by_key.get((r["instance_hash"], kind)))
        for c, v in zip(GAP_COLUMNS, best, strict=True):
            values[c].append(v)
    for c in GAP_COLUMNS:
        out[c] = values[c]
    for c in ("best_bound", "gap_pct", "ratio"):
        out[c] = pd.to_numeric(out[c], errors="coerce")
    return out


def routing_gaps(runs: pd.DataFrame) -> pd.Series:
    """Per run, the gap (%) to the best fixed-topology bound covering it (the route LP on the
    same topology and rings): how much of the run's objective is routing."""
    return run_gaps(runs, analytic=False, levels=(4,))["gap_pct"]


def _best(r, cands: pd.DataFrame | None) -> tuple:
    none = (None, None, None, None, None, None)
    obj = r.get("objective")
    if r["status"] not in SOLVED or obj is None or pd.isna(obj) or cands is None:
        return none
    feats = _features(r.get("features"))
    run_key = r.get("run_key")
    best = None
    for value, source, scope, key in zip(cands["value"], cands["source"], cands["scope"],
                                         cands["run_key"], strict=True):
        own = key is not None and key == run_key
        if not (scope.covers(feats) or (own and scope.restricted)):
            continue
        if best is None or value > best[0]:
            best = (value, source, scope)
    if best is None:
        return none
    value, source, scope = best
    obj = float(obj)
    label = f"{source} [{scope.describe()}]"
    if obj > 0 and value > obj * (1 + NEGATIVE_TOL) + 1e-15:
        return (value, source, scope.describe(), None, None,
                f"bound {value:.9g} of {label} exceeds the objective {obj:.9g}: invalid bound")
    gap = 0.0 if obj == 0 else max(0.0, 100.0 * (obj - value) / obj)
    ratio = obj / value if value > 0 else None
    return value, source, scope.describe(), gap, ratio, None
