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

The fractional LP runs HiGHS interior point *without crossover* by default (``lp_algorithm``
``ipm``, ``crossover = auto``): the flows are decomposed into paths, so a vertex solution is
not needed; ``crossover = on`` runs it. ``simplex`` and ``pdlp`` are also available.

Units and results
-----------------
Volumes in units of ``V`` bytes (:func:`_exact.volume_unit`), capacities in links (or the
largest SNDlib capacity), so ``U`` is O(1). The reported objective is ``comm_time`` of the
returned routing (SNDlib: its congestion); the bound is the solver's bound in seconds.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np
from scipy.sparse import coo_matrix

from ...core.backends.pulp_backend import MatrixModel, solve_model
from ...core.circulant import circulant_jumps
from ...core.errors import InputError
from ...core.instance import Instance
from ...core.params import DeadlineExceeded, Params, SolveOptions, k_paths_knob, knob, route_rings_knob
from ...core.result import SolveResult
from ...core.scope import Scope, ring_scope, topology_hash
from ...core.sizes import Estimate, traffic_counts
from ...core.spec import MethodSpec
from ...core.topology import (
    Commodity,
    Path,
    Ring,
    Routing,
    Topology,
    commodities_for,
    default_rings,
    fixed_rings,
    fixed_topology,
    link_capacities,
    rings_along_jumps,
)
from .. import model_data as _exact
from ..flow_paths import decompose_flow
from ..result_step import honest_result, out_of_time, shortest_paths

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

INF = math.inf


# -- the problem on a fixed topology -------------------------------------------------------
@dataclass(frozen=True)
class RouteProblem:
    """Commodities, arcs and capacity resources of one routing problem (model units).

    ``arcs[a] = (u, v)``; resource ``r`` covers arcs ``res_arcs[r]`` with capacity
    ``res_cap[r]``; ``D`` is the aggregated demand matrix in volume units. Seconds per model
    time unit: ``unit / cap_unit``."""

    instance: Instance
    topology: Topology
    rings: tuple[Ring, ...]
    commodities: tuple[Commodity, ...]
    D: np.ndarray
    arcs: np.ndarray
    res_arcs: tuple[np.ndarray, ...]
    res_cap: np.ndarray
    unit: float
    cap_unit: float
    shared: bool

    @property
    def sec_per_unit(self) -> float:
        return self.unit / self.cap_unit


def the_topology(instance: Instance) -> Topology:
    """The instance's fixed topology; an input error when it has none."""
    topology = fixed_topology(instance)
    if topology is None:
        raise InputError("topology: the route family solves the routing on a fixed topology; "
                         "the instance has none (on the command line: --topology SOL.json)")
    return topology.with_jumps(circulant_jumps(topology.links))


def ring_orders(instance: Instance, topology: Topology, options: SolveOptions) -> tuple[Ring, ...]:
    """Ring orders to route: the instance's fixed rings, else (or with ``rings = "default"``)
    the default rings laid along the jumps of a circulant topology
    (:func:`~topoopt_milp.core.topology.rings_along_jumps`)."""
    fixed = fixed_rings(instance)
    if fixed is not None and options.method.rings == "fixed":
        return fixed
    return rings_along_jumps(default_rings(instance), topology)


def build_problem(instance: Instance, options: SolveOptions) -> RouteProblem:
    """The route problem on the instance's fixed topology with the rings of
    :func:`ring_orders`."""
    topology = the_topology(instance)
    return problem_on(instance, topology, ring_orders(instance, topology, options))


def problem_on(instance: Instance, topology: Topology, rings: tuple[Ring, ...]) -> RouteProblem:
    """The route problem of ``rings`` and the instance's MP demands on ``topology`` (shared
    capacities only when the instance's fixed topology declares them); an input error when
    some demand has no path."""
    comms = tuple(commodities_for(instance, rings))
    unit = _exact.volume_unit(instance)
    n = instance.n
    D = np.zeros((n, n))
    for c in comms:
        D[c.src, c.dst] += c.bytes / unit
    L = topology.links
    u, v = np.nonzero(L)
    arcs = np.stack([u, v], axis=1)
    shared = instance.topology is not None and instance.topology.shared
    if shared:
        caps = link_capacities(instance)  # {(i, j): bytes/s}, i < j
        index = {(int(a), int(b)): k for k, (a, b) in enumerate(arcs)}
        cap_unit = max(caps.values())
        res_arcs = tuple(np.array([index[(i, j)], index[(j, i)]]) for (i, j) in caps)
        res_cap = np.array([c / cap_unit for c in caps.values()])
    else:
        cap_unit = instance.link_bytes_per_s
        res_arcs = tuple(np.array([a]) for a in range(len(arcs)))
        res_cap = L[u, v].astype(float)
    unreachable = (D > 0) & ~np.isfinite(topology.hop_distances)
    if unreachable.any():
        s, t = (int(x) for x in np.argwhere(unreachable)[0])
        raise InputError(f"topology: no path from {s} to {t}, which has demand (disconnected)")
    return RouteProblem(instance, topology, rings, comms, D, arcs, res_arcs, res_cap, unit,
                        cap_unit, shared)


# -- matrix assembly helpers -----------------------------------------------------------------
def _capacity_rows(P: RouteProblem, arc_cols: list[tuple[np.ndarray, np.ndarray]], row0: int,
                   u_col: int):
    """Entries of ``sum_{cols on arcs of r} coef * x - cap(r) U <= 0`` for every resource.

    ``arc_cols`` lists ``(arc index, column)`` pairs per block (coefficient 1) or with a third
    coefficient array."""
    arc_of_res = np.full(len(P.arcs), -1)
    for r, arcs in enumerate(P.res_arcs):
        arc_of_res[arcs] = r
    rows, cols, vals = [], [], []
    for block in arc_cols:
        a, c = block[0], block[1]
        w = block[2] if len(block) > 2 else np.ones(len(a))
        rows.append(row0 + arc_of_res[a])
        cols.append(c)
        vals.append(w)
    nres = len(P.res_arcs)
    rows.append(row0 + np.arange(nres))
    cols.append(np.full(nres, u_col))
    vals.append(-P.res_cap)
    return rows, cols, vals, nres


def _model(rows, cols, vals, ncol, row_lo, row_up, names, integer=None, col_up=None):
    r = np.concatenate(rows)
    c = np.concatenate(cols)
    v = np.concatenate(vals).astype(float)
    A = coo_matrix((v, (r, c)), shape=(len(row_lo), ncol)).tocsc()
    cost = np.zeros(ncol)
    cost[ncol - 1] = 1.0  # U is always the last column
    return MatrixModel(
        A=A, cost=cost, col_lower=np.zeros(ncol),
        col_upper=np.full(ncol, INF) if col_up is None else col_up,
        row_lower=np.asarray(row_lo, dtype=float), row_upper=np.asarray(row_up, dtype=float),
        integer=np.zeros(ncol, dtype=bool) if integer is None else integer, names=names,
    )


def _values(outcome, names: list[str]) -> np.ndarray:
    """Column values in model order: HiGHS' vector itself, or by name (CBC)."""
    if outcome.x is not None and len(outcome.x) == len(names):
        return np.asarray(outcome.x, dtype=float)
    vals = outcome.values
    return np.array([vals.get(nm, 0.0) for nm in names])


# -- fractional: source-aggregated, per-pair and symmetric arc LPs ----------------------------
def symmetric_applies(P: RouteProblem) -> bool:
    """Circulant topology and circulant aggregated demand (and no shared SNDlib capacity)."""
    if P.shared:
        return False
    L, D, n = P.topology.links, P.D, P.instance.n
    for i in range(1, n):
        if not np.array_equal(L[i], np.roll(L[0], i)):
            return False
        if not np.allclose(D[i], np.roll(D[0], i), rtol=1e-12, atol=0):
            return False
    return True


def _flow_lp(P: RouteProblem, sources: np.ndarray, demand: np.ndarray,
             symmetric: bool = False) -> tuple[MatrixModel, int]:
    """Arc LP with one flow per row of ``demand`` (``demand[k, v]`` enters ``v``, leaves
    ``sources[k]``). Returns the model and the number of flow columns."""
    n, m = P.instance.n, len(P.arcs)
    K = len(sources)
    tails, heads = P.arcs[:, 0], P.arcs[:, 1]
    col = (np.arange(K)[:, None] * m + np.arange(m)[None, :]).ravel()
    kk = np.repeat(np.arange(K), m)
    aa = np.tile(np.arange(m), K)
    rows = [kk * n + heads[aa], kk * n + tails[aa]]
    cols = [col, col]
    vals = [np.ones(K * m), -np.ones(K * m)]
    row_lo = demand.ravel().copy()
    row_up = demand.ravel().copy()
    src_rows = np.arange(K) * n + sources
    # The source's own row is implied by the others; leaving it free keeps the matrix full rank.
    row_lo[src_rows], row_up[src_rows] = -INF, INF
    u_col = K * m
    if symmetric:
        # capacity per difference class delta: all arcs (i, i + delta) share one row
        delta = (heads - tails) % n
        classes = np.unique(delta)
        cls_row = {int(d): k for k, d in enumerate(classes)}
        r0 = K * n
        rows.append(r0 + np.array([cls_row[int(d)] for d in delta]))
        cols.append(np.arange(m))
        vals.append(np.ones(m))
        rows.append(r0 + np.arange(len(classes)))
        cols.append(np.full(len(classes), u_col))
        vals.append(-P.topology.links[0, classes].astype(float))
        nres = len(classes)
    else:
        r, c, v, nres = _capacity_rows(P, [(aa, col)], K * n, u_col)
        rows += r
        cols += c
        vals += v
    row_lo = np.concatenate([row_lo, np.full(nres, -INF)])
    row_up = np.concatenate([row_up, np.zeros(nres)])
    names = [f"f{j}" for j in range(K * m)] + ["U"]
    return _model(rows, cols, vals, K * m + 1, row_lo, row_up, names), K * m


def _decompose(P: RouteProblem, sources, demand, flows: np.ndarray, pairs_of_row=None):
    """Paths per ``(s, t)`` from per-row arc flows (model units)."""
    pair_paths: dict[tuple[int, int], list[tuple[Path, float]]] = {}
    arcs = [(int(u), int(v)) for u, v in P.arcs]
    for k, s in enumerate(sources):
        f = flows[k]
        nz = np.flatnonzero(f > 0)
        arc_flow = {arcs[a]: float(f[a]) for a in nz}
        dem = {int(t): float(demand[k, t]) for t in np.flatnonzero(demand[k] > 0)}
        for t, paths in decompose_flow(int(s), arc_flow, dem, P.topology).items():
            key = (int(s), t) if pairs_of_row is None else pairs_of_row[k]
            pair_paths[key] = paths
    return pair_paths


def _solve_fractional(P: RouteProblem, options: SolveOptions):
    form = options.method.formulation
    n = P.instance.n
    if form == "symmetric" and not symmetric_applies(P):
        raise InputError("formulation: the symmetric reduction needs a circulant topology and "
                         "rotation-invariant traffic")
    if form == "symmetric" or (form == "auto" and symmetric_applies(P)):
        sources, demand = np.array([0]), P.D[:1]
        model, nf = _flow_lp(P, sources, demand, symmetric=True)
        outcome = solve_model(model, options)
        if not outcome.status.has_solution:
            return outcome, None, "symmetric"
        f0 = _values(outcome, model.names)[:nf].reshape(1, -1)
        base = _decompose(P, sources, demand, f0)
        pair_paths = {}
        for s in range(n):
            for (_, t), paths in base.items():
                pair_paths[(s, (t + s) % n)] = [
                    (tuple((x + s) % n for x in p), fr) for p, fr in paths
                ]
        return outcome, pair_paths, "symmetric"
    if form == "per-pair":
        pairs = [tuple(int(x) for x in st) for st in np.argwhere(P.D > 0)]
        sources = np.array([s for s, _ in pairs], dtype=int)
        demand = np.zeros((len(pairs), n))
        for k, (s, t) in enumerate(pairs):
            demand[k, t] = P.D[s, t]
        model, nf = _flow_lp(P, sources, demand)
        outcome = solve_model(model, options)
        if not outcome.status.has_solution:
            return outcome, None, "per-pair"
        flows = _values(outcome, model.names)[:nf].reshape(len(pairs), len(P.arcs))
        return outcome, _decompose(P, sources, demand, flows, pairs), "per-pair"
    sources = np.flatnonzero(P.D.sum(axis=1) > 0)
    demand = P.D[sources]
    model, nf = _flow_lp(P, sources, demand)
    outcome = solve_model(model, options)
    if not outcome.status.has_solution:
        return outcome, None, "source"
    # (rows, arcs): a reshape by -1 fails for traffic without any source (all volumes 0)
    flows = _values(outcome, model.names)[:nf].reshape(len(sources), len(P.arcs))
    return outcome, _decompose(P, sources, demand, flows), "source"


# -- path formulations: ksp LP, unsplittable MILP / CP-SAT -------------------------------------
def candidate_paths(topology: Topology, pairs, k: int,
                    options: SolveOptions | None = None) -> dict[tuple[int, int], list[Path]]:
    """The ``k`` shortest simple paths (hops) of every pair, shortest first. With ``options``
    the time limit is checked per pair (at n = 128, all-to-all, this loop alone took a minute)."""
    g = topology.graph()
    out = {}
    for s, t in pairs:
        if options is not None:
            options.check_deadline()
        paths = []
        for p in nx.shortest_simple_paths(g, s, t):
            paths.append(tuple(int(x) for x in p))
            if len(paths) == k:
                break
        out[(s, t)] = paths
    return out


def _path_columns(P: RouteProblem, cands, items):
    """Columns ``(item, path)`` and their (arc index, column, volume) incidence."""
    arc_index = {(int(u), int(v)): a for a, (u, v) in enumerate(P.arcs)}
    owners, paths, a_idx, c_idx, w = [], [], [], [], []
    for k, (s, t, vol) in enumerate(items):
        for p in cands[(s, t)]:
            j = len(paths)
            owners.append(k)
            paths.append(p)
            for x, y in zip(p, p[1:], strict=False):
                a_idx.append(arc_index[(x, y)])
                c_idx.append(j)
                w.append(vol)
    return (np.array(owners), paths, np.array(a_idx, dtype=int), np.array(c_idx, dtype=int),
            np.array(w, dtype=float))


def _path_model(P: RouteProblem, cands, items, integer: bool) -> tuple[MatrixModel, tuple]:
    owners, paths, a_idx, c_idx, w = _path_columns(P, cands, items)
    npath, K = len(paths), len(items)
    rows = [owners]
    cols = [np.arange(npath)]
    vals = [np.ones(npath)]
    r, c, v, nres = _capacity_rows(P, [(a_idx, c_idx, w)], K, npath)
    rows += r
    cols += c
    vals += v
    row_lo = np.concatenate([np.ones(K), np.full(nres, -INF)])
    row_up = np.concatenate([np.ones(K), np.zeros(nres)])
    names = [f"x{j}" for j in range(npath)] + ["U"]
    ints = np.zeros(npath + 1, dtype=bool)
    ints[:npath] = integer
    col_up = np.full(npath + 1, INF)
    col_up[:npath] = 1.0
    model = _model(rows, cols, vals, npath + 1, row_lo, row_up, names, ints, col_up)
    return model, (owners, paths, a_idx, c_idx, w)


def _unsplit_items(P: RouteProblem):
    return [(c.src, c.dst, c.bytes / P.unit) for c in P.commodities]


def _start(P: RouteProblem, options: SolveOptions, cands, items) -> list[int]:
    """Candidate index per commodity for the MIP start: the warm start's single path when it
    is a candidate, else the shortest path (candidate 0)."""
    chosen = [0] * len(items)
    ws = options.warm_start
    if ws is not None and ws.routing is not None:
        single = {}
        for c in ws.routing.commodities:
            if len(c.paths) == 1:
                single.setdefault((c.src, c.dst, c.kind, c.tag), c.paths[0][0])
        for k, c in enumerate(P.commodities):
            p = single.get((c.src, c.dst, c.kind, c.tag))
            if p is not None and p in cands[(c.src, c.dst)]:
                chosen[k] = cands[(c.src, c.dst)].index(p)
    return chosen


def _unsplit_routing(P: RouteProblem, cands, choice: Sequence[int]) -> Routing:
    routed = tuple(
        Commodity(c.src, c.dst, c.bytes, c.kind, c.tag, ((cands[(c.src, c.dst)][j], 1.0),))
        for c, j in zip(P.commodities, choice, strict=True)
    )
    return Routing(P.rings, routed)


def _solve_paths(P: RouteProblem, options: SolveOptions, integer: bool):
    if integer:
        items = _unsplit_items(P)
    else:
        items = [(int(s), int(t), float(P.D[s, t])) for s, t in np.argwhere(P.D > 0)]
    cands = candidate_paths(P.topology, {(s, t) for s, t, _ in items}, options.method.k_paths)
    model, (owners, paths, *_rest) = _path_model(P, cands, items, integer)
    warm = None
    if integer:
        chosen = _start(P, options, cands, items)
        start = np.zeros(len(paths))
        offsets = np.searchsorted(owners, np.arange(len(items)))
        start[offsets + np.array(chosen, dtype=int)] = 1.0
        loads = model.A[len(items):, :-1] @ start
        warm = {nm: float(x) for nm, x in zip(model.names, start, strict=False)}
        warm["U"] = float(np.max(loads / P.res_cap)) if len(loads) else 0.0
    outcome = solve_model(model, options, warm)
    if not outcome.status.has_solution:
        return outcome, None
    x = _values(outcome, model.names)[:-1]
    if integer:
        choice = [0] * len(items)
        for j in np.flatnonzero(x > 0.5):
            k = owners[j]
            choice[k] = j - int(np.searchsorted(owners, k))
        return outcome, _unsplit_routing(P, cands, choice)
    pair_paths: dict[tuple[int, int], list[tuple[Path, float]]] = {}
    for k, (s, t, _vol) in enumerate(items):
        idx = np.flatnonzero(owners == k)
        fr = np.clip(x[idx], 0.0, None)
        keep = fr > _exact.FLOW_EPS
        tot = fr[keep].sum()
        pair_paths[(s, t)] = [(paths[j], float(f / tot)) for j, f in
                              zip(idx[keep], fr[keep], strict=True)]
    return outcome, _exact.routing_from_pair_paths(P.instance, P.topology, P.rings, pair_paths,
                                                   options.seed)


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
            # The flows are decomposed into paths anyway, so a vertex solution buys nothing:
            # skip crossover (crossover = on restores it).
            lp_opts = options.with_(solver=sp.with_(crossover="off"))
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
    detail = None if variant == "fractional" else (
        f"{'one' if variant == 'unsplittable' else 'a split'} of the {options.method.k_paths} "
        "shortest paths per commodity")
    return finish("route-milp", P, options, outcome, routing, obj, bound,
                  time.perf_counter() - t0, note=note, restricted=detail)


def finish(method: str, P: RouteProblem, options: SolveOptions, outcome, routing: Routing | None,
           obj_s: float | None, bound_s: float | None, runtime: float, scale: float | None = None,
           exact_model: bool = True, note: str = "", restricted: str | None = None) -> SolveResult:
    """The :class:`SolveResult` through :func:`.certify.honest_result`: objective recomputed from
    ``routing``, bound in seconds, scope the fixed topology and rings (``restricted``: the
    path restriction of the ksp / unsplittable models).

    With a per-hop latency the models above ignore the latency term, so the bound adds the
    smallest possible one (``max`` hop distance over commodities times the latency) and the
    result is at best feasible. Instances with shared capacities (SNDlib) report their
    congestion (``objective_kind = "max_link_utilization"``)."""
    inst = P.instance
    if bound_s is not None and inst.latency_us > 0:
        hops = max((P.topology.hop_distances[c.src, c.dst] for c in P.commodities), default=0)
        bound_s += float(hops) * inst.latency_us * 1e-6
    scope = Scope(topology="fixed", topology_hash=topology_hash(P.topology.links),
                  **ring_scope("fixed", P.rings),
                  **({} if restricted is None else {"routing": "restricted", "detail": restricted}))
    kind = "max_link_utilization" if P.shared else "comm_time"
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
