"""Solve a PuLP model with HiGHS (through highspy) or CBC, with honest status and bound.

PuLP 3.3.2 reports "Optimal" for runs stopped by a time limit and returns no dual bound
(DESIGN.md section 8), so this backend never trusts PuLP's status:

* **HiGHS** -- the PuLP model is converted to arrays (:class:`MatrixModel`) and passed to
  ``highspy`` directly; status, objective and ``mip_dual_bound`` come from HiGHS itself.
  Formulations that build large LPs may skip PuLP and call :func:`solve_matrix` with arrays.
* **CBC** -- PuLP's ``COIN_CMD`` runs the CBC binary bundled with PuLP with its log redirected to a
  temporary file; the log's ``Result - ...``, ``Objective value`` and ``Lower bound`` lines
  decide status and bound.

The mapping from each solver's statuses to :class:`~topoopt_milp.core.result.Status` lives in
:func:`_highs_status` and :func:`_cbc_status` and nowhere else. Objective and bound are in
*model units*; the formulation converts them (e.g. to seconds).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import highspy
import numpy as np
import pulp
from scipy.sparse import coo_matrix, csc_matrix

from ..deadline import load_factor
from ..params import DeadlineExceeded, ParamError, SolveOptions
from ..result import Status
from .highs_start import complete_start, fills_in

log = logging.getLogger(__name__)

LP_ALGORITHMS = {"simplex": "simplex", "ipm": "ipm", "pdlp": "pdlp"}


@dataclass(frozen=True)
class BackendOutcome:
    """What a backend hands back to a formulation (model units, not seconds).

    ``values`` maps variable names to values; array models also get ``x``, the column vector
    in model order (cheaper than the names for models with millions of columns)."""

    status: Status
    objective: float | None
    bound: float | None
    runtime_s: float
    backend: str
    version: str
    values: Mapping[str, float]
    message: str = ""
    interrupted: bool = False  # stopped by the user (Ctrl-C): the incumbent, not a proof
    x: np.ndarray | None = None
    # LP row duals (HiGHS only, on request: ``solve_matrix(..., row_duals=True)``), model order
    row_duals: np.ndarray | None = None


class _NamedValues(Mapping):
    """Read-only ``name -> value`` view of a column vector; the name index is built on first
    use only (route's LPs read the vector and never pay for it)."""

    def __init__(self, names: list[str], x: np.ndarray):
        self._names, self._x, self._index = names, x, None

    def _idx(self) -> dict[str, int]:
        if self._index is None:
            self._index = {nm: j for j, nm in enumerate(self._names)}
        return self._index

    def __getitem__(self, name: str) -> float:
        return float(self._x[self._idx()[name]])

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


@dataclass
class MatrixModel:
    """A linear (mixed-integer) model in arrays: ``min/max c x + offset`` subject to
    ``row_lower <= A x <= row_upper``, ``col_lower <= x <= col_upper``, ``x_j`` integer where
    ``integer[j]``. ``names[j]`` keys the returned values."""

    A: csc_matrix
    cost: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray
    integer: np.ndarray
    names: list[str]
    row_names: list[str] = field(default_factory=list)
    offset: float = 0.0
    maximize: bool = False

    @property
    def is_mip(self) -> bool:
        return bool(self.integer.any())


# -- PuLP -> arrays ------------------------------------------------------------------------
def pulp_to_matrix(problem: pulp.LpProblem, check: Callable[[], None] | None = None) -> MatrixModel:
    """Arrays of a PuLP model (variables in ``problem.variables()`` order). ``check`` is
    called every few thousand rows (the deadline: converting a large model takes seconds)."""
    variables = problem.variables()
    index = {v.name: j for j, v in enumerate(variables)}
    rows, cols, vals = [], [], []
    lo, up, rnames = [], [], []
    for r, con in enumerate(problem.constraints()):  # the PuLP 4 API: a list, in order
        if check is not None and r % 1024 == 0:
            check()
        name = con.name or f"c{r}"  # unnamed rows (PuLP 4 keeps their names internal)
        for v, a in con.items():
            rows.append(r)
            cols.append(index[v.name])
            vals.append(float(a))
        rhs = -float(con.constant)
        if con.sense == pulp.LpConstraintLE:
            lo.append(-math.inf), up.append(rhs)
        elif con.sense == pulp.LpConstraintGE:
            lo.append(rhs), up.append(math.inf)
        else:
            lo.append(rhs), up.append(rhs)
        rnames.append(name)
    m, n = len(lo), len(variables)
    A = coo_matrix((vals, (rows, cols)), shape=(m, n)).tocsc()
    cost = np.zeros(n)
    offset = 0.0
    if problem.objective is not None:
        for v, a in problem.objective.items():
            cost[index[v.name]] += float(a)
        offset = float(problem.objective.constant)
    return MatrixModel(
        A=A,
        cost=cost,
        col_lower=np.array([-math.inf if v.lowBound is None else v.lowBound for v in variables],
                           dtype=float),
        col_upper=np.array([math.inf if v.upBound is None else v.upBound for v in variables],
                           dtype=float),
        row_lower=np.array(lo, dtype=float),
        row_upper=np.array(up, dtype=float),
        integer=np.array([v.cat == pulp.LpInteger for v in variables], dtype=bool),
        names=[v.name for v in variables],
        row_names=rnames,
        offset=offset,
        maximize=problem.sense == pulp.LpMaximize,
    )


# -- entry points --------------------------------------------------------------------------
def solve_pulp(
    problem: pulp.LpProblem, options: SolveOptions, warm_start: dict[str, float] | None = None
) -> BackendOutcome:
    """Solve ``problem`` with ``options.solver.solver`` (``highs`` or ``cbc``).

    Honours ``time_limit``, ``threads``, ``seed``, ``mip_gap``, ``lp_algorithm`` and
    ``crossover`` (HiGHS, LPs only) and ``export`` (``.mps`` / ``.lp``, written before
    solving). ``warm_start`` maps variable names to values (a MIP start; partial starts are
    completed by the solver where it can)."""
    options.check_deadline()
    if options.export:
        export_model(problem, options.export)
    if options.solver.solver == "highs":
        t0 = time.perf_counter()
        model = pulp_to_matrix(problem, options.check_deadline)
        # reading the solution back walks the same variables and rows in Python as the
        # conversion did (values, flow decomposition, the fallback): keep as much for it
        keep = EXTRACT_PER_CONVERT * (time.perf_counter() - t0)
        return solve_matrix(model, options.with_(export=None), warm_start, keep=keep)
    return _solve_cbc(problem, options, warm_start)


# Seconds of work after the solver (extraction, flow decomposition, the fallback) per second
# of converting the PuLP model: measured 0.43 on alloc-milp at n = 32 (0.73 s after 1.69 s),
# 0.73 at n = 64 before the extraction walked the flows once; kept with a margin.
EXTRACT_PER_CONVERT = 0.6
# Seconds of work after the solver per column of an array model at load 1 (reading the
# column vector, decomposing flows).
EXTRACT_S_PER_COLUMN = 1e-6
# HiGHS's uninterruptible phases per nonzero at load 1, measured on alloc-milp at n = 64
# (770k nonzeros, load 11 on 2 cores): presolve, 10.4 s, which HiGHS's clock counts but does
# not interrupt; completing a partial MIP start (an LP over the continuous variables),
# 5.4 s, before HiGHS's clock starts. The solver is not started when less than both is
# left, and the start's completion comes off the time limit HiGHS is given.
START_S_PER_NONZERO = 2.5e-6
MIP_START_S_PER_NONZERO = 1.3e-6


def solver_keep(model: MatrixModel, keep: float = 0.0) -> float:
    """Seconds to keep back from the solver's budget for the work after it: ``keep`` (the
    caller's measured estimate) or the per-column estimate scaled by the machine's load."""
    return max(keep, EXTRACT_S_PER_COLUMN * len(model.cost) * load_factor())


def mip_start_cost(model: MatrixModel, warm_start) -> float:
    """Estimated seconds HiGHS spends completing a partial MIP start before its clock runs."""
    if not warm_start or not model.is_mip:
        return 0.0
    return MIP_START_S_PER_NONZERO * model.A.nnz * load_factor()


def check_start(model: MatrixModel, options: SolveOptions, keep: float,
                before: float = 0.0) -> None:
    """:class:`DeadlineExceeded` when the deadline leaves less than the solver's own
    uninterruptible start-up (presolve, and ``before`` seconds of work before its clock
    starts) after keeping ``keep``: a solver started then would return nothing better than
    the warm start, late."""
    if options.deadline is None:
        return
    start = START_S_PER_NONZERO * model.A.nnz * load_factor() + before
    if options.deadline.left(keep) < start:
        raise DeadlineExceeded(f"time limit of {options.deadline.limit:g} s reached before "
                               "the solver could start")


def export_model(problem: pulp.LpProblem, path: str) -> None:
    """Write ``problem`` as MPS or LP, chosen by the file extension (see :func:`write_model`)."""
    write_model(pulp_to_matrix(problem), path)


def write_model(model: MatrixModel, path: str) -> None:
    """Write an array model as MPS or LP through HiGHS, with its variable and row names.

    Both files keep the model's objective sense and constant, so any reader gets the
    toolkit's optimum in model units: the MPS file has an ``OBJSENSE`` section (``MAX`` for
    the maximisations) and the constant as the objective row's RHS (``-offset``), the LP
    file a ``max``/``min`` header and the constant in the objective. (PuLP's own writers are
    not used: ``writeMPS`` marks the sense with a comment only, ``*SENSE:Maximize``, which
    HiGHS reads as a minimisation, and both of its writers drop the objective constant.)"""
    if not path.endswith((".mps", ".lp")):
        raise ParamError(f"export: {path!r} must end with .mps or .lp")
    h = new_highs()
    h.setOptionValue("output_flag", False)
    h.passModel(highs_lp(model, names=True))
    # kWarning: e.g. a model without row names, which HiGHS then names r0, r1, ...
    if h.writeModel(path) == highspy.HighsStatus.kError:
        raise ValueError(f"export: HiGHS could not write {path!r}")


def solve_model(
    model: MatrixModel, options: SolveOptions, warm_start: dict[str, float] | None = None,
    row_duals: bool = False,
) -> BackendOutcome:
    """Solve an array model with ``options.solver.solver``: HiGHS directly, CBC through PuLP
    (:func:`matrix_to_pulp`; fine for the small models CBC is used on; no row duals)."""
    if options.solver.solver == "highs":
        return solve_matrix(model, options, warm_start, row_duals)
    return solve_pulp(matrix_to_pulp(model), options, warm_start)


def matrix_to_pulp(model: MatrixModel, name: str = "model") -> pulp.LpProblem:
    """The PuLP model of an array model (variables named ``model.names``)."""
    prob = pulp.LpProblem(name, pulp.LpMaximize if model.maximize else pulp.LpMinimize)

    def bound(x: float) -> float | None:
        return None if math.isinf(x) else float(x)

    xs = [
        prob.add_variable(nm, bound(lo), bound(up), cat=pulp.LpInteger if it else pulp.LpContinuous)
        for nm, lo, up, it in zip(model.names, model.col_lower, model.col_upper, model.integer,
                                  strict=True)
    ]
    prob += pulp.LpAffineExpression(
        [(xs[j], float(c)) for j, c in enumerate(model.cost) if c], constant=model.offset
    )
    A = model.A.tocsr()
    for r in range(A.shape[0]):
        lo, up = model.row_lower[r], model.row_upper[r]
        if math.isinf(lo) and math.isinf(up):
            continue
        lo_, hi_ = A.indptr[r], A.indptr[r + 1]
        expr = pulp.LpAffineExpression(
            [(xs[j], float(v)) for j, v in zip(A.indices[lo_:hi_], A.data[lo_:hi_], strict=True)]
        )
        rname = model.row_names[r] if model.row_names else f"r{r}"
        if lo == up:
            prob += pulp.LpConstraint(expr, pulp.LpConstraintEQ, rname, float(up))
        else:
            if not math.isinf(up):
                prob += pulp.LpConstraint(expr, pulp.LpConstraintLE, rname + "_u", float(up))
            if not math.isinf(lo):
                prob += pulp.LpConstraint(expr, pulp.LpConstraintGE, rname + "_l", float(lo))
    return prob


_BANNER_SHOWN = False


def new_highs() -> highspy.Highs:
    """A Highs instance without its start-up banner on stdout.

    HiGHS prints its copyright banner from C++ on the first construction in a process, before
    any option can be set; it would corrupt machine-readable stdout (``compare --format
    json``, piped tables). The file descriptor is silenced for that one construction."""
    global _BANNER_SHOWN
    if _BANNER_SHOWN:
        return highspy.Highs()
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    _BANNER_SHOWN = True
    return h


def highs_version() -> str:
    return metadata.version("highspy")


def highs_lp(model: MatrixModel, names: bool = False) -> highspy.HighsLp:
    """The ``HighsLp`` of an array model (with column and row names when ``names``)."""
    lp = highspy.HighsLp()
    lp.num_col_ = len(model.cost)
    lp.num_row_ = len(model.row_lower)
    lp.col_cost_ = np.asarray(model.cost, dtype=float)
    lp.col_lower_ = np.asarray(model.col_lower, dtype=float)
    lp.col_upper_ = np.asarray(model.col_upper, dtype=float)
    lp.row_lower_ = np.asarray(model.row_lower, dtype=float)
    lp.row_upper_ = np.asarray(model.row_upper, dtype=float)
    A = csc_matrix(model.A)
    A.sort_indices()
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(float)
    lp.a_matrix_.num_col_ = lp.num_col_
    lp.a_matrix_.num_row_ = lp.num_row_
    lp.offset_ = float(model.offset)
    lp.sense_ = highspy.ObjSense.kMaximize if model.maximize else highspy.ObjSense.kMinimize
    if model.is_mip:
        lp.integrality_ = [
            highspy.HighsVarType.kInteger if b else highspy.HighsVarType.kContinuous
            for b in model.integer
        ]
    if names:
        lp.col_names_ = list(model.names)
        if model.row_names:
            lp.row_names_ = list(model.row_names)
    return lp


def solve_matrix(
    model: MatrixModel, options: SolveOptions, warm_start: dict[str, float] | None = None,
    row_duals: bool = False, keep: float = 0.0,
) -> BackendOutcome:
    """Solve an array model with HiGHS; read status, objective and dual bound from HiGHS.

    The time limit is what ``options.deadline`` leaves after keeping back the work after the
    solver (``keep`` seconds, at least the per-column estimate of :func:`solver_keep`); when
    less than the solver's start-up is left, :class:`DeadlineExceeded` is raised instead of
    starting it (the method then returns its warm start: ``result_step.out_of_time``).

    For a MIP the bound is HiGHS's ``mip_dual_bound``; for an LP solved to optimality it is the
    objective itself (optimal within HiGHS's 1e-7 tolerances), otherwise ``None``."""
    sp = options.solver
    keep = solver_keep(model, keep)
    fill = fills_in(model, warm_start)
    before = 0.0 if fill is not None else mip_start_cost(model, warm_start)
    check_start(model, options, keep, before)
    h = new_highs()
    h.setOptionValue("output_flag", sp.solver_log)
    h.setOptionValue("random_seed", int(options.seed))
    h.setOptionValue("mip_rel_gap", float(sp.mip_gap))
    if sp.threads > 1:
        h.setOptionValue("threads", int(sp.threads))
    if not model.is_mip:
        h.setOptionValue("solver", LP_ALGORITHMS[sp.lp_algorithm])
        if sp.crossover in ("off", "on"):
            h.setOptionValue("run_crossover", sp.crossover)
        if sp.ipm_tolerance is not None:
            h.setOptionValue("ipm_optimality_tolerance", float(sp.ipm_tolerance))

    if options.export:
        write_model(model, options.export)
    h.passModel(highs_lp(model))
    if fill is not None:
        # every integer column is set: complete the continuous ones ourselves, within part of
        # the time left, and give HiGHS the whole start (it then only checks it)
        x = complete_start(h, model, *fill, options, keep)
        if x is not None:
            h.setSolution(len(x), np.arange(len(x), dtype=np.int32), x)
        check_start(model, options, keep)
    elif warm_start:
        pos = {name: j for j, name in enumerate(model.names)}
        idx = [pos[k] for k in warm_start if k in pos]
        if idx:
            val = [float(warm_start[model.names[j]]) for j in idx]
            h.setSolution(len(idx), np.array(idx, dtype=np.int32), np.array(val, dtype=float))

    budget = options.time_left(keep + before)
    if budget is not None:
        # set last: copying a large model into HiGHS takes seconds, which HiGHS's own clock
        # (started by solve) does not see
        h.setOptionValue("time_limit", budget)
    t0 = time.perf_counter()
    h.HandleKeyboardInterrupt = True  # Ctrl-C stops the solver; its incumbent comes back
    h.solve()
    runtime = time.perf_counter() - t0
    log.debug("highs: %d columns, time limit %s s, ran %.2f s; %.2f s kept for the work after it",
              len(model.cost), "-" if budget is None else f"{budget:.2f}", runtime, keep)
    ms = h.getModelStatus()
    info = h.getInfo()
    has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
    status, message = _highs_status(ms, has_sol, h)
    objective = bound = None
    values: Mapping[str, float] = {}
    col = duals = None
    if status.has_solution:
        objective = float(info.objective_function_value)
        sol = h.getSolution()
        col = np.asarray(sol.col_value)
        values = _NamedValues(model.names, col)
        if row_duals and not model.is_mip and sol.dual_valid:
            duals = np.asarray(sol.row_dual, dtype=float)
        if model.is_mip:
            b = float(info.mip_dual_bound)
            bound = b if math.isfinite(b) else None
        elif status is Status.OPTIMAL:
            # HiGHS declares an LP optimal only when primal and dual infeasibilities and the
            # duality gap are within its tolerances (1e-7), so the objective is the bound.
            # (highspy 1.16's getDualObjectiveValue binding cannot return the value.)
            bound = objective
    elif model.is_mip and ms in (highspy.HighsModelStatus.kTimeLimit,
                                 highspy.HighsModelStatus.kInterrupt):
        b = float(info.mip_dual_bound)
        bound = b if math.isfinite(b) else None
    return BackendOutcome(status, objective, bound, runtime, "highs", highs_version(), values,
                          message, interrupted=ms == highspy.HighsModelStatus.kInterrupt,
                          x=col, row_duals=duals)


def _highs_status(ms, has_solution: bool, h) -> tuple[Status, str]:
    """The one place HiGHS model statuses become :class:`Status`."""
    M = highspy.HighsModelStatus
    text = h.modelStatusToString(ms)
    if ms == M.kOptimal or ms == M.kModelEmpty:
        return Status.OPTIMAL, text
    if ms == M.kInfeasible:
        return Status.INFEASIBLE, text
    if ms in (M.kUnbounded, M.kUnboundedOrInfeasible):
        return Status.ERROR, f"{text}: the model is unbounded (a formulation bug)"
    if ms in (M.kTimeLimit, M.kIterationLimit, M.kSolutionLimit, M.kInterrupt,
              M.kObjectiveBound, M.kObjectiveTarget, M.kUnknown, M.kMemoryLimit):
        return (Status.FEASIBLE if has_solution else Status.NO_SOLUTION), text
    return Status.ERROR, text


# -- CBC -----------------------------------------------------------------------------------
_RESULT = re.compile(r"^Result - (.+)$", re.M)
_OBJ = re.compile(r"^Objective value:\s+(\S+)", re.M)
# CBC prints "Lower bound:" when minimising and "Upper bound:" when maximising (already in
# the user's objective sense).
_BOUND = re.compile(r"^(?:Lower|Upper) bound:\s+(\S+)", re.M)
_NO_SOL = re.compile(r"No feasible solution found", re.I)


def cbc_version() -> str:
    return "cbc (pulp " + pulp.__version__ + ")"


def _solve_cbc(
    problem: pulp.LpProblem, options: SolveOptions, warm_start: dict[str, float] | None
) -> BackendOutcome:
    if warm_start:
        for v in problem.variables():
            if v.name in warm_start:
                v.setInitialValue(warm_start[v.name])
    sp = options.solver
    is_mip = problem.isMIP()
    # PuLP writes the model as MPS and reads the solution back in Python, inside the time
    # CBC is given: keep that back as well as the extraction after it
    keep = 3 * EXTRACT_S_PER_COLUMN * len(problem.variables()) * load_factor()
    options.check_deadline(keep)
    # PuLP's bundled CBC binary through COIN_CMD (PULP_CBC_CMD is deprecated in PuLP 3.3), in a
    # private temporary folder that is removed whatever happens, with CBC's log in it
    with tempfile.TemporaryDirectory(prefix="topoopt-cbc-") as tmp:
        log_path = os.path.join(tmp, "cbc.log")
        solver = pulp.COIN_CMD(
            path=cbc_path(),
            msg=False,
            timeLimit=options.time_left(keep),
            threads=sp.threads if sp.threads > 1 else None,
            gapRel=sp.mip_gap if is_mip else None,
            warmStart=bool(warm_start),
            logPath=log_path,
            options=[f"randomCbcSeed {max(1, int(options.seed) + 1)}"] if is_mip else [],
        )
        solver.tmpDir = tmp
        t0 = time.perf_counter()
        try:
            problem.solve(solver)
            text = Path(log_path).read_text()
        except pulp.PulpSolverError as exc:
            return BackendOutcome(Status.ERROR, None, None, time.perf_counter() - t0, "cbc",
                                  cbc_version(), {}, f"cbc failed: {exc}")
        except BaseException:
            # Ctrl-C or SIGTERM (core/stop.py) while PuLP waits for CBC: CBC must not run on
            # to its own limit, nor keep writing into the folder that is removed now
            stop_children(Path(cbc_path()).name)
            raise
    runtime = time.perf_counter() - t0
    status, message = _cbc_status(text, problem, is_mip)
    objective = bound = None
    values: dict[str, float] = {}
    if status.has_solution:
        objective = pulp.value(problem.objective)
        objective = float(objective) if objective is not None else 0.0
        values = {v.name: (v.varValue if v.varValue is not None else 0.0)
                  for v in problem.variables()}
    if status is Status.OPTIMAL:
        bound = objective
    else:
        m = _BOUND.search(text)
        if m:
            b = float(m.group(1))
            bound = b if math.isfinite(b) and abs(b) < 1e49 else None
    return BackendOutcome(status, objective, bound, runtime, "cbc", cbc_version(), values,
                          message)


def stop_children(name: str) -> int:
    """Kill (SIGKILL) and reap this process's child processes whose command name is
    ``name`` (Linux: read from ``/proc``; elsewhere nothing is found); returns how many."""
    me, killed = os.getpid(), 0
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        comm, rest = stat[stat.find("(") + 1: stat.rfind(")")], stat[stat.rfind(")") + 2:].split()
        if len(rest) > 1 and int(rest[1]) == me and comm == name[:15]:  # comm: 15 characters
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                killed += 1
    return killed


def cbc_path() -> str:
    """The CBC binary bundled with PuLP 3.x."""
    from pulp.apis.coin_api import pulp_cbc_path

    return pulp.COIN_CMD.executableExtension(pulp_cbc_path)


def _cbc_status(text: str, problem: pulp.LpProblem, is_mip: bool) -> tuple[Status, str]:
    """The one place CBC outcomes become :class:`Status`: CBC's log first, then PuLP's
    ``status`` / ``sol_status`` as a cross-check (never as the only evidence of optimality)."""
    m = _RESULT.search(text)
    result = m.group(1).strip() if m else ""
    ps, ss = problem.status, problem.sol_status
    low = result.lower()
    if not result:
        # LP runs (``-initialSolve``) print no "Result -" line, only the final status line.
        if re.search(r"^Optimal - objective value", text, re.M) or (
            not is_mip and "Optimal objective" in text
        ):
            return Status.OPTIMAL, "Optimal"
        if re.search(r"infeasible", text, re.I) and ps == pulp.LpStatusInfeasible:
            return Status.INFEASIBLE, "Infeasible"
        if ps == pulp.LpStatusOptimal and ss == pulp.LpSolutionOptimal and \
                "Stopped" not in text and "time" not in text.lower():
            return Status.OPTIMAL, "Optimal (pulp)"
        has = ss in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
        return (Status.FEASIBLE if has else Status.NO_SOLUTION), "cbc: no result line"
    if low.startswith("optimal solution found"):
        return Status.OPTIMAL, result
    if "infeasible" in low:
        return Status.INFEASIBLE, result
    if "unbounded" in low:
        return Status.ERROR, f"{result}: the model is unbounded (a formulation bug)"
    if low.startswith(("stopped", "user ctrl")):  # time/node/solution limits, interrupts
        if _NO_SOL.search(text) or ss == pulp.LpSolutionNoSolutionFound and not _OBJ.search(text):
            return Status.NO_SOLUTION, result
        return Status.FEASIBLE, result
    return Status.ERROR, f"cbc: unrecognised result {result!r}"
