"""Helpers shared by the test modules (importable from any test folder: conftest.py puts
this folder on the path)."""

from __future__ import annotations

from topoopt_milp.core.check import check_solution
from topoopt_milp.core.evaluate import evaluate
from topoopt_milp.core.result import SolveResult, Status, finite_json, solution_dict


def checked(inst, result):
    """``result`` (a :class:`SolveResult`, or anything with ``topology``, ``routing`` and
    ``objective_s``) after asserting that its solution file passes the independent checker."""
    res = result
    if not isinstance(result, SolveResult):
        res = SolveResult("test", Status.FEASIBLE, result.objective_s, None, 0.0,
                          topology=result.topology, routing=result.routing)
    metrics = None if res.topology is None else evaluate(inst, res.topology, res.routing)
    problems = check_solution(inst.to_dict(), finite_json(solution_dict(res, inst, metrics)))
    assert problems == [], problems
    return result
