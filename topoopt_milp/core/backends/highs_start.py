"""Completing a MIP start before HiGHS sees it.

A warm start of an MILP usually sets the integer columns only (alloc-milp: the link counts of
the start's topology). HiGHS completes such a partial start itself by solving the LP over the
other columns, but that LP has no time limit and runs before HiGHS's own clock starts: 4.4 s
of a 10 s limit at n = 64 under load (256k columns), against an estimate of 1.5 s. So when a
start sets every integer column, :func:`complete_start` solves that LP here, in the model the
caller's ``Highs`` object holds, within :data:`FILL_SHARE` of the time left, and hands HiGHS
the whole start, which HiGHS then only checks; a start it cannot complete in time is
dropped (the method's result is never worse than its warm start anyway: result_step).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import highspy
import numpy as np

if TYPE_CHECKING:
    from ..params import SolveOptions
    from .pulp_backend import MatrixModel

log = logging.getLogger(__name__)

# The share of the solver's time left that completing a MIP start may take (the rest is the
# MIP's): HiGHS's own completion of a partial start has no time limit (4.4 s of a 10 s limit
# at n = 64 under load, against an estimate of 1.5 s).
FILL_SHARE = 0.4


def fills_in(model: MatrixModel, warm_start) -> tuple[np.ndarray, np.ndarray] | None:
    """``(columns, values)`` of a MIP start that sets every integer column but not every
    column (the start :func:`complete_start` completes); ``None`` otherwise."""
    if not warm_start or not model.is_mip:
        return None
    pos = {name: j for j, name in enumerate(model.names)}
    idx = np.array(sorted({pos[k] for k in warm_start if k in pos}), dtype=np.int64)
    ints = np.flatnonzero(model.integer)
    if len(idx) == len(model.cost) or not np.isin(ints, idx).all():
        return None
    val = np.array([float(warm_start[model.names[j]]) for j in idx])
    val[model.integer[idx]] = np.round(val[model.integer[idx]])
    return idx, val


def complete_start(h: highspy.Highs, model: MatrixModel, idx: np.ndarray, val: np.ndarray,
                    options: SolveOptions, keep: float) -> np.ndarray | None:
    """The full start of a MIP start that sets every integer column (:func:`fills_in`): the
    LP over the other columns with the integer ones fixed at their start values, solved in
    the model ``h`` holds within :data:`FILL_SHARE` of the time left; ``h`` is restored to
    the MIP afterwards. ``None`` when the LP is not solved in time or is infeasible (the
    start is then dropped: the method's result is never worse than its warm start anyway)."""
    ints = np.flatnonzero(model.integer).astype(np.int32)
    fix = model.integer[idx]
    cols, vals = idx[fix].astype(np.int32), val[fix]
    cont = np.full(len(ints), highspy.HighsVarType.kContinuous)
    h.changeColsIntegrality(len(ints), ints, cont)
    h.changeColsBounds(len(cols), cols, vals, vals)
    left = options.time_left(keep)
    if left is not None:
        h.setOptionValue("time_limit", max(0.01, FILL_SHARE * left))
    t0 = time.perf_counter()
    h.run()
    ok = h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    x = np.asarray(h.getSolution().col_value, dtype=float) if ok else None
    log.debug("highs: MIP start completed in %.2f s (%s)", time.perf_counter() - t0,
              "used" if ok else f"dropped: {h.modelStatusToString(h.getModelStatus())}")
    h.changeColsBounds(len(cols), cols, model.col_lower[cols], model.col_upper[cols])
    h.changeColsIntegrality(len(ints), ints, np.full(len(ints), highspy.HighsVarType.kInteger))
    h.clearSolver()
    if x is not None:
        x[cols] = vals
    return x
