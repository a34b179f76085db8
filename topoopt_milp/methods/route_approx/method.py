"""``route-approx``: minimum congestion within ``1 + eps``, with a certified bound.

The problem is the max-concurrent-flow LP of :mod:`.route` (model units)::

    min U  s.t.  every commodity k = (s, t) sends d_k = D[s, t] on paths from s to t,
                 load(r) = sum of the flow on the arcs of resource r <= U cap(r)

A resource is one arc (duplex links) or the arcs sharing one capacity (an SNDlib link).

The certified lower bound (weak duality)
----------------------------------------
For resource lengths ``mu >= 0`` (arc length ``l(a) = mu_r`` for the resource ``r`` of ``a``)
and *any* routing with congestion ``U``::

    sum_k d_k dist_l(s_k, t_k) <= sum_a l(a) load(a) = sum_r mu_r load(r) <= U sum_r mu_r cap(r)

because every path of ``k`` is at least as long as its shortest path. Hence for every
``mu >= 0``, ``U* >= LB(mu) = sum_k d_k dist_l(s_k, t_k) / sum_r mu_r cap(r)``. The lengths
need not be optimal duals, only non-negative. Floating point cannot overstate the bound: a
computed Dijkstra distance exceeds the true one by at most a factor ``(1 + u)^h`` along the
true shortest path of ``h < n`` hops (``u = 2^-53``, one rounding per relaxation); the sums are
``math.fsum`` (exactly rounded); products and the division round once each. The bound is
multiplied by ``1 - 4 (n + 8) u``, which covers these ``n + 4`` roundings.

Algorithm (chosen by measurement: ``docs/route_approx.md``)
-----------------------------------------------------------
Path-based column generation. Every pair keeps a *key path* (its path in the first
shortest-path tree of its source) and gets alternative paths ``p`` with fractions ``x_p``;
the key path carries ``1 - sum_p x_p``. Substituting the key path keeps the restricted master
small and sparse::

    min U  s.t.  base(r) + sum_p d_k(p) [|p ∩ r| - |key_k ∩ r|] x_p <= U cap(r)   (all r)
                 sum_{p of k} x_p <= 1       (a row only for pairs with two or more
                 0 <= x_p <= 1                alternatives; one alternative is a bound)

``base(r)`` is the load of all key paths. The master is solved by HiGHS' interior point
method without crossover, rebuilt every round from a pool that drops the columns the last
solution does not use (:mod:`._approx_paths`). Pricing is one all-sources Dijkstra
(:func:`scipy.sparse.csgraph.dijkstra`) at Wentges-smoothed lengths
``alpha mu_best + (1 - alpha) mu_master``; it gives the bound above and, per pair, a
shortest path that enters the master when it is shorter under the master's duals than every
path the pair has (for an optimal master, the pair's dual is ``d_k`` times that minimum
length, so this is exactly a negative reduced cost). At most ``max_cols`` columns enter per
round, the most improving first; three more Dijkstra runs along the smoothing segment only
improve the bound.

Circulant symmetry: with a circulant topology and rotation-invariant demand, averaging any
optimal routing over the ``n`` rotations keeps it optimal, so source 0 suffices. Its columns
are whole shortest-path trees (Dantzig-Wolfe, primal simplex warm-started as trees arrive):
one convexity row and one capacity row per
difference class ``delta`` (``sum_{a of class delta} load_0(a) <= U L[0, delta]``). The bound
then uses the rotation-invariant lengths ``mu_delta / n`` on the full graph and the *full*
demand matrix, so it stays valid whatever the demand.

The incumbent ``upper`` is always recomputed from the arc loads of the returned fractions.
The run stops when ``(upper - lower) / upper <= eps``, when no column improves (the master
is then optimal), at ``time_limit`` or at ``max_iter``, returning incumbent and bound.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import scipy

from ...core.backends.pulp_backend import BackendOutcome, highs_version
from ...core.deadline import after_solver_s
from ...core.errors import InputError
from ...core.instance import Instance
from ...core.params import Params, SolveOptions, knob, route_rings_knob
from ...core.result import SolveResult, Status
from ...core.sizes import Estimate
from ...core.spec import MethodSpec
from .. import model_data as _exact
from . import balance, reverse
from . import common as core
from .common import COLS_PER_ARC, ApproxResult
from .paths import solve_paths
from .trees import solve_trees
from .warm import INFO_KEY, WarmStart

# the start routing's cost as a share of after_solver_s, measured: 1.3 of 4.9 s at n = 256
# all-to-all (0.27), 13.6 of 73.6 s at n = 1024, d = 8 (0.18); 2 x (before) left the
# n = 1024 search 68 of its 300 s
START_SHARE = 0.3
OPTIMAL_GAP = 1e-6  # a certified gap this small is reported as optimal (LP tolerances)

__all__ = ["SPEC", "ApproxResult", "RouteApproxParams", "approx_min_congestion", "solve",
           "warm_route"]


@dataclass(frozen=True)
class RouteApproxParams(Params):
    """route-approx: the certified (1 + epsilon)-approximate route LP."""

    epsilon: float = knob(0.01, "route-approx: target certified gap (upper - lower) / upper.",
                          positive=True, maximum=0.999)
    formulation: str = knob("auto", "route-approx: auto (circulant reduction when it applies), "
                                    "source (paths), symmetric.",
                            choices=("auto", "source", "symmetric"))
    rings: str = route_rings_knob(choose=True)
    columns: str = knob("paths", "route-approx: master columns: paths (one per commodity path, "
                                 "the faster) or trees (one shortest-path tree per source).",
                        choices=("paths", "trees"))


def approx_min_congestion(
    n: int,
    arcs: np.ndarray,
    res_arcs,
    res_cap: np.ndarray,
    demand: np.ndarray,
    epsilon: float = 0.01,
    time_limit: float | None = None,
    symmetric: bool = False,
    max_iter: int = 1000,
    max_cols: int | None = None,
    init_rounds: int = 1,
    seed: int = 0,
    columns: str = "paths",
    warm: WarmStart | None = None,
) -> ApproxResult:
    """Minimum congestion within ``1 + epsilon``, with a certified bound (module docstring).

    Parameters
    ----------
    n : number of nodes.
    arcs : ``(m, 2)`` int array of distinct directed arcs ``(u, v)``.
    res_arcs : sequence of int arrays, the arcs of each capacity resource; every arc in
        exactly one resource.
    res_cap : ``(R,)`` positive capacities.
    demand : dense ``(n, n)`` matrix ``D[s, t] >= 0`` (the diagonal is ignored); every pair
        with demand must be connected.
    epsilon : target relative gap ``(upper - lower) / upper``.
    time_limit : seconds; the incumbent and the best bound are returned when it runs out.
    symmetric : the topology is circulant and the demand rotation-invariant (checked).
    max_iter : pricing rounds at most.
    max_cols : path columns entering per round (default ``max(COLS_PER_ARC m, n^2 / 16)``).
    columns : ``"paths"`` (:mod:`.paths`) or ``"trees"`` (per-source tree columns,
        :mod:`.trees`); the circulant reduction ignores it.
    warm : a :class:`.warm.WarmStart` of a nearby topology (path columns only; ignored by
        the circulant reduction and tree columns).
    """
    t0 = time.perf_counter()
    arcs = np.asarray(arcs, dtype=np.int64).reshape(-1, 2)
    m = len(arcs)
    if time_limit is not None and not symmetric:
        _probe(n, arcs, res_arcs, res_cap, demand, core.Limits(t0, time_limit, max_iter, epsilon))
    D = np.asarray(demand, dtype=float)  # not copied unless its diagonal must be cleared
    if D.shape != (n, n):
        raise ValueError(f"demand: expected an ({n}, {n}) matrix, got shape {D.shape}")
    if (D < 0).any() or not np.isfinite(D).all():
        raise ValueError("demand: volumes must be finite and non-negative")
    if D.diagonal().any():
        D = D.copy()
        np.fill_diagonal(D, 0.0)
    res_cap = np.asarray(res_cap, dtype=float)
    if len(res_cap) != len(res_arcs) or (res_cap <= 0).any():
        raise ValueError("res_cap: need one positive capacity per resource")
    res_of_arc = np.full(m, -1, dtype=np.int64)
    for r, a in enumerate(res_arcs):
        if (res_of_arc[np.asarray(a, dtype=np.int64)] >= 0).any():
            raise ValueError(f"res_arcs: resource {r} shares an arc with another resource")
        res_of_arc[np.asarray(a, dtype=np.int64)] = r
    if (res_of_arc < 0).any():
        raise ValueError("res_arcs: every arc needs a resource")
    arc_id = np.full((n, n), -1, dtype=np.int64 if m >= 2**31 else np.int32)  # 400 MB at 10^4
    arc_id[arcs[:, 0], arcs[:, 1]] = np.arange(m)
    if (arc_id[arcs[:, 0], arcs[:, 1]] != np.arange(m)).any():
        raise ValueError("arcs: duplicate arcs (merge parallel links into one capacity)")
    limits = core.Limits(t0, time_limit, max_iter, epsilon)
    if symmetric:
        if len(res_arcs) != m:
            raise ValueError("symmetric: needs one resource per arc (no shared capacities)")
        return _solve_trees(n, arcs, arc_id, res_of_arc, res_cap, D, limits)
    if columns == "trees":
        return solve_trees(n, arcs, arc_id, res_of_arc, res_cap, D, limits, init_rounds, seed)
    if columns != "paths":
        raise ValueError(f"columns: expected 'paths' or 'trees', got {columns!r}")
    if max_cols is None:
        max_cols = max(COLS_PER_ARC * m, n * n // 16)
    return solve_paths(n, arcs, arc_id, res_of_arc, res_cap, D, limits, max_cols, init_rounds,
                       seed, warm)


def _probe(n, arcs, res_arcs, res_cap, demand, limits) -> None:
    """:class:`~.common.StartTooCostly` when one all-sources pricing (timed on a few sources,
    :meth:`~.common.Pricer.probe`) does not fit in the time left: checked before the dense
    ``n x n`` copies the search makes (10 s of a 20 s limit at n = 10^4, load 7)."""
    if len(arcs) == 0:
        return
    sizes = np.array([len(a) for a in res_arcs])
    res_of_arc = np.zeros(len(arcs), np.int64)
    res_of_arc[np.concatenate([np.asarray(a, np.int64) for a in res_arcs])] = np.repeat(
        np.arange(len(res_arcs)), sizes)
    cap = np.asarray(res_cap, float)
    sources = np.flatnonzero(np.asarray(demand).sum(axis=1) > 0)
    pricer = core.Pricer(n, arcs, res_of_arc, cap, sources, None, None, False)
    pricer.limits = limits
    if pricer.probe(core.normalise(1.0 / cap, cap, None)) > 0 and not pricer.affords(1):
        raise core.StartTooCostly(f"one all-sources pricing (~{pricer.cost:.1f} s) does not "
                                  f"fit in the {max(0.0, limits.left()):.1f} s left")


# -- circulant case: source-0 trees (Dantzig-Wolfe) -----------------------------------------
def _solve_trees(n, arcs, arc_id, res_of_arc, cap, D, limits) -> ApproxResult:
    timings = dict.fromkeys(("setup", "master", "pricing", "columns"), 0.0)
    t = time.perf_counter()
    _check_circulant(n, arcs, cap[res_of_arc], D)
    delta = (arcs[:, 1] - arcs[:, 0]) % n
    classes, cls_of_arc = np.unique(delta, return_inverse=True)
    ccap = np.zeros(len(classes))
    ccap[cls_of_arc] = cap[res_of_arc]
    C = len(classes)
    sources = np.array([0])
    pricer = core.Pricer(n, arcs, cls_of_arc, ccap, sources, D, D[:1], True)
    h = core.master_highs(np.concatenate([[1.0], np.full(C, -np.inf)]), np.concatenate([[1.0], np.zeros(C)]),
               1 + np.arange(C), ccap, "simplex")
    trees, loads = [], []

    def add(dist, pred):
        acc = core.tree_sum_up(core.tree_order(dist), pred, D[:1], sources)[0]
        v = np.flatnonzero((pred[0] >= 0) & (acc > 0))
        a = arc_id[pred[0, v], v]
        cl = np.bincount(cls_of_arc[a], weights=acc[v], minlength=C)
        nz = np.flatnonzero(cl > 0)
        h.addCols(1, np.zeros(1), np.zeros(1), np.array([np.inf]), 1 + len(nz),
                  np.array([0], np.int32), np.concatenate([[0], 1 + nz]).astype(np.int32),
                  np.concatenate([[1.0], cl[nz]]))
        trees.append(pred[0].copy())
        loads.append(cl)

    mu0 = core.normalise(1.0 / ccap, ccap, None)
    dist, pred, lb = pricer(mu0)
    if not np.isfinite(dist).all():
        raise ValueError("demand: a pair with demand is not connected")
    bound = pricer.bound(lb, mu0)
    add(dist, pred)
    timings["setup"] = time.perf_counter() - t
    history, status, alpha, it, x = [], "iteration_limit", core.ALPHA, 0, np.array([0.0, 1.0])
    while it < limits.max_iter:
        it += 1
        t = time.perf_counter()
        stop = core.run_master(h, limits)
        timings["master"] += time.perf_counter() - t
        if stop:  # keep the last master solution
            status = stop
            break
        sol = h.getSolution()
        x, y = np.asarray(sol.col_value), np.asarray(sol.row_dual)
        cl = np.stack(loads).T @ np.clip(x[1:], 0, None)
        upper = float((cl / ccap).max())
        mu = core.normalise(-y[1:], ccap, mu0)
        dist, pred = bound.price(alpha, mu, timings)
        history.append((it, upper, bound.lb, limits.elapsed(), len(trees)))
        status = limits.stop(upper, bound.lb)
        if status:
            break
        acc = core.tree_sum_up(core.tree_order(dist), pred, D[:1], sources)[0]
        v = np.flatnonzero(pred[0] >= 0)
        cost = float((acc[v] * mu[cls_of_arc[arc_id[pred[0, v], v]]]).sum())
        if cost >= y[0] - core.PRICE_TOL * abs(y[0]):
            if alpha == 0.0:
                status = "optimal"
                break
            alpha = 0.0
            continue
        alpha = core.ALPHA
        t = time.perf_counter()
        add(dist, pred)
        timings["columns"] += time.perf_counter() - t
    if status in ("", "iteration_limit"):  # never an empty reason
        status = f"iteration_limit ({limits.max_iter} rounds)"
    w = np.zeros(len(trees))
    w[: len(x) - 1] = np.clip(x[1:], 0.0, None)
    w[w <= 1e-9 * w.sum()] = 0.0
    w = w / w.sum() if w.sum() > 0 else np.eye(len(trees))[0]
    cl = np.stack(loads).T @ w
    arc_load = cl[cls_of_arc]  # the rotated routing puts the class total on every arc
    upper = float((np.bincount(res_of_arc, weights=arc_load, minlength=len(cap)) / cap).max())
    timings["total"] = limits.elapsed()
    return ApproxResult(
        n=n, upper=upper, lower=min(bound.lb, upper), symmetric=True, sources=sources,
        key=np.zeros((0, n), np.int64), alt_src=np.zeros(0, np.int64),
        alt_dst=np.zeros(0, np.int64), alt_ptr=np.zeros(1, np.int64),
        alt_nodes=np.zeros(0, np.int64), alt_frac=np.zeros(0), trees=np.stack(trees),
        tree_weight=w, lengths=bound.mu[cls_of_arc] / n, arc_load=arc_load, iterations=it,
        status=status, timings=timings, history=history,
    )


def _check_circulant(n, arcs, cap_arc, D) -> None:
    cap = np.zeros((n, n))
    cap[arcs[:, 0], arcs[:, 1]] = cap_arc
    for i in range(1, n):
        if not np.array_equal(cap[i], np.roll(cap[0], i)):
            raise ValueError("symmetric: the topology is not circulant")
        if not np.allclose(D[i], np.roll(D[0], i), rtol=1e-12, atol=0):
            raise ValueError("symmetric: the demand is not rotation-invariant")


# -- the method ``route-approx`` ----------------------------------------------------------------
def _solve(instance: Instance, options: SolveOptions) -> SolveResult:
    """``route-approx``: :func:`approx_min_congestion` on the route problem of ``instance``.

    The topology, ring orders, commodities and capacity resources are those of ``route-milp``
    (:func:`.route.build_problem`); ``epsilon`` (default 0.01) is the target gap;
    ``formulation = "source"`` turns the circulant reduction off. The objective is
    recomputed from the returned routing, the bound is the certified lower bound in seconds,
    and the status is ``optimal`` only when the certified gap is below ``OPTIMAL_GAP``."""
    from ..formulations import route

    t0 = time.perf_counter()
    eps = options.method.epsilon
    form = options.method.formulation
    if options.method.rings == "choose":  # free shares over the TotientPerms orders (.choice)
        return _choose(instance, options)
    P = route.build_problem(instance, options)
    sym = form != "source" and route.symmetric_applies(P)
    if form == "symmetric" and not sym:
        raise InputError("formulation: the symmetric reduction needs a circulant topology and "
                         "rotation-invariant traffic")
    prev = options.warm_start
    warm = (WarmStart.from_solution(prev, instance.n)
            if prev is not None and prev.routing is not None and not sym else None)
    # kept back for the routing's assembly and its evaluation in finish (the same work per
    # commodity as the checker's, so the same estimate: core.deadline.after_solver_s), and
    # START_SHARE of it for the start routing, built after the search only when it missed
    # epsilon
    keep = after_solver_s(len(P.commodities)) * (1.0 + START_SHARE)
    # symmetric demand on duplex links: half the pairs, one resource per link (.reverse)
    rev = not sym and options.method.columns == "paths" and reverse.applies(P)
    res_arcs, res_cap, D = (reverse.reduce(instance.n, P.arcs, P.res_cap, P.D) if rev
                            else (P.res_arcs, P.res_cap, P.D))
    try:
        res = None
        if not sym and warm is None and options.method.columns == "paths" \
                and P.dropped is None:  # hop-balanced shortest paths when the hop bound is tight
            res = balance.solve(instance.n, P.arcs, res_arcs, res_cap, D, float(eps),
                                options.time_left(keep), lambda: P.topology.hop_distances,
                                options.seed)
        if res is None:
            res = approx_min_congestion(instance.n, P.arcs, res_arcs, res_cap, D, float(eps),
                                        options.time_left(keep), symmetric=sym,
                                        seed=options.seed, columns=options.method.columns,
                                        warm=warm)
    except core.StartTooCostly as exc:
        return _cheap_start(instance, options, P, str(exc), t0, _start(instance, options, P))
    t = time.perf_counter()
    pair_paths = (reverse.expand(res.pair_paths(D)) if rev else
                  {(s, t): paths for s, t, paths in res.pair_paths(D)})
    routing = _exact.routing_from_pair_paths(instance, P.topology, P.rings, pair_paths,
                                             options.seed)
    assemble = time.perf_counter() - t
    status = Status.OPTIMAL if res.gap <= OPTIMAL_GAP else Status.FEASIBLE
    tm = ", ".join(f"{k} {v:.2f}" for k, v in res.timings.items())
    note = (f"formulation={'symmetric' if sym else options.method.columns}; "
            f"{'reversal-symmetric pairs; ' if rev else ''}"
            f"{'warm start; ' if warm is not None else ''}epsilon={float(eps):g}; "
            f"certified gap {res.gap:.3g} after {res.iterations} rounds ({res.status}); "
            f"times [s]: {tm}, routing {assemble:.2f}")
    outcome = BackendOutcome(status, res.upper, res.lower, res.timings["total"], "approx-cg",
                             f"highspy {highs_version()}, scipy {scipy.__version__}", {})
    out = route.finish("route-approx", P, options, outcome, routing,
                       res.upper * P.sec_per_unit, res.lower * P.sec_per_unit,
                       time.perf_counter() - t0, note=note)
    # the incumbent to beat (issue 20), when the search missed its target: a result within
    # epsilon of its certified bound keeps the (1 + eps) promise whatever the start is
    start = None if res.upper - res.lower <= float(eps) * res.upper else _start(instance, options, P)
    start_obj = np.inf if start is None else start[2]
    if out.objective is not None and start_obj < out.objective * (1 - 1e-9):
        # the search stopped on a routing worse than its start (n = 10^4 after one round:
        # 0.9147 s against the shortest paths' 0.7969 s): the start, with the search's bound
        outcome = BackendOutcome(Status.FEASIBLE, None, res.lower, res.timings["total"],
                                 "approx-cg", outcome.version, {})
        out = route.finish("route-approx", P, options, outcome, start[1], None,
                           res.lower * P.sec_per_unit, time.perf_counter() - t0,
                           note=f"{note}; the start routing kept (shortest paths, "
                                f"{start_obj:.6g} against the search's {out.objective:.6g})")
    if sym:  # the lengths of a later warm start (see .warm)
        return out
    lengths = WarmStart(instance.n, *(np.zeros(0),) * 4, P.arcs, res.lengths).info()
    return out.with_(info={**out.info, INFO_KEY: lengths})


def _choose(instance: Instance, options: SolveOptions) -> SolveResult:
    """``rings = choose``: every group split freely over its TotientPerms orders on the fixed
    topology (:func:`.choice.route_with_rings`; the bound covers alloc-milp's ring space with
    the links fixed, scope ``totient``)."""
    from ..formulations.ring_lp import candidate_orders
    from ..formulations.route import the_topology
    from .choice import route_with_rings

    if options.method.formulation == "symmetric" or options.method.columns != "paths":
        raise InputError("rings: choose needs the path columns (formulation source or auto, "
                         "columns paths)")
    return route_with_rings(instance, the_topology(instance).links, candidate_orders(instance),
                            options, options.warm_start, ring_mode="choose")


def _start(instance: Instance, options: SolveOptions, P):
    """The incumbent route-approx starts from: hop-shortest paths
    (:func:`~topoopt_milp.methods.result_step.shortest_paths`, the routing of the ``expander``
    and the other heuristics), as ``(topology, routing, objective)``; a result that misses
    its target gap is never worse than it (one that meets it is within ``1 + eps`` of the
    optimum, so the start is not built)."""
    from ...core.evaluate import objective_value
    from ..result_step import shortest_paths

    start = shortest_paths(instance, P.topology, P.rings, options.seed)
    if start is None:  # build_problem refused disconnected demand already
        raise InputError("topology: a pair with demand is not connected")
    kind = "max_link_utilization" if P.shared else "comm_time"
    return (*start, objective_value(instance, start[0], start[1], kind))


def _cheap_start(instance: Instance, options: SolveOptions, P, why: str, t0: float,
                 start) -> SolveResult:
    """The start when not even the first all-sources pricing fits the time limit (n = 10^4,
    ``--time-limit 20``: one pricing took 35 s): shortest paths by hop count
    (:func:`~topoopt_milp.methods.result_step.shortest_paths`) and the hop bound.

    Hop bound: with equal lengths ``mu_r = 1 / sum_r cap(r)`` every arc has length ``mu``
    and ``dist(s, t) = mu hops(s, t)``, so the certified bound of the module docstring is
    ``LB = sum_k d_k hops(s_k, t_k) / sum_r cap(r)`` (``sum_r mu_r cap(r) = 1``), valid for
    every routing on this topology. Hop counts are exact integers; the sums are
    ``math.fsum`` and the division rounds once, so the factor ``1 - 4 (n + 8) u`` of the
    module docstring covers the roundings. Not given when links were left out of the model
    (:mod:`..formulations.shared_capacity`)."""
    from ..formulations import route

    lower = None
    if P.dropped is None:
        src, dst = np.nonzero(P.D > 0)
        hops = P.topology.hop_distances[src, dst]
        total = math.fsum((P.D[src, dst] * hops).tolist()) / math.fsum(P.res_cap.tolist())
        lower = total * (1.0 - 4.0 * (instance.n + 8) * core.U_ROUND) * P.sec_per_unit
    runtime = time.perf_counter() - t0
    outcome = BackendOutcome(Status.FEASIBLE, None, None, runtime, "approx-cg",
                             f"highspy {highs_version()}, scipy {scipy.__version__}", {})
    note = f"epsilon={float(options.method.epsilon):g}; stopped before the first round: {why}; " \
           "the start: shortest paths by hop count, with the hop bound"
    return route.finish("route-approx", P, options, outcome, start[1], None, lower, runtime,
                        note=note)


def solve(instance: Instance, options: SolveOptions) -> SolveResult:
    """``route-approx`` (see :func:`_solve`), with the shortest-path incumbent when its time
    limit runs out while the problem is built."""
    from ..formulations.route import with_shortest_path_fallback

    return with_shortest_path_fallback(_solve)(instance, options)


def _scope(instance, options):
    from ..formulations.route import bound_scope

    if options.method.rings == "choose":  # every split over the TotientPerms orders
        from ...core.scope import Scope, topology_hash

        topo = None if instance is None else instance.topology
        return Scope(topology="fixed", rings="totient", topology_hash=None if topo is None
                     else topology_hash(np.asarray(_fixed_links(instance))))
    return bound_scope(instance, options)


def _fixed_links(instance):
    from ..formulations.route import the_topology

    return the_topology(instance).links


SEARCH_ARRAYS = 14  # (sources x n) arrays of 8 bytes the column generation holds at its peak
BYTES_PER_PATH_COMMODITY = 3500.0  # a commodity's paths, columns, routing and checker copies


def _memory(instance, options) -> Estimate:
    """The column generation's peak: ``SEARCH_ARRAYS`` dense ``(S, n)`` arrays of 8 bytes (S
    the nodes that send: lengths, predecessors, tree orders, loads and their copies) and
    ``BYTES_PER_PATH_COMMODITY`` per routed commodity. Measured peaks it covers (2 cores,
    24 GiB): 11.0 GB at n = 10^4, d = 8, every node a source, 100,000 commodities,
    ``--time-limit 300`` (the estimate: 11.6 GB; :func:`~topoopt_milp.core.sizes.dense_estimate`
    said 4.8 GB); 3.46 GB at n = 1024, d = 8, all-to-all, 1,047,552 commodities (3.8 GB).
    The commodities are counted directly (MP demands and two ring edges per member), not by
    the pair counting of ``dense_estimate``: ``np.unique`` over the free-ring pairs took 32 s
    of a 5 s time limit at n = 2000."""
    n = instance.n
    senders = {int(d[0]) for d in instance.mp if d[2] > 0}
    comms = sum(1 for d in instance.mp if d[2] > 0)
    for g in instance.allreduce:
        if g.bytes > 0:
            comms += 2 * len(g.members)
            senders.update(int(v) for v in g.members)
    S = len(senders)
    return Estimate(SEARCH_ARRAYS * 8.0 * S * n + BYTES_PER_PATH_COMMODITY * comms,
                    f"{SEARCH_ARRAYS} dense {S} x {n} arrays and {comms} routed commodities")


SPEC = MethodSpec(
    "route-approx", "route", "exact", "approx", RouteApproxParams, solve,
    "(1+eps)-approximate min-congestion routing on a fixed topology: path column generation "
    "with a certified Lagrangian bound", scope=_scope,
    memory=_memory)


def warm_route(instance, links, previous, epsilon: float = 0.01,
               time_limit: float | None = None, **knobs):
    """Route ``instance`` on topology ``links`` warm-started from ``previous`` (a
    :class:`~topoopt_milp.core.result.SolveResult` with a routing on a nearby topology): the
    ``route-approx`` method with ``warm_start=previous`` (the same as ``registry.solve(...,
    "route-approx", warm_start=previous)``), so the result is certified as a cold one."""
    opts = SPEC.options({"epsilon": epsilon, "time_limit": time_limit, **knobs},
                        warm_start=previous)
    if time_limit is not None:  # the clock starts now (a Deadline, not a float)
        from ...core.deadline import Deadline

        opts = opts.with_(deadline=Deadline(float(time_limit)))
    from .warm import fast_warm_route  # the problem patched, not rebuilt (.warm)

    fast = fast_warm_route(instance, links, previous, opts)
    return fast if fast is not None else SPEC.solve(instance.with_topology(links), opts)
