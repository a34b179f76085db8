"""``lower-bounds``: the best valid lower bound of a ring scope, as a method (no solution).

The bounds themselves are :mod:`topoopt_milp.methods.bounds.counting` (with
:mod:`~topoopt_milp.methods.bounds.matching` and :mod:`~topoopt_milp.methods.bounds.port_classes`) and
:mod:`topoopt_milp.methods.bounds.neighbourhood`, :mod:`topoopt_milp.methods.bounds.gateway`
and :mod:`topoopt_milp.methods.bounds.coupled`
(with their validity proofs); this module
is the method: it reports the largest of them for the ``rings`` scope, plus the alloc-benders
master's bound after ``master_time`` seconds, stored like any run so that tables measure every
covered solution against it.

Time limit. Some bounds cost far more than others at large ``n`` (measured at n = 2000, 8 MP
pairs per node: ideal switch 0.04 s, Moore 0.9 s, cut-set ``any`` 7 s, the port-aware hop
bounds 22 s each, cut-set ``totient`` 208 s), and a bound is one Python call that cannot be
stopped half-way. With a time limit every bound but the ideal switch (always computed: it is
instant and keeps a bound in the result) therefore runs in a forked child process given the
time still left (less ``RESERVE_S`` for the result); a child that does not answer in time is
ended and its bound is *skipped*. The Benders master gets ``min(master_time, time left)``.
The bounds run cheapest first; those skipped are listed in ``info["skipped"]`` and in the
message. Without a time limit every bound runs in this process.
"""

from __future__ import annotations

import math
import multiprocessing
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
from .bounds.coupled import coupled_bound
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
    coupled_time: float = knob(
        0.0, "lower-bounds: seconds for the coupled neighbourhood bound (the busiest nodes' "
             "neighbourhood MILPs sharing their neighbours' ports and forwarding capacity, "
             "with relay port rows; totient: one ring split per group; 0: skipped).", minimum=0)


def bound_scope(instance: Instance | None, options: SolveOptions) -> Scope:
    """Every topology with the port budget; the TotientPerms orders (``rings=choose``) or
    any ring order (``rings=any``); fractional routing."""
    return Scope(**ring_scope(options.method.rings))


def solve(instance: Instance, options: SolveOptions) -> SolveResult:
    """``lower-bounds``: the best of the cheap bounds for the ``rings`` scope (``choose``: the
    TotientPerms orders, alloc-milp's ring space; ``any``: every ring order), the
    neighbourhood bound of that scope within ``neighbourhood_time`` seconds
    (:mod:`topoopt_milp.methods.bounds.neighbourhood`), the gateway bound within
    ``gateway_time`` (:mod:`topoopt_milp.methods.bounds.gateway`) and the coupled
    neighbourhood bound within ``coupled_time`` (:mod:`topoopt_milp.methods.bounds.coupled`;
    in the scope's model: ``totient`` shares one ring split per group), plus the
    alloc-benders master's bound after ``master_time`` seconds (``choose`` only; 0: skipped).
    Returns no solution, only the bound and its scope (status ``no_solution``), so that
    tables measure every covered solution against it."""
    t0 = time.perf_counter()
    p = options.method
    scope_name = "totient" if p.rings == "choose" else "any"
    chosen = [name for name in ORDER if name in BOUNDS and BOUNDS[name][1] in ("any", scope_name)]
    chosen += [name for name, (_f, sc) in BOUNDS.items()
               if name not in chosen and sc in ("any", scope_name)]
    values: dict[str, float] = {}
    skipped: list[str] = []
    for name in chosen:
        f = BOUNDS[name][0]
        left = options.time_left()
        if left is None or name == "ideal_switch":
            values[name] = f(instance)
            continue
        value = _bounded(f, instance, left - RESERVE_S)
        if value is None:
            skipped.append(name)
        else:
            values[name] = value
    for name, seconds, bound_fn in (("neighbourhood", p.neighbourhood_time, neighbourhood_bound),
                                    ("gateway", p.gateway_time, gateway_bound),
                                    ("coupled", p.coupled_time, coupled_bound)):
        left = options.time_left()
        later = p.master_time + {"neighbourhood": p.gateway_time + p.coupled_time,
                                 "gateway": p.coupled_time}.get(name, 0.0)
        if left is not None:  # the method's time limit covers every bound it runs
            seconds = min(seconds, max(0.0, (left - RESERVE_S) * seconds
                                       / max(seconds + later, 1e-9)))
        if seconds > 0:
            # "totient" couples successor and predecessor shares through one split: never lower
            values[f"{name}_{scope_name}"] = bound_fn(instance, scope_name, seconds)
        elif {"neighbourhood": p.neighbourhood_time, "gateway": p.gateway_time,
              "coupled": p.coupled_time}[name] > 0:
            skipped.append(f"{name}_{scope_name}")
    if p.master_time > 0 and scope_name == "totient":
        left = options.time_left()
        budget = p.master_time if left is None else min(p.master_time, left - RESERVE_S)
        if budget > 0:
            values["benders_master"] = master_bound(instance, budget)
        else:
            skipped.append("benders_master")
    values = {k: v for k, v in values.items() if math.isfinite(v)}
    name = max(values, key=values.get)
    note = "; ".join(f"{k} {v:.6g}" for k, v in sorted(values.items(), key=lambda kv: -kv[1]))
    if skipped:
        note += f"; skipped (time limit): {', '.join(skipped)}"
    outcome = BackendOutcome(Status.NO_SOLUTION, None, None, time.perf_counter() - t0,
                             "analytic", "", {}, f"best: {name}; {note}")
    info = {"bounds_s": values, "best": name, **({"skipped": skipped} if skipped else {})}
    return honest_result("lower-bounds", instance, options, outcome, None, None,
                   scope=bound_scope(instance, options), runtime=time.perf_counter() - t0,
                   bound=values[name], info=info)


ORDER = ("ideal_switch", "moore", "matching_any", "cut_any", "port_hop_any", "port_hop_totient",
         "matching_totient", "cut_totient", "port_class_any")
RESERVE_S = 0.5  # kept for assembling and writing the result


def _bounded(f, instance: Instance, seconds: float) -> float | None:
    """``f(instance)`` computed in a forked child process within ``seconds`` (``None``: out
    of time, the child ended). Fork, not spawn: the child shares the instance's memory."""
    if seconds <= 0:
        return None
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(f, instance, send), daemon=True)
    proc.start()
    send.close()
    try:
        if recv.poll(seconds):
            ok, value = recv.recv()
            if ok:
                return float(value)
            raise RuntimeError(f"lower bound failed in its child process: {value}")
        return None
    except EOFError:  # the child died without an answer (killed, out of memory)
        return None
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        recv.close()


def _child(f, instance: Instance, send) -> None:
    try:
        send.send((True, f(instance)))
    except BaseException as exc:  # reported to the parent, which raises it there
        send.send((False, f"{type(exc).__name__}: {exc}"))
    finally:
        send.close()


SPEC = MethodSpec(
    "lower-bounds", "alloc", "exact", "analytic", LowerBoundParams, solve,
    "lower bounds only (no solution): port-aware hop counting, cut-sets, ideal switch, Moore, "
    "the b-matchings of the one-hop bytes and of each distance level (both counts less the "
    "capacity the nodes' send/receive imbalance keeps idle), the port classes of the "
    "AllReduce groups, the neighbourhood and gateway MILPs, optionally the Benders master",
    scope=bound_scope,
    memory=lambda i, o: dense_estimate(i))
