"""Limits under load (issue 20): the warm start's share of the deadline, the start-up
slowdown behind load_factor, the MIP start completed within a time limit, the reserve of a
bounds-only method."""

from __future__ import annotations

import time

import numpy as np
import pulp
import pytest

from topoopt_milp import registry
from topoopt_milp.core import deadline as dl
from topoopt_milp.core.backends.highs_start import fills_in
from topoopt_milp.core.backends.pulp_backend import pulp_to_matrix, solve_matrix
from topoopt_milp.core.params import SolveOptions, SolverParams
from topoopt_milp.pipeline import certify_reserve, with_reserve
from topoopt_milp.workloads import generators


def test_warm_start_gets_its_share_of_the_time_left():
    d = dl.Deadline(10.0, time.perf_counter())
    w = registry.warm_deadline(d)
    assert w.left() == pytest.approx(registry.WARM_SHARE * d.left(), abs=0.05)
    assert registry.warm_deadline(None) is None


def test_load_factor_takes_the_measured_start_up_slowdown(monkeypatch):
    monkeypatch.setattr(dl, "_STARTUP_SLOWDOWN", [])
    base = dl.load_factor()
    monkeypatch.setattr(dl, "_STARTUP_SLOWDOWN", [base + 3.0])
    assert dl.load_factor() == pytest.approx(base + 3.0)
    measured = dl.note_startup()  # this process has run long enough to measure
    assert measured is None or 1.0 <= measured <= dl.MAX_SLOWDOWN


def _knapsack():
    """A small MILP: integer x (the start sets them), continuous y (HiGHS would complete)."""
    p = pulp.LpProblem("k", pulp.LpMinimize)
    x = [pulp.LpVariable(f"x{i}", 0, 3, cat="Integer") for i in range(4)]
    y = [pulp.LpVariable(f"y{i}", 0) for i in range(4)]
    p += pulp.lpSum((i + 1) * x[i] + 0.5 * y[i] for i in range(4))
    for i in range(4):
        p += y[i] >= 2 - x[i]
    p += pulp.lpSum(x) >= 3
    return p


@pytest.mark.parametrize("start, used", [({"x0": 3, "x1": 0, "x2": 0, "x3": 0}, True),
                                         ({"x0": 0, "x1": 0, "x2": 0, "x3": 0}, False)])
def test_a_start_of_the_integer_columns_is_completed_or_dropped(start, used, caplog):
    model = pulp_to_matrix(_knapsack())
    fill = fills_in(model, start)
    assert fill is not None and len(fill[0]) == 4  # every integer column, no continuous one
    assert fills_in(model, {"x0": 1}) is None  # not every integer column: HiGHS's own way
    opts = SolveOptions(solver=SolverParams(time_limit=5.0)).with_(
        deadline=dl.Deadline(5.0, time.perf_counter()))
    with caplog.at_level("DEBUG", logger="topoopt_milp.core.backends.highs_start"):
        out = solve_matrix(model, opts, start)
    # the optimum whatever the start: x0 = 2, x1 = 1 (cost 4 + 0.5 * 1 for y1 = 1)...
    cold = solve_matrix(model, SolveOptions(), None)
    assert out.objective == pytest.approx(cold.objective)
    assert out.status.has_solution and np.isfinite(out.bound)
    # a feasible start is completed and used; an infeasible one (sum x < 3) is dropped,
    # never handed to HiGHS (whose own completion has no time limit)
    said = [r.getMessage() for r in caplog.records if "MIP start completed" in r.getMessage()]
    assert len(said) == 1 and ("(used)" in said[0]) == used, said


def test_a_bounds_only_method_keeps_only_the_fixed_reserve():
    inst = generators.sparse(64, 4, pairs=400, seed=1)
    opts = registry.get("lower-bounds").options({"time_limit": 10})
    kept = with_reserve(inst, opts, bounds_only=True).deadline.reserve
    assert kept == pytest.approx(dl.after_solver_s(0), rel=0.2)
    assert with_reserve(inst, opts).deadline.reserve >= certify_reserve(inst) * 0.8
