"""Solve a CP-SAT model (OR-tools) with honest status, objective and best bound.

CP-SAT is integer-only; formulations scale volumes to integers and convert the objective and
bound back (the scale goes into ``SolveResult.scale``). The status mapping lives in
:func:`_cpsat_status` and nowhere else:

==================  ===========================================================
CP-SAT              :class:`~topoopt_milp.core.result.Status`
==================  ===========================================================
OPTIMAL             OPTIMAL
FEASIBLE            FEASIBLE (time limit or gap limit reached with an incumbent)
INFEASIBLE          INFEASIBLE
UNKNOWN             NO_SOLUTION (stopped before finding a solution)
MODEL_INVALID       ERROR (with the validation message)
==================  ===========================================================

As with HiGHS's ``mip_rel_gap``, a run stopped by ``relative_gap_limit`` (``options.mip_gap``)
is reported OPTIMAL by CP-SAT and here: optimal *to the requested gap*; the bound is reported
alongside, so the gap stays visible.
"""

from __future__ import annotations

import logging
import math
import threading
from importlib import metadata
from typing import TYPE_CHECKING

from ..params import ParamError, SolveOptions
from ..result import Status
from .pulp_backend import BackendOutcome

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

log = logging.getLogger(__name__)


def cpsat_version() -> str:
    return metadata.version("ortools")


def solve_cpsat(
    model: cp_model.CpModel, options: SolveOptions, hint: dict | None = None
) -> tuple[BackendOutcome, cp_model.CpSolver]:
    """Solve ``model``; return the outcome and the solver (for ``solver.Value(var)``).

    Honours ``time_limit`` (``max_time_in_seconds``), ``threads`` (``num_workers``), ``seed``
    (``random_seed``) and ``mip_gap`` (``relative_gap_limit``). ``hint`` maps variables (or
    their names) to values; it becomes a solution hint. ``options.export`` ending in ``.pb`` or
    ``.txt`` writes the model proto there."""
    from ortools.sat.python import cp_model  # lazily: 0.5 s to import
    if hint:
        model.ClearHints()
        by_name = None
        for key, val in hint.items():
            var = key
            if isinstance(key, str):
                if by_name is None:
                    by_name = _vars_by_name(model)
                var = by_name.get(key)
                if var is None:
                    continue
            model.AddHint(var, int(round(val)))
    if options.export:
        if not options.export.endswith((".pb", ".txt", ".pbtxt")):
            raise ParamError(f"export: CP-SAT models export to .pb or .txt, not {options.export!r}")
        model.ExportToFile(options.export)
    # a limit spent by the start-up and the model building: the method returns its warm start
    # (result_step.out_of_time) instead of a search of 5 ms that cannot find more
    options.check_deadline()
    sp = options.solver
    solver = cp_model.CpSolver()
    p = solver.parameters
    if options.time_left() is not None:
        p.max_time_in_seconds = options.time_left()
    p.num_workers = sp.threads
    p.random_seed = int(options.seed)
    if sp.mip_gap:
        p.relative_gap_limit = float(sp.mip_gap)
    p.log_search_progress = sp.solver_log
    # Ctrl-C is handled here (StopSearch from the waiting main thread), not by CP-SAT's own
    # SIGINT handler, which aborts the process when the search runs in a worker thread
    p.catch_sigint_signal = False
    code, interrupted = _solve_interruptible(solver, model)
    has_objective = model.HasObjective()
    status, message = _cpsat_status(code, solver, model, has_objective)
    objective = bound = None
    values: dict[str, float] = {}
    if status.has_solution:
        if has_objective:
            objective = float(solver.ObjectiveValue())
            b = float(solver.BestObjectiveBound())
            bound = b if math.isfinite(b) else None
        else:
            objective = bound = 0.0
        resp = solver.ResponseProto()
        for i, var in enumerate(model.Proto().variables):
            values[var.name or f"_v{i}"] = float(resp.solution[i])
    elif has_objective and code == cp_model.UNKNOWN:
        b = float(solver.BestObjectiveBound())
        bound = b if math.isfinite(b) else None
    outcome = BackendOutcome(status, objective, bound, float(solver.WallTime()), "cpsat",
                             cpsat_version(), values, message, interrupted=interrupted)
    return outcome, solver


def _solve_interruptible(solver: cp_model.CpSolver, model: cp_model.CpModel):
    """``solver.Solve(model)`` in a worker thread, so that Ctrl-C (a KeyboardInterrupt in the
    main thread, which waits) stops the search and the incumbent comes back; returns the
    CP-SAT status code and whether the user interrupted it. The wait is on an Event, not on
    ``Thread.join``: a join interrupted by KeyboardInterrupt can mark a running thread as
    finished (CPython 3.11)."""
    result: dict = {}
    done = threading.Event()

    def work() -> None:
        try:
            result["code"] = solver.Solve(model)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            result["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, daemon=True).start()
    interrupted = False
    while not done.is_set():
        try:
            done.wait(0.1)
        except KeyboardInterrupt:
            interrupted = True
            solver.StopSearch()
    if "error" in result:
        raise result["error"]
    return result["code"], interrupted


def _vars_by_name(model: cp_model.CpModel) -> dict[str, cp_model.IntVar]:
    proto = model.Proto()
    return {v.name: model.GetIntVarFromProtoIndex(i) for i, v in enumerate(proto.variables)
            if v.name}


def _cpsat_status(code, solver: cp_model.CpSolver, model: cp_model.CpModel,
                  has_objective: bool) -> tuple[Status, str]:
    """The one place CP-SAT statuses become :class:`Status`."""
    from ortools.sat.python import cp_model  # lazily: 0.5 s to import
    name = solver.StatusName(code)
    if code == cp_model.OPTIMAL:
        return Status.OPTIMAL, name
    if code == cp_model.FEASIBLE:
        return Status.FEASIBLE, name
    if code == cp_model.INFEASIBLE:
        return Status.INFEASIBLE, name
    if code == cp_model.MODEL_INVALID:
        return Status.ERROR, f"{name}: {model.Validate()}"
    return Status.NO_SOLUTION, name
