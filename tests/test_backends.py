"""Backends: status, objective and bound come from the solvers, including on time limits."""

from __future__ import annotations

import random

import highspy
import pulp
import pytest
from ortools.sat.python import cp_model

from topoopt_milp.core.backends.cpsat_backend import solve_cpsat
from topoopt_milp.core.backends.pulp_backend import pulp_to_matrix, solve_matrix, solve_pulp
from topoopt_milp.core.params import SolveOptions, SolverParams
from topoopt_milp.core.result import Status

SOLVERS = ("highs", "cbc")


def small_mip() -> pulp.LpProblem:
    """max 5a + 4b + 3c  s.t. 2a + 3b + c <= 5, 4a + b + 2c <= 11, 3a + 4b + 2c <= 8, ints.
    Optimum 13 at (a, b, c) = (2, 0, 1); the LP relaxation is 13 as well."""
    p = pulp.LpProblem("small", pulp.LpMaximize)
    a, b, c = (p.add_variable(x, 0, None, cat="Integer") for x in "abc")
    p += 5 * a + 4 * b + 3 * c
    p += 2 * a + 3 * b + c <= 5
    p += 4 * a + b + 2 * c <= 11
    p += 3 * a + 4 * b + 2 * c <= 8
    return p


def market_split(m: int = 5, seed: int = 3) -> list[tuple[list[int], int]]:
    """Cornuejols-Dawande market split rows: ``sum_j a_ij x_j = floor(sum_j a_ij / 2)`` with
    ``a_ij`` uniform in 0..99 and ``n = 10 (m - 1)`` binaries -- branch and bound needs far more
    than a second for m = 5, while ``x = 0`` plus slacks is an obvious incumbent."""
    rng = random.Random(seed)
    n = 10 * (m - 1)
    rows = []
    for _ in range(m):
        a = [rng.randint(0, 99) for _ in range(n)]
        rows.append((a, sum(a) // 2))
    return rows


def hard_mip(m: int = 5, seed: int = 3) -> pulp.LpProblem:
    """Market split with slacks: min sum |slack|; LP bound 0, a proof needs enumeration."""
    rows = market_split(m, seed)
    n = len(rows[0][0])
    p = pulp.LpProblem("hard", pulp.LpMinimize)
    x = [p.add_variable(f"x{j}", 0, 1, cat="Integer") for j in range(n)]
    sp = [p.add_variable(f"sp{i}", 0) for i in range(m)]
    sm = [p.add_variable(f"sm{i}", 0) for i in range(m)]
    p += pulp.lpSum(sp) + pulp.lpSum(sm)
    for i, (a, b) in enumerate(rows):
        p += pulp.lpSum(aj * xj for aj, xj in zip(a, x, strict=True)) + sp[i] - sm[i] == b
    return p


@pytest.mark.parametrize("solver", SOLVERS)
def test_small_mip_optimal(solver):
    out = solve_pulp(small_mip(), SolveOptions(solver=SolverParams(solver=solver)))
    assert out.status is Status.OPTIMAL
    assert out.objective == pytest.approx(13)
    assert out.bound == pytest.approx(13, rel=1e-6)
    assert round(out.values["a"]) == 2 and round(out.values["c"]) == 1
    assert out.backend == solver and out.version


@pytest.mark.parametrize("solver", SOLVERS)
def test_lp_optimal_with_dual_bound(solver):
    p = pulp.LpProblem("lp", pulp.LpMinimize)
    x = p.add_variable("x", 0)
    y = p.add_variable("y", 0)
    p += x + 2 * y + 1  # objective constant must survive the conversion
    p += x + y >= 3
    p += x <= 2
    out = solve_pulp(p, SolveOptions(solver=SolverParams(solver=solver, lp_algorithm="simplex")))
    assert out.status is Status.OPTIMAL
    assert out.objective == pytest.approx(5)  # x = 2, y = 1
    assert out.bound == pytest.approx(5)


@pytest.mark.parametrize("algo", ["simplex", "ipm", "pdlp"])
def test_highs_lp_algorithms_agree(algo):
    p = pulp.LpProblem("lp", pulp.LpMaximize)
    x = [p.add_variable(f"x{i}", 0, 1) for i in range(6)]
    p += pulp.lpSum((i + 1) * v for i, v in enumerate(x))
    p += pulp.lpSum(x) <= 2.5
    out = solve_pulp(p, SolveOptions(solver=SolverParams(lp_algorithm=algo)))
    assert out.status is Status.OPTIMAL
    assert out.objective == pytest.approx(6 + 5 + 2, rel=1e-4)


@pytest.mark.parametrize("solver", SOLVERS)
def test_infeasible(solver):
    p = pulp.LpProblem("inf", pulp.LpMinimize)
    x = p.add_variable("x", 0, 10, cat="Integer")
    p += x
    p += 2 * x == 7  # no integer solution
    out = solve_pulp(p, SolveOptions(solver=SolverParams(solver=solver)))
    assert out.status is Status.INFEASIBLE
    assert out.objective is None and out.values == {}


@pytest.mark.parametrize("solver", SOLVERS)
def test_time_limit_is_never_optimal(solver):
    """A MILP that cannot be closed in 0.5 s: incumbent + bound (or no solution), not optimal."""
    out = solve_pulp(hard_mip(), SolveOptions(solver=SolverParams(solver=solver, time_limit=0.5,
                                                                  mip_gap=0.0)))
    assert out.status in (Status.FEASIBLE, Status.NO_SOLUTION), out.message
    assert out.runtime_s < 10
    if out.status is Status.FEASIBLE:
        assert out.objective is not None and out.bound is not None
        assert out.bound <= out.objective + 1e-6  # minimisation: bound below incumbent
        assert out.bound < out.objective  # not proven: a gap remains


@pytest.mark.parametrize("solver", SOLVERS)
def test_warm_start_is_accepted(solver):
    p = small_mip()
    out = solve_pulp(p, SolveOptions(solver=SolverParams(solver=solver)), warm_start={"a": 2, "b": 0, "c": 1})
    assert out.status is Status.OPTIMAL and out.objective == pytest.approx(13)


def test_export_mps_and_lp(tmp_path):
    # both export paths (PuLP model, array model) and both formats keep the maximisation and
    # the objective constant: HiGHS reading the file back finds max 5a + 4b + 3c + 2 = 15
    p = small_mip()
    p.objective += 2.0
    for ext in ("mps", "lp"):
        for way, solve in (("pulp", solve_pulp), ("matrix", solve_matrix)):
            path = tmp_path / f"{way}.{ext}"
            model = p if way == "pulp" else pulp_to_matrix(p)
            out = solve(model, SolveOptions(export=str(path)))
            assert out.status is Status.OPTIMAL and out.objective == pytest.approx(15)
            h = highspy.Highs()
            h.setOptionValue("output_flag", False)
            h.readModel(str(path))
            h.run()
            assert h.getLp().sense_ == highspy.ObjSense.kMaximize
            assert h.getInfo().objective_function_value == pytest.approx(15)
    with pytest.raises(ValueError, match="export"):
        solve_pulp(small_mip(), SolveOptions(export=str(tmp_path / "m.txt")))


def test_pulp_to_matrix_bounds_and_senses():
    m = pulp_to_matrix(small_mip())
    assert m.maximize and m.is_mip
    assert m.A.shape == (3, 3) and m.A.nnz == 9
    assert (m.row_upper == [5, 11, 8]).all()


# -- CP-SAT -------------------------------------------------------------------------------
def test_cpsat_optimal_and_hint():
    model = cp_model.CpModel()
    a, b, c = (model.NewIntVar(0, 10, x) for x in "abc")
    model.Add(2 * a + 3 * b + c <= 5)
    model.Add(4 * a + b + 2 * c <= 11)
    model.Add(3 * a + 4 * b + 2 * c <= 8)
    model.Maximize(5 * a + 4 * b + 3 * c)
    out, solver = solve_cpsat(model, SolveOptions(), hint={"a": 2, b: 0})
    assert out.status is Status.OPTIMAL
    assert out.objective == 13 and out.bound == 13
    assert solver.Value(a) == 2 and out.values["c"] == 1
    assert out.backend == "cpsat"


def test_cpsat_infeasible_and_invalid():
    model = cp_model.CpModel()
    x = model.NewIntVar(0, 10, "x")
    model.Add(2 * x == 7)
    model.Minimize(x)
    out, _ = solve_cpsat(model, SolveOptions())
    assert out.status is Status.INFEASIBLE
    bad = cp_model.CpModel()
    y = bad.NewIntVar(0, 10, "y")
    bad.Proto().constraints.add().linear.vars.append(5)  # refers to a missing variable
    bad.Minimize(y)
    out, _ = solve_cpsat(bad, SolveOptions())
    assert out.status is Status.ERROR


def test_cpsat_time_limit_is_never_optimal():
    rows = market_split()
    n = len(rows[0][0])
    model = cp_model.CpModel()
    x = [model.NewBoolVar(f"x{j}") for j in range(n)]
    dev = [model.NewIntVar(0, 10**4, f"dev{i}") for i in range(len(rows))]
    for (a, b), e in zip(rows, dev, strict=True):
        expr = sum(aj * xj for aj, xj in zip(a, x, strict=True)) - b
        model.Add(expr <= e)
        model.Add(-expr <= e)
    model.Minimize(sum(dev))
    out, _ = solve_cpsat(model, SolveOptions(solver=SolverParams(time_limit=0.5, mip_gap=0.0)))
    assert out.status in (Status.FEASIBLE, Status.NO_SOLUTION), out.message
    if out.status is Status.FEASIBLE:
        assert out.bound < out.objective
