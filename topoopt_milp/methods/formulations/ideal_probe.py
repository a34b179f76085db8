"""alloc-milp's ideal-switch probe: first look for a topology that attains the ideal switch.

The throughput MILP of :mod:`.alloc` maximises the demand multiplier ``lambda <= 1``, where
``lambda = 1`` is the ideal-switch time (every node's ``max(out, in) / (d B)``, a valid lower
bound on every solution). When the optimum *is* the ideal switch, HiGHS can spend its whole
budget at a dual bound of 1 without finding the incumbent: every branch keeps an LP of value
1, so the bound cannot move, and the search for ``lambda = 1`` competes with bounding work
that can never pay off. Measured on the mixed n = 12, d = 4 instance of
``benchmarks/bench_benders.py``: 300 s of plain alloc-milp end at 0.0985789 s against the
bound 0.0981836 (0.40%), while the feasibility MILP below finds a topology at 0.0981836 s.

The probe (knob ``probe_ideal``, the share of the time limit it may use) solves the same
model with the row ``lambda >= 1 - g`` (``g`` the MIP gap, at least the result step's
``OBJ_TOL = 1e-5``, the tolerance at which it accepts an objective as meeting its bound): a
feasibility problem. Any solution it finds has ``lambda >= 1 - g`` while ``lambda <= 1`` holds for every
solution of the model (the ideal switch), so the incumbent is optimal within ``g`` -- it is
returned with status ``optimal``, and :func:`~topoopt_milp.methods.result_step.honest_result`
re-checks that claim against the routing's evaluated objective and the analytic bound (it
downgrades the status if they do not meet). When the probe finds nothing (time share spent,
or the row proven infeasible), the plain MILP runs in the time left; nothing of the probe is
kept (its infeasibility would prove only ``T > ideal / (1 - g)``).
"""

from __future__ import annotations

import time
from dataclasses import replace

from ...core.backends.pulp_backend import solve_pulp
from ...core.deadline import Deadline
from ...core.result import Status
from ..result_step import OBJ_TOL


def probe(instance, options, build):
    """``(prob, parts, outcome)`` of the probe when it found a topology at the ideal switch
    (outcome status ``optimal``, bound 1), else ``None`` plus a note; ``build(instance,
    options)`` returns alloc-milp's ``(prob, parts)``."""
    share = float(getattr(options.method, "probe_ideal", 0.0))
    if share <= 0:
        return None, ""
    left = options.time_left()
    seconds = None if left is None else share * left
    prob, parts = build(instance, options)
    gap = max(float(options.solver.mip_gap), OBJ_TOL)
    parts["lam"].lowBound = 1.0 - gap
    sub = options
    if seconds is not None:
        sub = options.with_(solver=replace(options.solver, time_limit=seconds),
                            deadline=Deadline(seconds, time.perf_counter()))
    out = solve_pulp(prob, sub, None)
    if out.status.has_solution and out.objective is not None and out.objective >= 1.0 - gap:
        note = (f"ideal-switch probe: a topology at lambda {out.objective:.9g} >= 1 - {gap:g} "
                f"(lambda <= 1 is the ideal switch) in {out.runtime_s:.1f} s")
        return (prob, parts, replace(out, status=Status.OPTIMAL, bound=1.0,
                                     message="; ".join(x for x in (out.message, note) if x))), ""
    what = "proven infeasible" if out.status is Status.INFEASIBLE else "nothing found"
    return None, f"ideal-switch probe: {what} in {out.runtime_s:.1f} s"
