"""``route-approx`` with free ring shares: an instance routed on a topology with every
AllReduce group's volume split freely over candidate ring orders (:mod:`.rings`: the
problem, the certified bound and its proof, the master).

:func:`route_with_rings` is the entry point (``rings = "choose"`` of the method, and
alloc-search's :func:`~topoopt_milp.methods.alloc_search.reroute.reroute_approx` with
``rings = "choose"`` or a mapping of candidate orders). It is what
:func:`~topoopt_milp.methods.formulations.ring_lp.route_rings` solves exactly, within
``1 + epsilon``: the returned rings are among the candidates (shares renormalised), the
objective is recomputed from the routing (:func:`..formulations.route.finish`), and the bound
is valid for the fixed topology and the candidate set (for the TotientPerms orders of every
group the scope is alloc-milp's ring space, ``totient``; for another set only the returned
rings, ``fixed``, are claimed: the scope vocabulary has no candidate sets).

Warm start (``previous``, a result on a nearby topology, any candidate set): as
:mod:`.warm` for fixed rings. Its best-bound lengths give the first bound (new arcs by the
theta search of :meth:`.warm.WarmStart.resource_lengths`), its paths that survive on the new
topology are the first pool (a path belongs to a pair, so it serves whichever candidate
loads that pair); the candidate set may differ from the previous one. The warm state of a
result is kept for the next call (:func:`.warm._remember`), so a chain of swaps never re-reads
a routing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from ...core.errors import InputError
from ...core.instance import Instance
from ...core.params import SolveOptions
from ...core.result import SolveResult, Status
from ...core.topology import Commodity, Ring, Routing, Topology, commodities_for
from .. import model_data as _exact
from .common import Limits
from .paths import solve_paths
from .rings import RingChoice
from .warm import INFO_KEY, MAX_ITER, OPTIMAL_GAP, WarmStart, _recall, _remember

Order = tuple[int, ...]
# path columns entering per round per arc (each of the three tree sets of a round): 2 (1024 at
# n = 128, d = 4; the fixed-ring default is 8): mixed-n128-d4-g4-mp05 13.5 against 41.3 CPU s
# (8 against 6 rounds), bert / candle / dlrm / ncf n128-d4 1.8 / 1.3 / 6.3 / 9.7 against
# 2.1 / 1.3 / 6.1 / 15.0 s (docs/route_approx.md)
RING_COLS_PER_ARC = 2


def volumes(instance: Instance, unit: float) -> dict[int, float]:
    """Edge volume ``e_g`` (model units) of every group with traffic."""
    return {g: grp.edge_bytes / unit for g, grp in enumerate(instance.allreduce)
            if grp.edge_bytes > 0}


def chosen_rings(instance: Instance, ring: RingChoice, shares: np.ndarray) -> list[Ring]:
    """The candidates with a share (every one of them a candidate order), then the groups
    without traffic in their sorted member order (as :func:`..formulations.ring_lp.route_rings`)."""
    rings = [Ring(ring.groups[ring.cand_row[c]], ring.orders[c], float(shares[c]))
             for c in np.flatnonzero(shares > 0).tolist()]
    have = set(ring.groups)
    rings += [Ring(g, tuple(sorted(grp.members)), 1.0)
              for g, grp in enumerate(instance.allreduce) if g not in have]
    rings.sort(key=lambda r: r.group)
    return rings


def route_with_rings(instance: Instance, links: np.ndarray,
                     candidates: Mapping[int, Sequence[Sequence[int]]], options: SolveOptions,
                     previous: SolveResult | None = None, ring_mode: str = "fixed"
                     ) -> SolveResult:
    """Route ``instance`` on ``links`` with free shares over ``candidates`` (group -> orders)
    within ``1 + options.method.epsilon`` (module docstring). ``previous``: a nearby result
    to warm-start from (its routing and, if it has them, its lengths). ``ring_mode``:
    ``"choose"`` when ``candidates`` are every group's TotientPerms orders (the result's
    scope is then alloc-milp's ring space), else ``"fixed"`` (the returned rings).

    Raises :class:`~topoopt_milp.core.errors.InputError` when a pair some candidate or MP
    demand loads is not connected, or the instance declares shared capacities."""
    from ...core.backends.pulp_backend import BackendOutcome, highs_version
    from ..formulations import route
    from ..formulations.route_problem import RouteProblem

    t0 = time.perf_counter()
    if instance.topology is not None and instance.topology.shared:
        raise InputError("rings: free ring shares need one capacity per arc (no shared "
                         "capacities)")
    n = instance.n
    L = np.asarray(links)
    topo = Topology(L)
    unit = _exact.volume_unit(instance)
    ring = RingChoice(candidates, volumes(instance, unit))
    Dmp = np.zeros((n, n))
    for s, t, b in instance.mp:
        if b > 0 and s != t:
            Dmp[s, t] += b / unit
    u, v = np.nonzero(L)
    arcs = np.stack([u, v], axis=1)
    _, comp = connected_components(csr_matrix(L > 0), directed=False)
    src = np.concatenate([np.nonzero(Dmp > 0)[0], ring.edge_src])
    dst = np.concatenate([np.nonzero(Dmp > 0)[1], ring.edge_dst])
    cut = np.flatnonzero(comp[src] != comp[dst])
    if len(cut):
        raise InputError(f"topology: no path from {int(src[cut[0]])} to {int(dst[cut[0]])}, "
                         "which some demand or candidate ring edge loads (disconnected)")
    m = len(arcs)
    arc_id = np.full((n, n), -1, np.int64)
    arc_id[u, v] = np.arange(m)
    cap = L[u, v].astype(float)
    warm = None
    if previous is not None and previous.routing is not None:
        warm = _recall("warm", previous)
        if warm is None:
            warm = WarmStart.from_solution(previous, n)
            _remember("warm", previous, warm)
    eps = float(options.method.epsilon)
    res = solve_paths(n, arcs, arc_id, np.arange(m), cap, Dmp,
                      Limits(t0, options.time_left(), MAX_ITER, eps),
                      max(RING_COLS_PER_ARC * m, n * n // 16), 1, options.seed, warm, ring)
    t = time.perf_counter()
    rings = chosen_rings(instance, ring, res.shares)
    D = Dmp.copy()
    np.add.at(D, (ring.edge_src, ring.edge_dst), ring.edge_vol * res.shares[ring.edge_cand])
    nxt = WarmStart.from_approx(res, arcs, D)
    nxt.rings = frozenset((r.group, r.order) for r in rings)
    paths = nxt.pair_paths()
    comms = tuple(commodities_for(instance, rings))
    routed = [Commodity(c.src, c.dst, c.bytes, c.kind, c.tag, paths.get((c.src, c.dst), ()))
              for c in comms]
    if any(not c.paths for c in routed):  # never: every pair with demand has a key path
        raise RuntimeError("route_with_rings: a commodity without a path")
    routing = Routing(tuple(rings), tuple(routed))
    assemble = time.perf_counter() - t
    P = RouteProblem(instance, topo, tuple(rings), comms, D, arcs,
                     tuple(np.array([a]) for a in range(m)), cap, unit,
                     instance.link_bytes_per_s, False)
    status = Status.OPTIMAL if res.gap <= OPTIMAL_GAP else Status.FEASIBLE
    tm = ", ".join(f"{k} {v:.2f}" for k, v in res.timings.items())
    note = (f"formulation=paths; free ring shares over {len(ring)} candidate orders of "
            f"{len(ring.groups)} groups ({len(rings)} rings used); "
            f"{'warm start; ' if warm is not None else ''}epsilon={eps:g}; "
            f"certified gap {res.gap:.3g} after {res.iterations} rounds ({res.status}); "
            f"times [s]: {tm}, routing {assemble:.2f}")
    import scipy

    outcome = BackendOutcome(status, res.upper, res.lower, res.timings["total"], "approx-cg",
                             f"highspy {highs_version()}, scipy {scipy.__version__}", {})
    bound_s = res.lower * P.sec_per_unit
    if instance.latency_us > 0:
        # finish adds the largest hop count of the returned rings' edges times the latency;
        # a split over other candidates may have a smaller one: only the smallest over the
        # candidates is a bound (every solution uses some candidate of every group)
        bound_s += (_least_hops(topo, Dmp, ring) - max(
            (topo.hop_distances[c.src, c.dst] for c in comms), default=0.0)) \
            * instance.latency_us * 1e-6
    out = route.finish("route-approx", P, options, outcome, routing,
                       res.upper * P.sec_per_unit, bound_s,
                       time.perf_counter() - t0, note=note, ring_mode=ring_mode)
    lengths = WarmStart(n, *(np.zeros(0),) * 4, arcs, res.lengths)
    out = out.with_(info={**out.info, INFO_KEY: lengths.info(),
                          "ring_candidates": len(ring)})
    _remember("warm", out, nxt)
    return out


def _least_hops(topo: Topology, Dmp: np.ndarray, ring: RingChoice) -> float:
    """The fewest hops the longest commodity of any split can have: every MP pair, and per
    group the candidate whose longest edge is shortest."""
    H = topo.hop_distances
    out = float(H[Dmp > 0].max()) if (Dmp > 0).any() else 0.0
    e = H[ring.edge_src, ring.edge_dst]
    longest = np.full(len(ring), -np.inf)
    np.maximum.at(longest, ring.edge_cand, e)
    for g in range(len(ring.groups)):
        out = max(out, float(longest[ring.cand_row == g].min()))
    return out


