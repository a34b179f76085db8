"""One clock for a whole solve: the time limit, when it started, and the time kept back.

The promise of a time limit ``L`` (``--time-limit``): a solve returns within
``allowance(L) = max(1.2 L, L + 5 s)`` of being started, with its incumbent and bound. A
:class:`Deadline` is the one object that carries the limit from the command line down to
the solver call, so that every phase spends from the same budget:

* **start-up** -- the clock starts when the command starts (:func:`process_started` for a
  ``topoopt-milp`` process: the interpreter and the imports count), not when the solver does;
* **warm start and model building** -- builders call ``options.check_deadline()`` between
  their loops, and the PuLP-to-arrays conversion does too;
* **the solver** -- gets what is left, minus what the work after it is expected to cost:
  ``reserve`` (the independent checker, the evaluation and writing the file, estimated by the
  caller from the instance's size) and ``keep`` (extracting the solution, estimated by the
  backend from the measured cost of converting the model, which walks the same variables);
* **after the solver** -- the reserved seconds.

The allowance beyond ``L`` absorbs what cannot be interrupted (a solver's presolve, one
round of a heuristic) and estimation error; ``benchmarks/bench_time_limits.py`` measures it
under load.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field, replace

MIN_BUDGET_S = 0.005  # what a solver asked too late still gets, to hand back its incumbent


def allowance(limit: float) -> float:
    """The promised wall time of a solve with time limit ``limit``: ``max(1.2 L, L + 5)``."""
    return max(1.2 * limit, limit + 5.0)


def process_started() -> float:
    """The :func:`time.perf_counter` reading at which this process started (Linux: from
    ``/proc``; elsewhere: now, so start-up is not counted)."""
    now = time.perf_counter()
    try:
        with open("/proc/self/stat") as fh:  # field 22: start time in clock ticks since boot
            start_ticks = float(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        age = uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return now
    return now - min(max(age, 0.0), 3600.0)


@dataclass(frozen=True)
class Deadline:
    """A time limit of ``limit`` seconds started at ``start`` (a :func:`time.perf_counter`
    reading), with ``reserve`` seconds kept back at the end for the work after the solver.

    ``left(keep)`` is what the solver may still use: ``start + limit - reserve - keep - now``.
    """

    limit: float
    start: float = field(default_factory=time.perf_counter)
    reserve: float = 0.0

    @classmethod
    def since_process_start(cls, limit: float) -> Deadline:
        """The limit counted from the start of this process (a command-line solve)."""
        return cls(float(limit), process_started())

    @property
    def end(self) -> float:
        """When the limit runs out (``perf_counter`` time), reserves included."""
        return self.start + self.limit

    def spent(self) -> float:
        """Seconds since the clock started."""
        return time.perf_counter() - self.start

    def left(self, keep: float = 0.0) -> float:
        """Seconds the solver may still use after keeping back ``keep`` more (may be < 0)."""
        return self.end - self.reserve - keep - time.perf_counter()

    def expired(self, keep: float = 0.0) -> bool:
        return self.left(keep) <= 0.0

    def budget(self, keep: float = 0.0) -> float:
        """The time limit to give a solver now: :meth:`left`, at most ``limit`` and at least
        :data:`MIN_BUDGET_S`."""
        return max(MIN_BUDGET_S, min(self.limit, self.left(keep)))

    def keeping(self, seconds: float) -> Deadline:
        """This deadline with ``seconds`` more kept back at the end."""
        return replace(self, reserve=self.reserve + max(0.0, float(seconds)))

    def refusal(self, after: float, what: str = "--time-limit") -> str | None:
        """Why this limit cannot be honoured when ``after`` seconds of work must follow the
        solver, or ``None``. The solver can be given as little as :data:`MIN_BUDGET_S`, but
        what was spent already and ``after`` cannot be shortened: if they exceed
        :func:`allowance` the promise is broken whatever the solver does, and the solve is
        refused before it starts (the message names the smallest limit that would do).

        A limit smaller than what was spent already (``--time-limit 0.5`` against a second
        of start-up) is refused like any other. Only a clock already past its *allowance*
        (``spent >= allowance``: a caller's clock started long before) is not: the promise
        is broken already, and the method returns at once what it has (its warm start)
        instead of nothing."""
        spent, allow = self.spent(), allowance(self.limit)
        if spent + after <= allow or spent >= allow:
            return None
        need = spent + after
        smallest = math.ceil(min(need / 1.2, need - 5.0))  # allowance(smallest) >= need
        return (f"{what} {self.limit:g}: cannot be honoured: {spent:.1f} s spent before the "
                f"solver and ~{after:.1f} s needed after it (evaluating, checking and "
                f"writing the solution, at load x{load_factor():.1f}) exceed the allowance "
                f"max(1.2 x limit, limit + 5 s) = {allow:g} s; give {what} {smallest} or more")


# Seconds (one idle core) of the work after a solver, per commodity of the instance and
# fixed: the method's fallback routing if it stopped at the deadline, evaluating, the
# independent checker, writing the file and the process's exit. Measured on route-approx
# solutions (its many paths per commodity: ~26 path hops each at n = 64..128, the most of
# any method): 36, 59, 62 us CPU per commodity at n = 32, 64, 128 (1056, 4160, 16512
# commodities), plus 0.1-0.3 s of exit at n = 128 (bench_time_limits.py).
AFTER_S = 0.3
AFTER_S_PER_COMMODITY = 7e-5


def after_solver_s(commodities: int) -> float:
    """Estimated wall seconds of the work after the solver for an instance with
    ``commodities`` routed commodities (MP pairs plus ring edges): ``(AFTER_S +
    AFTER_S_PER_COMMODITY * commodities) * load_factor()``."""
    return (AFTER_S + AFTER_S_PER_COMMODITY * max(0, commodities)) * load_factor()


_STARTUP_SLOWDOWN: list[float] = []  # measured by note_startup() in a command-line process
MAX_SLOWDOWN = 16.0


def note_startup() -> float | None:
    """Measure how much slower than its own CPU time this process has run since it started
    (wall / CPU seconds of the start-up: the interpreter, the imports, all CPU-bound), and let
    :func:`load_factor` use it. Called once by the command line when a command starts; the
    one-minute load average lags a load that has just come (a second solve started beside),
    while this is the slowdown this very process met. ``None`` (nothing recorded) when the
    start-up was too short to measure."""
    wall = time.perf_counter() - process_started()
    cpu = time.process_time()
    if wall < 0.2 or cpu < 0.05:
        return None
    ratio = min(MAX_SLOWDOWN, max(1.0, wall / cpu))
    _STARTUP_SLOWDOWN[:] = [ratio]
    return ratio


def load_factor() -> float:
    """How much slower single-threaded Python runs now than on an idle machine, as the
    one-minute load average per core (at least 1), or the slowdown this process's start-up
    met (:func:`note_startup`) if that is larger: estimated costs are scaled by it."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:  # pragma: no cover
        return 1.0
    return max(1.0, load / max(cores, 1), *_STARTUP_SLOWDOWN)
