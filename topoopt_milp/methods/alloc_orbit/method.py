"""alloc-orbit: the best topology that shares the instance's shift symmetry, searched over
link orbits, then routed by the full route LP and checked.

Problem. The alloc problem (every topology with the port budget, fractional routing, ring
orders among the TotientPerms orders), searched over the topologies invariant under the
instance's rotation ``v -> v + s`` (:mod:`.symmetry`). Such a topology is fixed by the link
orbits of one block, and its best routing by the flows of the block's ``s`` sources
(:mod:`.model`): the route LP of a candidate has ``n / s`` times fewer columns than the full
one (2k instead of 65k at ``n = 128, s = 4, d = 4``; ~20 ms instead of 5-10 s).

Search.

1. Start: the best, by that LP, of the warm start and the ``starts`` heuristics whose
   topologies are invariant (TotientPerms and TopologyFinder build theirs from coset rings,
   often invariant) and one seeded random invariant topology.
2. Annealing over link orbits (:mod:`.search`) for ``1 - milp_share`` of the budget.
3. The orbit MILP (alloc-milp over invariant topologies, :func:`.model.build`) for the rest,
   from the annealing's best as its MIP start, so it can only improve on it.

The budget is ``budget`` seconds or the time limit, whichever ends first, minus
``route_reserve`` (at most a quarter of it). Without symmetry (period ``n``) the method
declines at once: its model would be alloc-milp's.
The MILP's dual bound holds only for invariant topologies (the optimum need not be one), so
the method reports no bound: a heuristic, an upper bound on the instance's optimum.

Result. The best link matrix is routed by the route LP with every TotientPerms order as a
candidate (:func:`..alloc_search.reroute.reroute`, ring mode ``choose``, at least as good as
the invariant orders alone), decomposed into paths and re-verified by the independent
checker. Its rings are TotientPerms orders, inside alloc-milp's ring space, so alloc-milp's
bounds and every bound of wider scope cover it.

Measured (``benchmarks/bench_alloc_orbit.py``, ``results/bench-alloc-orbit.md``, T = 150 s):
bert-n128-d4 0.014002 -> 0.012896 s and bert-n64-d4 0.013799 -> 0.012502 s against the best
solutions on record; on gpt3 and candle-n128 it finds nothing better than TopologyFinder's
(invariant) topology with LP routing.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

from ...core.backends.pulp_backend import solve_matrix, solve_model
from ...core.errors import InputError
from ...core.instance import Instance
from ...core.params import DeadlineExceeded, ParamError, Params, SolveOptions, knob
from ...core.result import SolveResult, Status
from ...core.sizes import Estimate
from ...core.spec import MethodSpec
from ...core.topology import Topology
from .. import result_step as _result
from ..alloc_search.reroute import lp_options, reroute
from . import model as M
from . import search
from .symmetry import is_invariant, is_symmetry, period, ring_orders

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AllocOrbitParams(Params):
    """alloc-orbit: the symmetry kept and how the budget is spent."""

    period: int = knob(0, "alloc-orbit: rotation v -> v + period that the topology keeps "
                          "(0: the instance's smallest; else a multiple of it dividing n: "
                          "more freedom, a larger model).", minimum=0)
    max_multiplicity: int = knob(1, "alloc-orbit: most parallel links per node pair.",
                                 minimum=1)
    starts: str = knob("topologyfinder,totientperms",
                       "alloc-orbit: heuristics whose topologies, when invariant, may start "
                       "the annealing (comma-separated; empty: none).")
    milp_share: float = knob(0.5, "alloc-orbit: share of the budget for the orbit MILP after "
                                  "the annealing (0: annealing only).", minimum=0, maximum=1.0)
    t_start: float = knob(0.02, "alloc-orbit: annealing start temperature, relative to the "
                                "current value.", minimum=0)
    budget: float = knob(300.0, "alloc-orbit: most seconds to spend (a time limit may cut "
                                "it shorter).", positive=True)
    max_columns: int = knob(1_000_000, "alloc-orbit: largest orbit MILP, in flow columns "
                                       "period * n * (n - 1); larger: annealing only.",
                            minimum=1)
    route_reserve: float = knob(30.0, "alloc-orbit: seconds of the budget kept for the final "
                                      "route LP and check.", minimum=0)


def chosen_period(instance: Instance, p: AllocOrbitParams) -> int:
    """The period the topology keeps: ``p.period`` or the instance's own; :class:`ParamError`
    when ``p.period`` is not a symmetry."""
    if not p.period:
        return period(instance)
    s = int(p.period)
    if instance.n % s or not is_symmetry(instance, s):
        raise ParamError(f"period: v -> v + {s} is not a symmetry of {instance.name} "
                         f"(its smallest is {period(instance)}; a multiple of it dividing "
                         f"n = {instance.n} is)")
    return s


def memory(instance: Instance, options: SolveOptions) -> Estimate:
    """About four nonzeros per flow column of the orbit MILP (two conservation entries, one
    capacity entry, the bound)."""
    p = options.method if isinstance(options.method, AllocOrbitParams) else AllocOrbitParams()
    try:
        s = chosen_period(instance, p)
    except ParamError:
        s = instance.n
    cols = min(M.columns(instance.n, s), p.max_columns)
    return Estimate.model(4.0 * cols, "milp", f"the orbit MILP (period {s}, {cols} flow columns)")


class _Valuer:
    """The route LP in the orbit space of an invariant link-orbit vector (``inf`` when it is
    not solved to optimality: disconnected traffic), memoised."""

    def __init__(self, instance: Instance, s: int, orders, options: SolveOptions):
        self.instance, self.s, self.orders = instance, s, orders
        self.options = lp_options(options)
        self.orbits = M.Orbits.of(instance.n, s)
        self.seen: dict[bytes, float] = {}

    def __call__(self, z: np.ndarray) -> float:
        key = np.asarray(z, dtype=np.int64).tobytes()
        if key not in self.seen:
            om = M.build(self.instance, self.s, self.orders, 1,
                         support=self.orbits.links(z))
            out = solve_model(om.model, self.options)
            ok = out.status is Status.OPTIMAL and out.x is not None
            self.seen[key] = om.time_s(out.x) if ok else float("inf")
        return self.seen[key]


def solve(instance: Instance, options: SolveOptions) -> SolveResult:
    """``alloc-orbit`` (module docstring); ``feasible`` without a bound; ``info`` holds the
    period, the start, the annealing summary and the MILP's outcome."""
    t0 = time.perf_counter()
    p: AllocOrbitParams = options.method
    cap = int(p.max_multiplicity)
    s = chosen_period(instance, p)
    if s == instance.n:
        return _none(instance, options, t0, f"{instance.name or 'the instance'} has no shift "
                     "symmetry (no rotation v -> v + s, s < n, maps its traffic onto itself): "
                     "alloc-milp is the model over all topologies")
    orders = ring_orders(instance, s)
    value = _Valuer(instance, s, orders, options)
    orb = value.orbits
    rng = np.random.default_rng(options.seed)
    label, z0 = _start(instance, options, p, value, rng)
    info: dict = {"period": s, "blocks": instance.n // s, "start": label}
    if z0 is None:
        return _none(instance, options, t0, f"period {s}: no invariant start topology", info)
    left = options.time_left()
    total = min(p.budget, np.inf if left is None else left)
    reserve = min(p.route_reserve, 0.25 * total)  # a short run keeps a share, not 30 s
    budget = total - reserve - (time.perf_counter() - t0)
    milp = p.milp_share if M.columns(instance.n, s) <= p.max_columns else 0.0
    z, best, summary = search.anneal(orb, z0, value, cap, max(budget * (1 - milp), 0.0), rng,
                                     p.t_start)
    info["anneal"] = summary
    if milp > 0:
        z, best = _milp(instance, options, p, s, orders, z, best, info, t0, reserve)
    info["orbit_value_s"] = best
    sol, why = reroute(instance, Topology(orb.links(z)), "choose", lp_options(options))
    if sol is None:
        return _none(instance, options, t0, f"the orbit topology could not be routed: {why}",
                     info)
    msg = (f"period {s} ({instance.n // s} blocks); start {label} "
           f"{summary['start_s']:.6g} s; annealing {summary['moves']} moves -> "
           f"{summary['best_s']:.6g} s; {info.get('milp', 'no MILP')}; routed by the "
           f"route LP over every TotientPerms order: {sol.objective_s:.6g} s")
    return _result.heuristic("alloc-orbit", instance, options, sol.topology, sol.routing,
                             time.perf_counter() - t0, msg, info=info)


def _start(instance: Instance, options: SolveOptions, p: AllocOrbitParams, value: _Valuer,
           rng: np.random.Generator) -> tuple[str, np.ndarray | None]:
    """The best invariant start by the orbit LP (module docstring, step 1)."""
    orb, cap = value.orbits, int(p.max_multiplicity)
    cands: list[tuple[str, np.ndarray]] = []
    ws = options.warm_start
    if ws is not None and ws.topology is not None and ws.topology.n == instance.n:
        cands.append((f"warm:{ws.method}", np.asarray(ws.topology.links, dtype=np.int64)))
    names = [m.strip() for m in p.starts.split(",") if m.strip()]
    if names and options.run_method is None:
        raise InputError("starts: the start heuristics are handed in by the registry "
                         "(options.run_method); solve through topoopt_milp.solve")
    for name in names:
        res = options.run_method(instance, name, {}, options.seed)
        if res.topology is not None:
            cands.append((name, np.asarray(res.topology.links, dtype=np.int64)))
    scored = []
    for label, L in cands:
        if L.max(initial=0) <= cap and is_invariant(L, orb.s) \
                and (orb.degrees(orb.of_links(L)) == instance.degree).all():
            z = orb.of_links(L)
            scored.append((value(z), label, z))
    z = search.random_state(orb, instance.degree, cap, rng)
    if z is not None:
        scored.append((value(z), f"random:{options.seed}", z))
    scored = [c for c in scored if np.isfinite(c[0])]
    if not scored:
        return "none", None
    v, label, z = min(scored, key=lambda c: c[0])
    return label, z


def _milp(instance: Instance, options: SolveOptions, p: AllocOrbitParams, s: int, orders,
          z: np.ndarray, best: float, info: dict, t0: float, reserve: float
          ) -> tuple[np.ndarray, float]:
    """The orbit MILP from ``z`` (module docstring, step 3) until the budget's end, ``reserve``
    seconds kept: the better of the two."""
    om = M.build(instance, s, orders, int(p.max_multiplicity))
    # solve_matrix holds back ``keep`` seconds of the time limit
    cap_s = p.budget - (time.perf_counter() - t0) - reserve
    left = options.time_left()
    if left is None:
        opts, keep = options.with_(solver=options.solver.with_(time_limit=max(cap_s, 0.1)),
                                   deadline=None), 0.0
    else:
        opts, keep = options, reserve + max(0.0, left - reserve - cap_s)
    try:
        out = solve_matrix(om.model, opts, om.start(om.orbits.links(z)), keep=keep)
    except DeadlineExceeded as exc:
        info["milp"] = f"MILP not started: {exc}"
        return z, best
    text = f"orbit MILP {out.status.value} in {out.runtime_s:.1f} s"
    bound_s = om.bound_time_s(out.bound)
    if bound_s is not None:
        text += f", invariant-only bound {bound_s:.6g} s"
    info["milp"] = text
    if out.x is not None and om.time_s(out.x) < best * (1 - 1e-9):
        zm = np.round(out.x[om.iz:om.itheta]).astype(np.int64)
        info["milp"] += f", improved to {om.time_s(out.x):.6g} s"
        return zm, om.time_s(out.x)
    return z, best


def _none(instance: Instance, options: SolveOptions, t0: float, why: str,
          info: dict | None = None) -> SolveResult:
    return SolveResult("alloc-orbit", Status.NO_SOLUTION, None, None, time.perf_counter() - t0,
                       seed=options.seed, params=options.as_params(), backend="highs",
                       message=why, info=info or {})


SPEC = MethodSpec(
    "alloc-orbit", "alloc", "heuristic", "highs", AllocOrbitParams, solve,
    "annealing and a MILP over the topologies that keep the instance's shift symmetry "
    "(link orbits: route LPs n / period times smaller), then the full route LP (an upper "
    "bound: no bound of its own)", memory=memory, max_n=512)
