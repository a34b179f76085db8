"""The ``certify`` portfolio: the best solution and the best bound of one instance within a
wall-clock budget, every registered method chosen by its spec.

Which methods run, and in which order: :mod:`.portfolio_plan` (:func:`plan`).

How the budget is spent
-----------------------
The runs go, in that order, to ``jobs`` worker slots, except the *lead* search
(:func:`lead_first`): with two or more slots above ``exact_max_n``, the first search that
needs no incumbent starts at once and keeps one slot for the whole budget (the searches need
the time, ~140 s per run at n = 128; they build their own starts from the same cheap
heuristics), while the other slots run the phases in order. Each run is a fresh child process
(:func:`topoopt_milp.bench.child.execute`) with the *remaining* budget as its time limit
(behind a lead, a search shares it equally with the searches still waiting: a search uses its
whole limit, so the first one behind the lead took all of it and the next never ran, e.g.
``hop-anneal`` behind ``alloc-alternate`` on ``mixed-n128-d4-g4-mp50``),
counted from the child's own start and holding the work after its solver (the one estimate,
:func:`topoopt_milp.core.deadline.after_solver_s`, that a command-line solve keeps), and a
hard kill at the absolute end
``max(1.2 T, T + 5) - finish`` (``finish`` for writing the answer), so that the whole call
returns within ``max(1.2 T, T + 5 s)``. Every child solves through
:func:`topoopt_milp.pipeline.solve_checked` (so every solution is re-verified by the
independent checker there: a rejected solution is an ``error`` record) and writes its solution
file; the parent keeps the best one's file and copies it for ``--out``.

What a certificate says
-----------------------
Bounds come from the runs of non-heuristic methods whose scope is the instance's problem
(scope level 1: every topology with the port budget; level 4 for a fixed-topology instance)
and from the analytic bound (ideal switch / Moore), valid for every solution. For each of the
two ring spaces of :data:`~topoopt_milp.core.scope.CERTIFIED_SPACES` the bound is the largest
one whose :class:`~topoopt_milp.core.scope.Scope` covers *every* solution of that space
(:func:`~topoopt_milp.core.scope.space_features`); the gap of a space is measured for the best
solution inside that space: ``100 (objective - bound) / objective``. ``status`` is ``optimal``
only when the gap of the instance's own scope (``any``: every ring order; for a fixed
topology, the best solution's own covering bound) is within the solver tolerance; the
portfolio then stops early and kills the runs still going.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import math
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import registry
from ..core.evaluate import lower_bound
from ..core.instance import Instance
from ..core.params import SolverParams
from ..core.scope import ANALYTIC, CERTIFIED_SPACES, Features, Scope, space_features
from ..pipeline import certify_reserve
from .child import Task, execute, kill_run
from .member_outcome import outcome, run_summary
from .portfolio_plan import (  # noqa: F401 - PHASES, PROBE_SHARE, phase_of: the plan's API here too
    EXACT_MAX_N,
    PHASES,
    PROBE_SHARE,
    Entry,
    lead_first,
    phase_of,
    plan,
)
from .runner import method_record
from .store import run_key

log = logging.getLogger(__name__)

MIN_RUN_S = 1.0  # a run is not started with less budget than this
OBJ_TOL = 1e-5  # as the result step's: below it a gap is solver tolerance
NEGATIVE_TOL = 1e-6  # a covering bound above the objective by more is an invalid bound
JSON_KEYS = ("objective", "best_by", "bound_any", "bound_any_by", "gap_any_pct",
             "bound_totient", "bound_totient_by", "gap_totient_pct", "runtime_s", "status")


@dataclass
class Bound:
    value: float
    by: str
    scope: Scope


@dataclass
class Incumbent:
    objective: float
    by: str
    features: Features | None
    path: str  # the solution file its run wrote and checked (copied for --out)


@dataclass
class Certificate:
    """What ``certify`` reports (module docstring); :meth:`to_json` gives the JSON keys."""

    instance: str
    time_limit: float
    best: Incumbent | None = None
    best_totient: Incumbent | None = None
    bounds: list[Bound] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    runtime_s: float = 0.0
    fixed_topology: bool = False
    invalid: list[str] = field(default_factory=list)

    def bound_for(self, features: Features | None) -> Bound | None:
        """The largest bound whose scope covers ``features``: a solution's, or the stand-in
        of a whole ring space (:func:`~topoopt_milp.core.scope.space_features`); ``None`` is
        covered by the widest scopes only."""
        return max((b for b in self.bounds if b.scope.covers(features)),
                   key=lambda b: b.value, default=None)

    def space_bound(self, rings: str) -> Bound | None:
        return self.bound_for(space_features(rings))

    def space_incumbent(self, rings: str) -> Incumbent | None:
        return self.best if rings == "any" else self.best_totient

    def gap_pct(self, rings: str) -> float | None:
        """Gap (%) of the best solution of ring space ``rings`` to that space's bound."""
        inc, b = self.space_incumbent(rings), self.space_bound(rings)
        return _gap(inc, b)

    def certified(self) -> tuple[Bound | None, float | None]:
        """The best bound covering the best solution itself, and its gap (%)."""
        if self.best is None:
            return None, None
        b = self.bound_for(self.best.features)
        return b, _gap(self.best, b)

    def own_gap_pct(self) -> float | None:
        """The gap in the instance's own scope: every ring order, or for a fixed topology
        the best solution's own covering bound."""
        return self.certified()[1] if self.fixed_topology else self.gap_pct("any")

    @property
    def status(self) -> str:
        if self.invalid:
            return "error"
        if self.best is None:
            return "no_solution"
        gap = self.own_gap_pct()
        tol = 100 * max(SolverParams().mip_gap, OBJ_TOL)
        return "optimal" if gap is not None and gap <= tol else "feasible"

    def to_json(self) -> dict[str, Any]:
        """The JSON object of ``certify --format json`` (:data:`JSON_KEYS` first)."""
        ba, bt = self.space_bound("any"), self.space_bound("totient")
        cb, cg = self.certified()
        out = {
            "objective": None if self.best is None else self.best.objective,
            "best_by": None if self.best is None else self.best.by,
            "bound_any": None if ba is None else ba.value,
            "bound_any_by": None if ba is None else ba.by,
            "gap_any_pct": self.gap_pct("any"),
            "bound_totient": None if bt is None else bt.value,
            "bound_totient_by": None if bt is None else bt.by,
            "gap_totient_pct": self.gap_pct("totient"),
            "runtime_s": self.runtime_s,
            "status": self.status,
            "instance": self.instance,
            "time_limit_s": self.time_limit,
            "objective_totient": None if self.best_totient is None
            else self.best_totient.objective,
            "objective_totient_by": None if self.best_totient is None else self.best_totient.by,
            "best_rings_totient": None if self.best is None or self.best.features is None
            else self.best.features.rings_totient,
            "certified_bound": None if cb is None else cb.value,
            "certified_bound_by": None if cb is None else cb.by,
            "certified_gap_pct": cg,
            "invalid_bounds": list(self.invalid),
            "runs": [run_summary(r) for r in self.records],
        }
        return out

    def lines(self) -> list[str]:
        """The text report of ``certify``."""
        out = [f"certify {self.instance}: {self.status} after {self.runtime_s:.1f} s "
               f"(budget {self.time_limit:g} s, {len(self.records)} runs)"]
        if self.best is None:
            out.append("best solution: none found")
        else:
            out.append(f"best solution: {self.best.objective:.6g} s by {self.best.by}"
                       + ("" if self.best.features is None else
                          f" (rings {'in' if self.best.features.rings_totient else 'outside'}"
                          " the TotientPerms orders)"))
        for rings, text in CERTIFIED_SPACES.items():
            b, inc, gap = self.space_bound(rings), self.space_incumbent(rings), self.gap_pct(rings)
            btext = "none" if b is None else f"{b.value:.6g} s by {b.by}"
            itext = "no solution in this scope" if inc is None else \
                f"best {inc.objective:.6g} s by {inc.by}"
            gtext = "-" if gap is None else f"{gap:.2f}%"
            out.append(f"scope {rings} ({text}): bound {btext}; {itext}; certified gap {gtext}")
        # with a fixed topology the status is decided by the bound of that topology (the
        # route methods'), which the two ring-order scopes above (every topology) do not show
        cb, cg = self.certified()
        if self.fixed_topology and cb is not None and cg is not None:
            out.append(f"scope fixed topology (the instance's own; decides the status): bound "
                       f"{cb.value:.6g} s by {cb.by}; certified gap {cg:.2f}%")
        for rec in self.records:  # the members that did not hand back a result, and why
            how = outcome(rec)
            if how != "returned":
                out.append(f"run {rec.get('certify_entry') or rec.get('method')}: {how}")
        for msg in self.invalid:
            out.append(f"invalid bound: {msg}")
        return out


def _gap(inc: Incumbent | None, b: Bound | None) -> float | None:
    if inc is None or b is None:
        return None
    if inc.objective <= 0:
        return 0.0
    return max(0.0, 100.0 * (inc.objective - b.value) / inc.objective)


def store_record(rec: dict[str, Any]) -> dict[str, Any]:
    """A run's record as a run store takes it (without the portfolio's own keys)."""
    return {k: v for k, v in rec.items() if k not in ("solution_file", "certify_entry")}


def portfolio_run_key(instance_hash: str, entry: Entry, k: int, time_limit: float,
                      family: str = "", seed: int = 0) -> str:
    """The run key of the ``k``-th run of a portfolio with budget ``time_limit``: the same
    for the same plan, so that a resumed ``reproduce`` knows an instance already certified
    (its time limit, the remaining budget, is left out)."""
    params = {**entry.knobs, "certify_s": float(time_limit), "certify_run": k}
    return run_key(instance_hash, entry.method, params, seed, family)


def hard_end_s(time_limit: float) -> float:
    """The promise: the whole call returns within ``max(1.2 T, T + 5)`` seconds."""
    return max(1.2 * time_limit, time_limit + 5.0)


def certify(instance: Instance, time_limit: float, *, jobs: int | None = None,
            exact_max_n: int = EXACT_MAX_N, family: str = "", seed: int = 0,
            on_record: Callable[[dict[str, Any]], None] | None = None,
            instance_path: str | None = None, started: float | None = None,
            out: str | None = None) -> Certificate:
    """Run the portfolio on ``instance`` for ``time_limit`` seconds of wall clock (module
    docstring) and return its :class:`Certificate`.

    Parameters
    ----------
    instance : Instance
        The instance.
    time_limit : float
        The budget ``T`` (seconds); the call returns within ``max(1.2 T, T + 5)``.
    jobs : int, optional
        Runs at a time (default: the machine's cores).
    exact_max_n : int
        The largest ``n`` at which the exact and restricted models run.
    family, seed, instance_path
        Recorded in the run records (and their run keys).
    on_record : callable, optional
        Called with every run's store record as it finishes (``bench`` / ``reproduce``
        write them to their run store, so the tables see the same runs).
    started : float, optional
        When the budget started (:func:`time.monotonic`); the command line passes its
        process's start, so that its own start-up counts against the budget too.
    out : str, optional
        Where to copy the best solution's file (as its run wrote it, checked there).
    """
    t0 = time.monotonic() if started is None else float(started)
    jobs = jobs or os.cpu_count() or 1
    deadline = t0 + float(time_limit)
    # what a child keeps inside its limit for the work after its solver (evaluating,
    # checking, writing): the one estimate of core/deadline.py, as a command-line solve's
    reserve = certify_reserve(instance)
    # the parent's last step: collect the killed runs, re-check the kept solutions (about a
    # second per 16k routed pairs on a loaded machine) and write the answer
    finish = 1.5 + instance.n * instance.n / 8000.0
    hard_end = t0 + hard_end_s(time_limit) - finish
    cert = Certificate(instance.name, float(time_limit), fixed_topology=instance.topology is not None)
    analytic = lower_bound(instance)
    if math.isfinite(analytic):
        cert.bounds.append(Bound(float(analytic), "analytic", ANALYTIC))
    levels = (4,) if cert.fixed_topology else (1,)
    data = instance.to_dict()
    ihash = instance.content_hash()
    pending = lead_first(plan(instance, exact_max_n), instance, jobs, exact_max_n)
    log.info("certify %s: %d runs planned: %s", instance.name, len(pending),
             ", ".join(e.label for e in pending))
    workdir = tempfile.mkdtemp(prefix="topoopt-certify-")
    stop = threading.Event()
    procs: dict[int, subprocess.Popen] = {}
    lock = threading.Lock()
    tol = 100 * max(SolverParams().mip_gap, OBJ_TOL)
    best_path: str | None = None

    def closed() -> bool:
        gap = cert.own_gap_pct()
        return gap is not None and gap <= tol

    def launch(k: int, entry: Entry, pool: cf.Executor, share: int = 1) -> cf.Future | None:
        # the child's limit counts from its own start and holds its start-up and the work
        # after its solver (bench/child.py): it gets the remaining budget (its 1 / share part
        # of the time past the reserve), and is not started when the work after its solver
        # would leave it less than MIN_RUN_S
        remaining = deadline - time.monotonic()
        if remaining - reserve < MIN_RUN_S:
            return None
        remaining = reserve + (remaining - reserve) / share
        spec = registry.get(entry.method)
        knobs = {**entry.knobs, "time_limit": round(remaining, 3)}
        params = spec.options(knobs, seed=seed, strict=False).as_params()
        key = portfolio_run_key(ihash, entry, k, time_limit, family, seed)
        task = Task(run_key=key, instance=data,
                    instance_path=instance_path, family=family, method=method_record(spec),
                    params=params, seed=seed, hard_limit_s=max(0.5, hard_end - time.monotonic()),
                    instance_hash=ihash,
                    warm_start_path=best_path if entry.warm else None,
                    solution_out=os.path.join(workdir, f"run{k}.json"))

        def started(proc: subprocess.Popen, k=k) -> None:
            with lock:
                procs[k] = proc

        return pool.submit(execute, task, stop, started)

    def absorb(k: int, entry: Entry, rec: dict[str, Any]) -> None:
        nonlocal best_path
        if on_record is not None:
            on_record(store_record(rec))
        rec["certify_entry"] = entry.label
        cert.records.append(rec)
        status = rec.get("status")
        if status == "error":
            log.info("certify: %s: %s", entry.label, rec.get("error"))
            return
        scope = Scope.from_dict(rec["scope"]) if isinstance(rec.get("scope"), dict) else None
        if rec.get("method_kind") != "heuristic" and scope is not None and scope.level in levels \
                and rec.get("bound") is not None and math.isfinite(float(rec["bound"])):
            cert.bounds.append(Bound(float(rec["bound"]), entry.label, scope))
        obj = rec.get("objective")
        path = rec.get("solution_file")
        if status not in ("optimal", "feasible") or obj is None or not path:
            return
        feats = Features.from_dict(rec["features"]) if isinstance(rec.get("features"), dict) \
            else None
        obj = float(obj)
        better = cert.best is None or obj < cert.best.objective * (1 - 1e-12)
        better_tp = feats is not None and feats.rings_totient and (
            cert.best_totient is None or obj < cert.best_totient.objective * (1 - 1e-12))
        if not (better or better_tp):
            return
        # the file is read only for the answer (_verify): parsing every improving solution
        # of a large instance would eat the budget
        inc = Incumbent(obj, entry.method, feats, path)
        if better:
            cert.best, best_path = inc, path
        if better_tp:
            cert.best_totient = inc

    running: dict[cf.Future, tuple[int, Entry]] = {}
    k = 0
    # the lead search keeps its slot for the whole budget; the searches behind it share theirs
    lead = pending[0] if pending and pending[0].phase == "search" else None
    try:
        with cf.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="certify") as pool:
            while pending or running:
                if closed():
                    break
                cheap_left = any(e.phase in ("heuristic", "heuristic-lp")
                                 for e in [*pending, *(v[1] for v in running.values())])
                while pending and len(running) < jobs:
                    # a warm-started run waits for the cheap heuristics' best incumbent
                    idx = next((i for i, e in enumerate(pending)
                                if not (e.warm and cheap_left)), None)
                    if idx is None:
                        break
                    entry = pending.pop(idx)
                    share = 1
                    if lead is not None and entry is not lead and entry.phase == "search":
                        share += sum(e.phase == "search" for e in pending)
                    fut = launch(k, entry, pool, share)
                    if fut is None:
                        pending.clear()
                        break
                    running[fut] = (k, entry)
                    k += 1
                if not running:
                    break
                done, _ = cf.wait(running, timeout=0.5, return_when=cf.FIRST_COMPLETED)
                for fut in done:
                    kk, entry = running.pop(fut)
                    with lock:
                        procs.pop(kk, None)
                    absorb(kk, entry, fut.result())
            # early stop (gap closed) or out of budget: end what still runs
            log.info("certify: loop ended at %.1f s", time.monotonic() - t0)
            stop.set()
            with lock:
                for proc in procs.values():
                    kill_run(proc)
            for fut in list(running):
                kk, entry = running.pop(fut)
                rec = fut.result()
                if rec.get("status") != "error":
                    absorb(kk, entry, rec)
                else:
                    why = "once the gap was closed" if closed() else "at the limit"
                    rec["error"] = f"certify: stopped {why}; " + str(rec.get("error"))
                    if on_record is not None:
                        on_record(store_record(rec))
                    rec["certify_entry"] = entry.label
                    cert.records.append(rec)
        _verify(cert)
        if out is not None and cert.best is not None:
            shutil.copyfile(cert.best.path, out)
        log.info("certify: answer ready at %.1f s", time.monotonic() - t0)
    finally:
        stop.set()
        with lock:
            for proc in procs.values():
                kill_run(proc)
        shutil.rmtree(workdir, ignore_errors=True)
    cert.runtime_s = time.monotonic() - t0
    return cert


def _verify(cert: Certificate) -> None:
    """Flag any covering bound above a kept solution's objective as invalid (status
    ``error``). The solutions themselves were re-verified by the independent checker in
    their own run (:func:`topoopt_milp.pipeline.solve_checked` checks the solution file
    exactly as written; a rejected one is an ``error`` record and never kept), so the
    answer is that checked file, not re-read here: parsing a routing of n = 256 takes
    seconds of the budget."""
    for inc in (cert.best, cert.best_totient):
        if inc is None:
            continue
        for b in cert.bounds:
            if b.scope.covers(inc.features) and b.value > inc.objective * (1 + NEGATIVE_TOL) + 1e-15:
                cert.invalid.append(f"bound {b.value:.9g} of {b.by} exceeds {inc.by}'s "
                                    f"objective {inc.objective:.9g}")


def process_start() -> float:
    """This process's start on the :func:`time.monotonic` clock (Linux: from
    ``/proc/self/stat``; elsewhere: now)."""
    now = time.monotonic()
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot_s = float(Path("/proc/uptime").read_text().split()[0])
        age = boot_s - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return now
    return now - max(0.0, age)
