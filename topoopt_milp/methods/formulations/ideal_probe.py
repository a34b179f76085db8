"""alloc-milp's ideal-switch probe: first look for a topology that attains the ideal switch.

The throughput MILP of :mod:`.alloc` maximises the demand multiplier ``lambda <= 1``, where
``lambda = 1`` is the ideal-switch time (every node's ``max(out, in) / (d B)``, a valid lower
bound on every solution). When the optimum *is* the ideal switch, HiGHS can spend its whole
budget at a dual bound of 1 without finding the incumbent: every branch keeps an LP of value
1, so the bound cannot move, and the search for ``lambda = 1`` competes with bounding work
that can never pay off. Measured on the mixed n = 12, d = 4 instance of
``benchmarks/bench_benders.py`` (``instances/mixed/mixed-n12-d4-g2-mp35.json``): plain
alloc-milp ends 300 s at 0.0985789 s against the bound 0.0981836 (0.40%) under load, or finds
the ideal after 195 s (load 1-2); the feasibility MILP with ``lambda`` as its objective found
it after 35.8 CPU s with seed 0 and not within 68 CPU s with seed 1.

The probe (knob ``probe_ideal``, the share of the time limit it may use) solves the same
model with the row ``lambda >= 1 - g / 2`` (``g`` the MIP gap, at least the result step's
``OBJ_TOL = 1e-5``, the tolerance at which it accepts an objective as meeting its bound): a
feasibility problem. Any solution it finds has ``lambda >= 1 - g`` while ``lambda <= 1`` holds for every
solution of the model (the ideal switch), so the incumbent is optimal within ``g`` -- it is
returned with status ``optimal``, and :func:`~topoopt_milp.methods.result_step.honest_result`
re-checks that claim against the routing's evaluated objective and the analytic bound (it
downgrades the status if they do not meet). When the probe finds nothing (time share spent,
or the row proven infeasible), the plain MILP runs in the time left; nothing of the probe is
kept (its infeasibility would prove only ``T > ideal / (1 - g)``).

How the probe searches (each choice measured on that instance, CPU seconds to the first
topology at the ideal, HiGHS seeds 0-4, load 4-6):

* its objective is the fewest byte-hops (``min sum f``, the flow volume) instead of ``lambda``:
  every LP of the search has ``lambda = 1``, so ``lambda`` gives the branching nothing to
  prefer, while short routes pull the links onto the heavy pairs (3.6, 2.8, > 55, 3.5 s with
  the full multiplicity cap);
* HiGHS stops at the first such topology (MIP gap 1 on that objective: any feasible point
  proves the ideal);
* rounds alternate the space of topologies with at most ``PROBE_CAP = 2`` parallel links per
  pair (a subset of the model's space: a topology found there is optimal in the full space
  too) and the model's own cap, with adjacency binaries ``y <= x <= cap y`` to branch on
  (cap 2 with ``y``: 16.8, 3.7, 4.7, 4.4, 4.7 s; without ``y``: 3.8, 2.9, > 32, 3.0 s);
* the search time is heavy-tailed (a few seconds, or more than a minute), so a round gets
  ``ROUND_S = 10`` s, doubled every second round, each with the next HiGHS seed.

Without a time limit the probe stops after ``MAX_ROUNDS`` rounds.
"""

from __future__ import annotations

import time
from dataclasses import replace

import pulp

from ...core.backends.pulp_backend import solve_pulp
from ...core.deadline import Deadline
from ...core.result import Status
from ..result_step import OBJ_TOL

PROBE_CAP = 2  # parallel links per pair in the restricted rounds
ROUND_S = 10.0  # the first round's seconds, doubled every second round
MAX_ROUNDS = 8  # rounds without a time limit
MIN_ROUND_S = 0.5  # a round is not started with less time than this


def _probe_model(instance, options, build, cap: int, gap: float):
    """alloc-milp's model in feasibility form: ``lambda >= 1 - gap / 2`` (half the gap: the
    first feasible point, anywhere above the row, then meets the result step's tolerance),
    at most ``cap`` links per pair, adjacency binaries, the flow volume as (minimised)
    objective."""
    method = replace(options.method, max_multiplicity=cap)
    prob, parts = build(instance, options.with_(method=method))
    parts["lam"].lowBound = 1.0 - gap / 2
    seen = set()
    for (i, j), x in parts["x"].items():
        if i < j and (i, j) not in seen:
            seen.add((i, j))
            y = prob.add_variable(f"py_{i}_{j}", 0, 1, cat=pulp.LpBinary)
            prob += y <= x, f"py_lo_{i}_{j}"
            prob += x <= cap * y, f"py_up_{i}_{j}"
    prob.setObjective(-pulp.lpSum(parts["f"].values()))  # maximised: the fewest byte-hops
    return prob, parts


def probe(instance, options, build):
    """``(prob, parts, outcome)`` of the probe when it found a topology at the ideal switch
    (outcome status ``optimal``, objective ``lambda``, bound 1), else ``None`` plus a note;
    ``build(instance, options)`` returns alloc-milp's ``(prob, parts)``."""
    share = float(getattr(options.method, "probe_ideal", 0.0))
    if share <= 0:
        return None, ""
    t0 = time.perf_counter()
    left = options.time_left()
    budget = None if left is None else share * left
    gap = max(float(options.solver.mip_gap), OBJ_TOL)
    full = options.method.max_multiplicity
    full = instance.degree if full is None else int(full)
    caps = [min(PROBE_CAP, full)] + ([full] if full > PROBE_CAP else [])
    tried, infeasible = 0, set()
    while budget is not None or tried < MAX_ROUNDS:
        todo = [c for c in caps if c not in infeasible]
        if not todo:
            break
        cap = todo[tried % len(todo)]
        seconds = ROUND_S * 2 ** (tried // 2)
        if budget is not None:
            seconds = min(seconds, budget - (time.perf_counter() - t0))
            if seconds < MIN_ROUND_S:
                break
        prob, parts = _probe_model(instance, options, build, cap, gap)
        sub = options.with_(seed=options.seed + tried,
                            solver=replace(options.solver, time_limit=seconds, mip_gap=1.0),
                            deadline=Deadline(seconds, time.perf_counter()))
        out = solve_pulp(prob, sub, None)
        tried += 1
        lam = out.values.get("lam") if out.status.has_solution and out.values else None
        if lam is not None and lam >= 1.0 - gap:
            spent = time.perf_counter() - t0
            note = (f"ideal-switch probe: a topology at lambda {lam:.9g} >= 1 - {gap:g} "
                    f"(lambda <= 1 is the ideal switch) in {spent:.1f} s, round {tried} "
                    f"(at most {cap} links per pair)")
            # the round's own status (the gap on the byte-hop objective) says nothing here
            return (prob, parts, replace(out, status=Status.OPTIMAL, objective=lam, bound=1.0,
                                         message=note)), ""
        if out.status is Status.INFEASIBLE:
            infeasible.add(cap)  # no topology at the ideal with this cap: its rounds stop
    spent = time.perf_counter() - t0
    what = "proven infeasible" if infeasible and set(caps) <= infeasible else "nothing found"
    return None, f"ideal-switch probe: {what} in {spent:.1f} s ({tried} rounds)"
