"""The route family: minimum communication time routing on a fixed topology.

Given the instance's fixed topology ``L`` (:class:`~topoopt_milp.core.instance.FixedTopology`; on
the command line ``--topology SOL.json``) and its commodities (MP demands and the ring edges of
every AllReduce ring), choose paths and split fractions minimising

    T_comm = max over capacity resources r of  load(r) / cap(r)

where a resource is one directed arc ``(i, j)`` with ``cap = L[i, j] * B`` (the duplex cost
model of DESIGN.md section 2) or, for SNDlib instances, one undirected link whose capacity is
shared by both directions (``load(i->j) + load(j->i) <= U cap``; see :mod:`topoopt_milp.core.sndlib`).

Variants (parameter ``variant``)
------------------------------
``fractional`` (default): the max-concurrent-flow LP. Source-aggregated arc formulation -- one
flow ``f[s, a] >= 0`` per source ``s`` with demand and per arc ``a``::

    min U
    s.t. sum_{a into v} f[s, a] - sum_{a out of v} f[s, a] = D[s, v]   for all s, v != s
         sum_s sum_{a in r} f[s, a] <= U * cap(r)                         for all resources r

Aggregating commodities by source gives ``|S| |A|`` variables instead of ``|K| |A|``; the
optimum is the same (any single-source flow decomposes into paths to its sinks). The flows
are decomposed into simple paths (cycles dropped) to give every commodity its split.
``formulation`` selects ``"per-pair"`` (one flow per ``(s, t)``: same optimum, much
larger, for the benchmark), ``"source"`` or ``"symmetric"``; the default ``"auto"`` uses the
circulant symmetric reduction whenever it applies:

* If the topology is circulant (``L[i, j]`` depends only on ``j - i mod n``) and so is the
  aggregated demand matrix (MP demands plus ring edges), averaging any optimal routing over the
  ``n`` rotations gives an optimal rotation-invariant one (the LP is convex and the problem is
  invariant). Such a routing is the flow of source 0 rotated, and the load of arc
  ``(i, i + delta)`` is the sum of source 0's flow over all arcs of difference ``delta``::

      min U  s.t.  conservation of source 0;  sum_{(i, i+delta)} f[0, (i, i+delta)] <= U L[0, delta]

  ``n d`` variables instead of ``n^2 d``.

``ksp``: the path LP over the ``k = k_paths`` shortest simple paths of each pair
(networkx ``shortest_simple_paths``): ``x[k, p] >= 0``, ``sum_p x[k, p] = 1``,
``sum_{k,p: a in p, a in r} D_k x[k, p] <= U cap(r)``. Its optimum bounds the restricted
problem only (it is at least the fractional optimum).

``unsplittable``: one candidate path per commodity (binary ``y[c, p]``, ``sum_p y = 1``),
MILP with HiGHS/CBC (:func:`solve_milp`) or CP-SAT (:func:`.route_cpsat.solve`, integer volumes,
the scale in ``SolveResult.scale``). Warm-started from shortest paths (candidate 0) or from
``options.warm_start``'s single-path routes when they are candidates.

Ring orders
-----------
The instance's fixed rings (orders and shares; ``--topology SOL.json`` keeps SOL's rings), or,
when it fixes none or with ``rings = "default"``, the default rings laid along the jumps of a
circulant topology (:func:`~topoopt_milp.core.topology.rings_along_jumps`: every ring edge of a
coset group is then one link). The rings routed are part of the result's scope: a route
optimum bounds only solutions with this topology *and* these rings.

The fractional LP runs HiGHS interior point *with crossover* by default (``lp_algorithm``
``ipm``, ``crossover = auto``): the routing is the result, and a vertex solution splits far
fewer commodities. Without crossover the interior point's flows spread every commodity over
all its optimal paths; measured on TopologyFinder's topology with its rings (2 cores, load
0.5-0.9): dlrm-n128-d4 11,372 paths (up to 43 per commodity) against 1,948 (up to 7), 10.5-11.3
against 13.2-13.8 CPU s; ncf-n128-d8 24,960 against 10,683 paths, 24.4 against 49.4 CPU s;
all-to-all on a random 4-regular graph (n = 128) 18,096 against 16,637 paths, 7.4 against 6.8 s.
Simulating the routing (``topoopt-milp simulate``) costs per flow end, so the vertex routing
of dlrm-n128-d4 simulates in 0.5 CPU s instead of ~260 s. ``crossover = off`` skips it (the
searches' inner route LPs do: only their value matters). ``simplex`` and ``pdlp`` are also
available.

Units and results
-----------------
Volumes in units of ``V`` bytes (:func:`_exact.volume_unit`), capacities in links (or the
largest SNDlib capacity, after :mod:`.shared_capacity` has brought shared capacities within
``R_MAX`` of each other, which the HiGHS tolerances need), so ``U`` is O(1). The reported
objective is ``comm_time`` of the returned routing (SNDlib: its congestion); the bound is the
solver's bound in seconds.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from ...core.instance import Instance
from ...core.params import DeadlineExceeded, Params, SolveOptions, k_paths_knob, knob, route_rings_knob
from ...core.result import SolveResult
from ...core.scope import Scope, ring_scope, topology_hash
from ...core.sizes import Estimate, traffic_counts
from ...core.spec import MethodSpec
from ...core.topology import Routing
from .. import model_data as _exact
from ..result_step import honest_result, out_of_time, shortest_paths
from .route_lp import _decompose, _flow_lp, _solve_fractional, symmetric_applies
from .route_paths import (
    _path_columns,
    _path_model,
    _solve_paths,
    _start,
    _unsplit_items,
    _unsplit_routing,
    candidate_paths,
)
from .route_problem import RouteProblem, build_problem, problem_on, ring_orders, the_topology

# The problem and the models live in their own modules; these names are the route family's
# interface (route_cpsat, route_approx, ring_lp and the tests use them from here).
__all__ = [
    "SPEC", "RouteMilpParams", "RouteProblem", "_decompose", "_flow_lp", "_path_columns",
    "_path_model", "_start", "_unsplit_items", "_unsplit_routing", "bound_scope",
    "build_problem", "candidate_paths", "finish", "memory", "problem_on", "ring_orders",
    "solve_milp", "symmetric_applies", "the_topology", "with_shortest_path_fallback",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RouteMilpParams(Params):
    """route: routing on the instance's fixed topology."""

    variant: str = knob("fractional", "route variant: fractional (LP), ksp (LP over k shortest "
                                      "paths), unsplittable (one path each, MILP).",
                        choices=("fractional", "ksp", "unsplittable"))
    k_paths: int = k_paths_knob()
    formulation: str = knob("auto", "route LP formulation: auto (circulant symmetric reduction "
                                    "when it applies), source, per-pair, symmetric.",
                            choices=("auto", "source", "per-pair", "symmetric"))
    rings: str = route_rings_knob()


def bound_scope(instance: Instance | None, options: SolveOptions,
                restricted: str | None = None) -> Scope:
    """The route family's scope: the instance's fixed topology and rings (``instance=None``:
    unnamed); fractional routing, or ``restricted`` (the path restriction of the ksp /
    unsplittable / CP-SAT models)."""
    if restricted is None and getattr(options.method, "variant", "fractional") != "fractional":
        restricted = f"{options.method.variant} over {options.method.k_paths} paths"
    topo_hash = rings = None
    if instance is not None and instance.topology is not None:
        P = build_problem(instance, options)
        topo_hash, rings = topology_hash(P.topology.links), P.rings
    ring_args = ring_scope("fixed", rings) if rings is not None else {"rings": "fixed"}
    more = {} if restricted is None else {"routing": "restricted", "detail": restricted}
    return Scope(topology="fixed", topology_hash=topo_hash, **ring_args, **more)


def memory(instance: Instance, options: SolveOptions, backend: str = "milp") -> Estimate:
    """Fractional: ``S A`` arc flows (``A`` with the circulant symmetric reduction, ``P A``
    per pair); path variants: ``k P`` paths (``A`` arcs of the fixed topology)."""
    p = options.method
    if instance.topology is None:  # the method refuses it by name, with the command to use
        return Estimate(0.0, "no fixed topology", 0.0)
    t = traffic_counts(instance)
    A = 2 * len(instance.topology.links)
    variant = getattr(p, "variant", "unsplittable")
    if variant != "fractional":
        paths = t.pairs * p.k_paths
        return Estimate.model(4.0 * paths, backend, f"{paths:.3g} candidate paths ({t.pairs} "
                                                    "pairs)")
    form = p.formulation
    if form == "auto":
        form = "symmetric" if symmetric_applies(build_problem(instance, options)) else "source"
    rows = {"symmetric": 1, "source": t.sources, "per-pair": t.pairs}[form]
    flows = rows * A
    return Estimate.model(3.0 * flows, backend, f"its {form} LP's {flows:.3g} arc flows ({A} "
                                                "arcs)")


def with_shortest_path_fallback(solve):
    """``solve`` returning, when its time limit runs out while the model is built, the
    shortest paths on the fixed topology with the analytic bound (a route model always has
    an incumbent)."""
    def wrapped(instance: Instance, options: SolveOptions) -> SolveResult:
        started = time.perf_counter()
        try:
            return solve(instance, options)
        except DeadlineExceeded as exc:
            P = build_problem(instance, options)
            return out_of_time("?", instance, options, str(exc), time.perf_counter() - started,
                               fallback=shortest_paths(instance, P.topology, P.rings,
                                                       options.seed))
    wrapped.__doc__ = solve.__doc__
    wrapped.__name__ = solve.__name__
    return wrapped


# -- entry points ---------------------------------------------------------------------------
@with_shortest_path_fallback
def solve_milp(instance: Instance, options: SolveOptions) -> SolveResult:
    """``route-milp``: the variant ``variant`` with PuLP's solvers (HiGHS / CBC)."""
    t0 = time.perf_counter()
    P = build_problem(instance, options)
    variant = options.method.variant
    if variant == "fractional":
        lp_opts = options
        sp = options.solver
        if sp.lp_algorithm == "ipm" and sp.crossover == "auto":
            # The routing is the result: a vertex solution splits far fewer commodities
            # (module docstring), which the user and the simulator pay for per path.
            lp_opts = options.with_(solver=sp.with_(crossover="on"))
        outcome, pair_paths, form = _solve_fractional(P, lp_opts)
        note = f"formulation={form}"
        if lp_opts.solver.crossover == "off" and sp.lp_algorithm == "ipm":
            note += "; ipm without crossover"
        routing = None
        if pair_paths is not None:
            routing = _exact.routing_from_pair_paths(instance, P.topology, P.rings, pair_paths,
                                                     options.seed)
    else:
        outcome, routing = _solve_paths(P, options, variant == "unsplittable")
        note = f"k_paths={options.method.k_paths}"
    obj = outcome.objective * P.sec_per_unit if outcome.objective is not None else None
    bound = outcome.bound * P.sec_per_unit if outcome.bound is not None else None
    if bound is not None and variant == "fractional":
        bound *= P.bound_factor  # links left out of the model (.shared_capacity, step 2)
    detail = None if variant == "fractional" else (
        f"{'one' if variant == 'unsplittable' else 'a split'} of the {options.method.k_paths} "
        "shortest paths per commodity" + (" (links left out of the model avoided)"
                                          if P.dropped is not None else ""))
    return finish("route-milp", P, options, outcome, routing, obj, bound,
                  time.perf_counter() - t0, note=note, restricted=detail)


def finish(method: str, P: RouteProblem, options: SolveOptions, outcome, routing: Routing | None,
           obj_s: float | None, bound_s: float | None, runtime: float, scale: float | None = None,
           exact_model: bool = True, note: str = "", restricted: str | None = None,
           ring_mode: str = "fixed") -> SolveResult:
    """The :class:`SolveResult` through :func:`.certify.honest_result`: objective recomputed from
    ``routing``, bound in seconds, scope the fixed topology and rings (``restricted``: the
    path restriction of the ksp / unsplittable models; ``ring_mode = "choose"``: the bound
    holds for every split over the TotientPerms orders, route-approx with free shares).

    With a per-hop latency the models above ignore the latency term, so the bound adds the
    smallest possible one (``max`` hop distance over commodities times the latency) and the
    result is at best feasible. Instances with shared capacities (SNDlib) report their
    congestion (``objective_kind = "max_link_utilization"``)."""
    inst = P.instance
    if bound_s is not None and inst.latency_us > 0:
        hops = max((P.topology.hop_distances[c.src, c.dst] for c in P.commodities), default=0)
        bound_s += float(hops) * inst.latency_us * 1e-6
    scope = Scope(topology="fixed", topology_hash=topology_hash(P.topology.links),
                  **ring_scope(ring_mode, P.rings),
                  **({} if restricted is None else {"routing": "restricted", "detail": restricted}))
    kind = "max_link_utilization" if P.shared else "comm_time"
    if P.conditioning:
        note = f"{note}; {P.conditioning}" if note else P.conditioning
    return honest_result(method, inst, options, outcome, P.topology if routing is not None else None,
                   routing, scope=scope, runtime=runtime, bound=bound_s, model_objective=obj_s,
                   objective_kind=kind, exact_model=exact_model, scale=scale,
                   notes=[note] if routing is not None else [note, "incumbent: shortest paths"],
                   fallback=None if routing is not None else shortest_paths(
                       inst, P.topology, P.rings, options.seed))


SPEC = MethodSpec(
    "route-milp", "route", "exact", "milp", RouteMilpParams, solve_milp,
    "min-congestion routing on a fixed topology: LP / path LP / unsplittable MILP",
    scope=bound_scope, memory=memory, max_n=2048)
