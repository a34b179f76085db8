"""The one solve-and-certify path: solve, evaluate, check independently, downgrade on violations.

:func:`solve_checked` is what the command line (``solve``), sweeps (``bench`` and
``reproduce``), ``compare``, the co-optimization outer loop and its table call, and nothing
else. It

1. solves through :func:`topoopt_milp.registry.solve` (warm starts, typed parameters);
2. evaluates the solution (:func:`topoopt_milp.core.evaluate.evaluate`, the metrics of the solution
   file) and summarises it for bound scopes (:class:`~topoopt_milp.core.scope.Features`);
3. re-checks the solution file exactly as it would be written
   (:func:`topoopt_milp.core.check.check_solution`, which shares no code with the solvers);
4. turns any violation into status ``error`` (the violations in ``violations`` and in the
   message): a solver's status is never trusted over the checker.

The time limit covers all four steps (and writing the file): the solver's budget keeps back
:func:`certify_reserve` seconds from the one :class:`~topoopt_milp.core.deadline.Deadline` of
the solve (started by the caller, e.g. at the start of a ``topoopt-milp`` process, or here).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from . import registry
from .core.check import check_solution
from .core.deadline import Deadline, after_solver_s
from .core.evaluate import evaluate
from .core.instance import Instance
from .core.params import ParamError, SolveOptions
from .core.result import SolveResult, Status, solution_text
from .core.scope import Features
from .core.sizes import traffic_counts

log = logging.getLogger(__name__)


def solve_checked(instance: Instance, method: str, options: SolveOptions | None = None,
                  **knobs: Any) -> SolveResult:
    """Solve, evaluate and independently check (``topoopt_milp.solve``).

    Parameters
    ----------
    instance : Instance
        The problem instance.
    method : str
        A method name (``topoopt-milp methods``) or a plug-in reference
        ``package.module:NAME``.
    options : SolveOptions, optional
        Seed, solver limits and method knobs; or give the knobs as keywords.
    **knobs
        Solver and method knobs by name (``time_limit=5``, ``rings="given"``).

    Returns
    -------
    SolveResult
        The result with ``metrics`` (the cost model's view of the solution) and ``features``
        (what bound scopes need); status ``error`` with ``violations`` when the independent
        checker rejects the solution.

    Raises
    ------
    UnknownMethodError, ParamError, SizeError
        As :func:`topoopt_milp.registry.solve`: before any work is done.
    """
    if options is None:
        seed, warm, export = (knobs.pop(k, d) for k, d in
                              (("seed", 0), ("warm_start", None), ("export", None)))
        options = registry.get(method).options(knobs, seed=seed, warm_start=warm, export=export)
    elif knobs:
        raise ParamError(f"{next(iter(knobs))}: give the knobs either in options or as keywords")
    # a bounds-only method (backend analytic) returns no routing: nothing to evaluate or check
    bounds_only = registry.get(method).backend == "analytic"
    return certify_solution(instance, registry.solve(
        instance, method, with_reserve(instance, options, bounds_only)))


def certify_reserve(instance: Instance) -> float:
    """Estimated seconds of steps 2-4, writing the solution file and a fallback routing for
    ``instance``, scaled by the machine's load
    (:func:`~topoopt_milp.core.deadline.after_solver_s` of its commodities)."""
    return after_solver_s(traffic_counts(instance).commodities)


def with_reserve(instance: Instance, options: SolveOptions,
                 bounds_only: bool = False) -> SolveOptions:
    """``options`` whose deadline (started now if it has none and a time limit is set) keeps
    :func:`certify_reserve` seconds for certification and writing (only the fixed part for
    a ``bounds_only`` method: it returns no routing to check).

    Raises
    ------
    ParamError
        When what was spent before the solver and the reserve already exceed the
        allowance of the limit (:meth:`~topoopt_milp.core.deadline.Deadline.refusal`).
    """
    limit = options.solver.time_limit
    if limit is None:
        return options
    deadline = options.deadline or Deadline(float(limit))
    reserve = after_solver_s(0) if bounds_only else certify_reserve(instance)
    reason = deadline.refusal(reserve)
    if reason is not None:
        raise ParamError(f"{instance.name} (n = {instance.n}): {reason}")
    return options.with_(deadline=deadline.keeping(reserve))


def certify_solution(instance: Instance, result: SolveResult) -> SolveResult:
    """Steps 2-4 of the module docstring for a result already computed."""
    metrics = features = None
    if result.topology is not None and result.routing is not None:
        metrics = evaluate(instance, result.topology, result.routing)
        features = Features.of(instance, result.topology, result.routing)
    result = result.with_(metrics=metrics, features=features)
    # the checker reads the very text the solution file will hold (written from the same
    # memo by write_solution), parsed back as any reader of the file would
    problems = check_solution(instance.to_dict(), json.loads(solution_text(result, instance)))
    if problems:
        log.warning("%s: the checker rejects the solution: %s", result.method, problems[0])
        note = f"checker: {len(problems)} violation(s): " + "; ".join(problems[:5])
        result = result.with_(status=Status.ERROR, violations=tuple(problems),
                              message="; ".join(x for x in (result.message, note) if x))
    return result
