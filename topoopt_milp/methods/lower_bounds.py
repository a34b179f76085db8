"""``lower-bounds``: the best valid lower bound of a ring scope, as a method (no solution).

The bounds themselves are :mod:`topoopt_milp.methods.bounds.counting` and
:mod:`topoopt_milp.methods.bounds.neighbourhood` and :mod:`topoopt_milp.methods.bounds.gateway`
(with their validity proofs); this module
is the method: it reports the largest of them for the ``rings`` scope, plus the alloc-benders
master's bound after ``master_time`` seconds, stored like any run so that tables measure every
covered solution against it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ..core.backends.pulp_backend import BackendOutcome
from ..core.instance import Instance
from ..core.params import RINGS_HELP, Params, SolveOptions, knob
from ..core.result import SolveResult, Status
from ..core.scope import Scope, ring_scope
from ..core.sizes import dense_estimate
from ..core.spec import MethodSpec
from .alloc_benders.decomposition import master_bound
from .bounds.counting import BOUNDS
from .bounds.gateway import gateway_bound
from .bounds.neighbourhood import neighbourhood_bound
from .result_step import honest_result


@dataclass(frozen=True)
class LowerBoundParams(Params):
    """lower-bounds: which ring space the bound covers, and the Benders master's budget."""

    rings: str = knob("choose", RINGS_HELP, choices=("choose", "any"))
    master_time: float = knob(0.0, "lower-bounds: seconds for the alloc-benders master's bound "
                                   "(0: only the cheap bounds).", minimum=0)
    neighbourhood_time: float = knob(
        30.0, "lower-bounds: seconds for the neighbourhood bound (one MILP per distinct node: its "
              "d links and what its neighbours can forward; 0: skipped).", minimum=0)
    gateway_time: float = knob(
        30.0, "lower-bounds: seconds for the gateway bound (per AllReduce group: the links its "
              "members must spend on leaving it; 0: skipped).", minimum=0)


def bound_scope(instance: Instance | None, options: SolveOptions) -> Scope:
    """Every topology with the port budget; the TotientPerms orders (``rings=choose``) or
    any ring order (``rings=any``); fractional routing."""
    return Scope(**ring_scope(options.method.rings))


def solve(instance: Instance, options: SolveOptions) -> SolveResult:
    """``lower-bounds``: the best of the cheap bounds for the ``rings`` scope (``choose``: the
    TotientPerms orders, alloc-milp's ring space; ``any``: every ring order), the
    neighbourhood bound of that scope within ``neighbourhood_time`` seconds
    (:mod:`topoopt_milp.methods.bounds.neighbourhood`) and the gateway bound within
    ``gateway_time`` (:mod:`topoopt_milp.methods.bounds.gateway`), plus the
    alloc-benders master's bound after ``master_time`` seconds (``choose`` only; 0: skipped).
    Returns no solution, only the bound and its scope (status ``no_solution``), so that
    tables measure every covered solution against it."""
    t0 = time.perf_counter()
    p = options.method
    scope_name = "totient" if p.rings == "choose" else "any"
    values = {name: f(instance) for name, (f, sc) in BOUNDS.items()
              if sc == "any" or sc == scope_name}
    for name, seconds, bound_fn in (("neighbourhood", p.neighbourhood_time, neighbourhood_bound),
                                    ("gateway", p.gateway_time, gateway_bound)):
        left = options.time_left()
        later = p.master_time + (p.gateway_time if name == "neighbourhood" else 0.0)
        if left is not None:  # the method's time limit covers every bound it runs
            seconds = min(seconds, max(0.0, (left - 0.5) * seconds / max(seconds + later, 1e-9)))
        if seconds > 0:
            # "totient" couples successor and predecessor shares through one split: never lower
            values[f"{name}_{scope_name}"] = bound_fn(instance, scope_name, seconds)
    if p.master_time > 0 and scope_name == "totient":
        values["benders_master"] = master_bound(instance, p.master_time)
    values = {k: v for k, v in values.items() if math.isfinite(v)}
    name = max(values, key=values.get)
    note = "; ".join(f"{k} {v:.6g}" for k, v in sorted(values.items(), key=lambda kv: -kv[1]))
    outcome = BackendOutcome(Status.NO_SOLUTION, None, None, time.perf_counter() - t0,
                             "analytic", "", {}, f"best: {name}; {note}")
    return honest_result("lower-bounds", instance, options, outcome, None, None,
                   scope=bound_scope(instance, options), runtime=time.perf_counter() - t0,
                   bound=values[name], info={"bounds_s": values, "best": name})


SPEC = MethodSpec(
    "lower-bounds", "alloc", "exact", "analytic", LowerBoundParams, solve,
    "lower bounds only (no solution): port-aware hop counting, cut-sets, ideal switch, Moore, "
    "the neighbourhood and gateway MILPs, optionally the Benders master", scope=bound_scope,
    memory=lambda i, o: dense_estimate(i))
