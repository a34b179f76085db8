"""Warm re-routing: route topology ``L'`` from the routing and lengths of a nearby ``L``.

A local search changes a few links at a time (an edge swap: two links out, two in) and must
route every candidate. :class:`WarmStart` keeps what a ``route-approx`` run on ``L`` leaves:
its routing (as paths per pair) and its best-bound arc lengths. On ``L'``:

* the lengths of the arcs ``L'`` keeps are the old ones; a new arc ``(u, v)`` gets ``theta``
  times the old-length distance from ``u`` to ``v``, ``theta`` the best of a few by the bound
  it certifies (:meth:`WarmStart.resource_lengths`); they give the first certified bound
  and the best point that Wentges smoothing starts from, so pricing starts from the old
  duals;
* the old paths through a removed link are dropped; the others (the old routing's columns)
  are the first pool, each pair's surviving paths rescaled to carry the whole pair (the
  repair), and the pair's hop-count key path covers pairs without one. The first master
  then starts next to the old optimum (measured: within 1.6% of the new optimum after
  one master at n = 64). Tried and slower: the repaired old routing as the fixed base of
  :mod:`.base` (its columns are dense: 3x the master time of a cold run per column), and
  key trees under the old lengths (the optimal lengths are ~0 on half the arcs; the key
  paths wandered and the start was 2x worse than the old routing);
* the certificate is the same as cold: any non-negative lengths give a valid bound
  (:mod:`.method`), so a warm start changes the speed, never the validity.

The fast path (:func:`fast_warm_route`, what :func:`.warm_route` runs on a non-circulant
topology without shared capacities): the route problem of the instance (commodities, demand
matrix, rings) is built once per instance and patched with the new arcs and capacities (no
``Instance.with_topology``, no ``build_problem``), the :class:`WarmStart` of a result is
kept for the next candidate from the same result and for the next swap from the new one
(a local search's chain), and the routing is assembled from the path arrays directly. The
result goes through the method's own :func:`..formulations.route.finish` (objective
recomputed from the routing, scope, analytic bound), so it is the method's result.

Measured at n = 128 (``benchmarks/bench_route_warm.py``, 5 random swaps, 2 shared cores at
load 2.1-2.9): cold/warm CPU median 3.9 (rr4, all-to-all), 1.9 and 1.8 (rr4, coopt), 2.0
(rr8, all-to-all), 1.6 and 4.8 (rr8, coopt); the masters are 85-95% of the warm time. Tried
and not kept (n = 128, rr4, all-to-all unless said): only the pairs that lost a path
re-optimised, the others fixed (3% above the new optimum: every arc of the old optimum is
tight); the whole old routing as a fixed base with an empty pool (6-9 rounds, 1.3-2.6 s);
one persistent simplex master with columns appended (20-80 s: the master is degenerate);
PDLP masters (slower, and a cold gap of 14% at its tolerance); extra shortest-path columns
for the pairs that lost a path (first-master gap 1.0-2.7% instead of 2.3-8%, total time no
better); interior-point tolerance 1e-4 or 1e-3 (more rounds). Session of 2026-12-04 (load
5.5-8.3, 3 swaps): with no ascent on a warm start (:mod:`.paths`, ``WARM_ASCENT``) and the
whole surviving routing as first pool on coopt traffic (:meth:`WarmStart.surviving`),
cold/warm 3.28 (rr4, all-to-all), 4.14 (rr4, bert), 2.08 (rr8, all-to-all), 6.10 (rr8,
bert). Session of 2026-12-05 (docs/route_approx.md): no master at all, the repaired routing
rebalanced by a numba gradient projection over all pairs (power lengths of the loads, the
pass lengths' bound): 24-40 passes still 0.8-3% above the master path's answer (all-to-all, coopt),
so not kept.

Example (the local-search loop of the certified-gaps helper)::

    >>> import numpy as np
    >>> from topoopt_milp import registry
    >>> from topoopt_milp.core.topology import Topology
    >>> from topoopt_milp.workloads.generators import uniform
    >>> from topoopt_milp.methods.route_approx import warm_route
    >>> inst = uniform(16, 4)
    >>> L = Topology.circulant(16, (1, 3)).links.copy()
    >>> old = registry.solve(inst.with_topology(L), "route-approx", formulation="source")
    >>> L2 = L.copy()                                 # swap (0,1),(8,9) -> (0,8),(1,9)
    >>> L2[0, 1] = L2[1, 0] = L2[8, 9] = L2[9, 8] = 0
    >>> L2[0, 8] = L2[8, 0] = L2[1, 9] = L2[9, 1] = 1
    >>> new = warm_route(inst, L2, old, epsilon=0.01)  # a checked SolveResult on L2
    >>> new.gap <= 0.01 and new.bound <= new.objective
    True

``warm_route(instance, links, previous)`` gives what ``registry.solve(
instance.with_topology(links), "route-approx", warm_start=previous)`` gives; the latter, and
``evaluate INST SOL --routing approx --warm-start OLD_SOL`` on the command line, take the
method's full path. ``previous`` is any solution with a routing (a route-approx result also
carries its lengths in ``info["route_approx"]``; without them hop-count lengths are used).
"""

from __future__ import annotations

import gc
import time
import weakref
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from . import reverse
from .base import hops
from .common import LENGTH_FLOOR, ApproxResult, paths_back

OPTIMAL_GAP = 1e-6  # as route_approx.method.OPTIMAL_GAP (tests/test_route_warm.py checks)
MAX_ITER = 1000  # as approx_min_congestion's max_iter
INFO_KEY = "route_approx"  # SolveResult.info entry with the lengths of the run
MIN_FRAC = 0.05  # old paths carrying less of their pair do not enter the first pool ...
FULL_POOL = 4  # ... unless the old routing has at most FULL_POOL paths per arc (surviving)
DETOURS = 2  # start paths per pair that lost a path (surviving)
THETAS = (0.15, 0.25, 0.35, 0.5, 0.7, 1.0)  # new-arc lengths tried (resource_lengths)


def _per_resource(la, res_of_arc):
    return np.bincount(res_of_arc, weights=la) / np.bincount(res_of_arc)


def _merged(group: list) -> tuple:
    """``((path, fraction), ...)`` with equal paths of ``group`` merged (first seen first)."""
    d: dict[tuple, float] = {}
    for p, f in group:
        d[p] = d.get(p, 0.0) + f
    return tuple(d.items())


def _normalised(mu, cap):
    mu = np.maximum(mu, LENGTH_FLOOR * mu.max())
    return mu / float(np.dot(mu, cap))


@dataclass
class WarmStart:
    """Paths ``j`` of pairs ``pair[j] = s * n + t`` (node ids) with fractions ``frac[j]``
    (per pair summing to 1), nodes ``nodes[ptr[j]:ptr[j + 1]]``; ``lengths[i]`` is the
    best-bound length of arc ``arcs[i]`` of the old topology (``None``: unknown)."""

    n: int
    pair: np.ndarray
    nodes: np.ndarray
    ptr: np.ndarray
    frac: np.ndarray
    arcs: np.ndarray | None = None
    lengths: np.ndarray | None = None
    rings: frozenset | None = None  # (group, order) of the rings with a share (.rings)

    @classmethod
    def from_approx(cls, res: ApproxResult, arcs: np.ndarray, demand: np.ndarray) -> WarmStart:
        """From an :class:`ApproxResult` of :func:`.approx_min_congestion` on ``arcs``."""
        n = res.n
        if res.symmetric or res.tree_src is not None:
            return cls._from_pairs(n, res.pair_paths(demand), arcs, res.lengths)
        rows = demand[res.sources]
        kk, tt = np.nonzero(rows > 0)
        knodes, kptr = paths_back(res.key, kk, tt, res.sources)
        keep = np.flatnonzero(res.alt_frac > 0)
        alt_pair = res.alt_src[keep] * n + res.alt_dst[keep]
        rest = 1.0 - np.bincount(alt_pair, weights=res.alt_frac[keep],
                                 minlength=len(res.sources) * n)[kk * n + tt]
        lens = np.diff(res.alt_ptr)[keep]
        pos = np.repeat(res.alt_ptr[keep] - np.concatenate([[0], np.cumsum(lens)])[:-1],
                        lens) + np.arange(int(lens.sum()))
        src_of = res.sources
        pair = np.concatenate([src_of[kk] * n + tt, src_of[res.alt_src[keep]] * n
                               + res.alt_dst[keep]])
        nodes = np.concatenate([knodes, res.alt_nodes[pos]])
        ptr = np.concatenate([kptr, kptr[-1] + np.cumsum(lens)])
        frac = np.concatenate([np.maximum(rest, 0.0), res.alt_frac[keep]])
        return cls(n, pair, nodes, ptr, frac, np.asarray(arcs), res.lengths)

    @classmethod
    def from_solution(cls, result, n: int) -> WarmStart:
        """From any :class:`~topoopt_milp.core.result.SolveResult` with a routing (its
        commodities aggregated per pair), with the lengths of ``info["route_approx"]``."""
        if result.routing is None:
            raise ValueError("warm start: the solution has no routing")
        per_pair: dict[int, dict[tuple, float]] = {}
        total: dict[int, float] = {}
        for c in result.routing.commodities:
            if c.src == c.dst or c.bytes <= 0:
                continue
            key = c.src * n + c.dst
            paths = per_pair.setdefault(key, {})
            for p, f in c.paths:
                paths[tuple(p)] = paths.get(tuple(p), 0.0) + c.bytes * f
            total[key] = total.get(key, 0.0) + c.bytes
        info = (result.info or {}).get(INFO_KEY) or {}
        arcs = np.asarray(info["arcs"], np.int64).reshape(-1, 2) if "arcs" in info else None
        lengths = np.asarray(info["lengths"], float) if "lengths" in info else None
        out = cls._from_pairs(n, ((k // n, k % n, [(p, w / total[k]) for p, w in ps.items()])
                                  for k, ps in per_pair.items()), arcs, lengths)
        out.rings = frozenset((r.group, tuple(r.order)) for r in result.routing.rings
                              if r.share > 0)
        return out

    @classmethod
    def _from_pairs(cls, n, pair_paths, arcs, lengths) -> WarmStart:
        pair, nodes, lens, frac = [], [], [], []
        for s, t, paths in pair_paths:
            for p, f in paths:
                pair.append(s * n + t)
                nodes.extend(p)
                lens.append(len(p))
                frac.append(f)
        ptr = np.concatenate([[0], np.cumsum(np.asarray(lens, np.int64))]).astype(np.int64)
        return cls(n, np.asarray(pair, np.int64), np.asarray(nodes, np.int64), ptr,
                   np.asarray(frac, float), None if arcs is None else np.asarray(arcs),
                   None if lengths is None else np.asarray(lengths, float))

    def pair_paths(self) -> dict[tuple[int, int], tuple]:
        """``{(s, t): ((path, fraction), ...)}`` (equal paths merged, empty ones dropped).

        One pass over the paths in pair order, plain lists, a dict only for a pair with two
        or more paths (n = 128, random 8-regular, all-to-all, 16k pairs, 22-27k paths, 3
        swaps: 0.027-0.035 CPU s against 0.032-0.101 s with numpy slicing per pair; same
        output, same order)."""
        keep = np.flatnonzero(self.frac > 0)
        order = keep[np.argsort(self.pair[keep], kind="stable")]
        nodes = self.nodes.tolist()
        paths = [tuple(nodes[a:b]) for a, b in zip(self.ptr[order].tolist(),
                                                   self.ptr[order + 1].tolist(), strict=True)]
        n, out = self.n, {}
        prev, group = -1, None
        for k, p, f in zip(self.pair[order].tolist(), paths, self.frac[order].tolist(),
                           strict=True):
            if k != prev:  # a new pair: its first path
                if group is not None and len(group) > 1:
                    out[divmod(prev, n)] = _merged(group)
                group = [(p, f)]
                out[divmod(k, n)] = (group[0],)
                prev = k
            else:
                group.append((p, f))
        if group is not None and len(group) > 1:
            out[divmod(prev, n)] = _merged(group)
        return out

    def with_reverses(self) -> WarmStart:
        """Every path also reversed, for the reverse pair (the expansion of :mod:`.reverse`)."""
        lens = np.diff(self.ptr)
        first = np.repeat(self.ptr[:-1], lens)
        last = np.repeat(self.ptr[1:] - 1, lens)
        flipped = self.nodes[first + last - np.arange(len(self.nodes))]
        s, t = np.divmod(self.pair, self.n)
        return WarmStart(self.n, np.concatenate([self.pair, t * self.n + s]),
                         np.concatenate([self.nodes, flipped]),
                         np.concatenate([self.ptr, self.ptr[-1] + self.ptr[1:]]),
                         np.concatenate([self.frac, self.frac]), self.arcs, self.lengths,
                         self.rings)

    def info(self) -> dict:
        """The JSON entry for ``SolveResult.info`` (arcs and lengths)."""
        return {"arcs": self.arcs.tolist(), "lengths": [float(x) for x in self.lengths]}

    def resource_lengths(self, arcs, res_of_arc, cap, pricer=None) -> np.ndarray:
        """Lengths per resource of the new topology: the old arc lengths where the arc stays;
        on a new arc ``(u, v)`` ``theta`` times the old-length distance ``dist(u, v)`` over the
        kept arcs, ``theta`` the best of ``THETAS`` by the bound ``pricer`` certifies (one
        bound-only all-sources Dijkstra each; without ``pricer``, ``theta = 1``); hop count
        without old lengths; normalised to ``sum_r mu_r cap(r) = 1``, floored positive.

        Why a search: ``theta = 1`` shortens no distance but adds the whole detour length to
        the denominator ``sum mu cap``; a short new arc across the cut the optimal lengths
        sit on collapses the numerator (measured 0 with the median old length). At n = 128
        (random 4-regular, all-to-all, 4 swaps) ``theta = 1`` left the start bound 2.2-2.9%
        below the new optimum, the best theta (0.2-0.4) 0.45-1.1%, and the warm column
        generation's median time fell from 2.3 to 1.1 CPU s. Any such lengths give a valid
        bound (:mod:`.method`); the search only picks the best of several valid ones."""
        if self.lengths is None or self.arcs is None or len(self.lengths) == 0:
            return _normalised(1.0 / cap, cap)
        old = np.full((self.n, self.n), np.nan)
        old[self.arcs[:, 0], self.arcs[:, 1]] = self.lengths
        la = old[arcs[:, 0], arcs[:, 1]]
        new = np.flatnonzero(np.isnan(la))
        if len(new) == 0:
            return _normalised(_per_resource(la, res_of_arc), cap)
        # a new arc (u, v): the old-length distance u -> v over the kept arcs (no distance
        # shrinks at theta = 1)
        kept = np.flatnonzero(~np.isnan(la))
        G = csr_matrix((np.maximum(la[kept], 1e-300), (arcs[kept, 0], arcs[kept, 1])),
                       shape=(self.n, self.n))
        tails, inv = np.unique(arcs[new, 0], return_inverse=True)
        via = dijkstra(G, directed=True, indices=tails)[inv, arcs[new, 1]]
        via = np.where(np.isfinite(via), via, float(self.lengths.max()))
        best, best_lb = None, -np.inf
        for theta in (THETAS if pricer is not None else (1.0,)):
            la[new] = theta * via
            mu = _normalised(_per_resource(la, res_of_arc), cap)
            lb = pricer(mu, bound_only=True) if pricer is not None else 0.0
            if lb > best_lb:
                best, best_lb = mu, lb
        return best

    def surviving(self, n, sources, rows, arc_id):
        """The old paths of pairs with demand whose hops are all arcs of the new topology:
        ``(source index, target, nodes, ptr, fraction)`` (fractions rescaled so that each
        pair's surviving paths carry what its dropped ones carried too). Paths carrying at
        most ``MIN_FRAC`` of their pair are dropped, unless the old routing has at most
        ``FULL_POOL`` paths per arc of the new topology: then every surviving path is kept.

        Why the two regimes (n = 128, 3 swaps, warm CPU medians, load 3-8): coopt traffic
        (384-448 pairs, 3.4-5.4 paths each, 1.5-2.1k paths) needs its small-fraction paths:
        rr8 bert 13 rounds / 1.95 s with ``MIN_FRAC``, 2-3 rounds / 0.83 s with all paths
        (0.001: 4 rounds, 1.18 s); rr4 bert 0.39 -> 0.33 s. All-to-all (16k pairs, 23-25k
        paths) is slower with all of them (rr4 0.49 -> 1.09 s, rr8 0.93 -> 1.86 s: the
        first master doubles). Either pool is a set of feasible columns; the bound is
        certified from lengths alone (:mod:`.method`)."""
        if n != self.n:
            raise ValueError(f"warm start: routing of {self.n} nodes, instance of {n}")
        S = len(sources)
        sidx = np.full(n, -1, np.int64)
        sidx[sources] = np.arange(S)
        a, owner = hops(self.nodes, self.ptr, arc_id)
        bad = np.zeros(len(self.pair), bool)
        bad[owner[a < 0]] = True
        s, t = np.divmod(self.pair, n)
        ok = ~bad & (sidx[s] >= 0) & (self.nodes[self.ptr[:-1]] == s)
        ok &= self.nodes[self.ptr[1:] - 1] == t
        ok[ok] &= rows[sidx[s[ok]], t[ok]] > 0
        m = int(arc_id.max()) + 1
        least = 0.0 if len(self.pair) <= FULL_POOL * m else MIN_FRAC
        keep = np.flatnonzero(ok & (self.frac > least))
        ks, ts = sidx[s[keep]], t[keep]
        surv = np.bincount(ks * n + ts, weights=self.frac[keep], minlength=S * n)
        lens = np.diff(self.ptr)[keep]
        pos = np.repeat(self.ptr[keep] - np.concatenate([[0], np.cumsum(lens)])[:-1],
                        lens) + np.arange(int(lens.sum()))
        ptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        return ks, ts, self.nodes[pos], ptr, self.frac[keep] / surv[ks * n + ts]


# -- the fast path of warm_route: the route problem patched, the state kept per result ------
_CACHE: OrderedDict[tuple[str, int], tuple[weakref.ref, object]] = OrderedDict()
CACHE_SIZE = 16  # results and instances whose warm state is kept (a local search's chain)


def _remember(kind: str, owner, value) -> None:
    _CACHE[(kind, id(owner))] = (weakref.ref(owner), value)
    _CACHE.move_to_end((kind, id(owner)))
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)


def _recall(kind: str, owner):
    hit = _CACHE.get((kind, id(owner)))
    return hit[1] if hit is not None and hit[0]() is owner else None


def patched_problem(instance, links: np.ndarray, options):
    """The route problem of ``instance`` on topology ``links``, or ``None`` where the fast path
    does not apply (shared capacities, a circulant topology: its rings and the symmetric
    reduction follow the topology). The commodities and the demand matrix depend on the
    instance and the rings only, so they are computed once per instance and patched with
    the new arcs and capacities (no ``Instance.with_topology``, no ``build_problem``)."""
    from dataclasses import replace

    from ...core.circulant import circulant_jumps
    from ...core.errors import InputError
    from ...core.topology import Topology
    from ..formulations.route_problem import problem_on, ring_orders

    if (instance.topology is not None and instance.topology.shared) or \
            options.method.formulation == "symmetric" or options.method.columns != "paths":
        return None
    L = np.asarray(links)
    if circulant_jumps(L) is not None:
        return None
    topo = Topology(L)
    rings = ring_orders(instance, topo, options)
    cached = _recall("problem", instance)
    if cached is None or cached.rings != rings:
        P = problem_on(instance, topo, rings)
        _remember("problem", instance, P)
        return P
    u, v = np.nonzero(L)
    unreachable = (cached.D > 0) & ~np.isfinite(topo.hop_distances)
    if unreachable.any():
        s, t = (int(x) for x in np.argwhere(unreachable)[0])
        raise InputError(f"topology: no path from {s} to {t}, which has demand (disconnected)")
    return replace(cached, topology=topo, arcs=np.stack([u, v], axis=1),
                   res_arcs=tuple(np.array([a]) for a in range(len(u))),
                   res_cap=L[u, v].astype(float))


@contextmanager
def gc_paused():
    """CPython's cyclic garbage collector off for the block (restored after it).

    Why: a warm call allocates tens of thousands of small containers (path tuples, one
    :class:`~topoopt_milp.core.topology.Commodity` per commodity: 16k at n = 128
    all-to-all), and a local search keeps several routings of that size alive, so the
    collector's generational thresholds trigger full collections that scan every live
    object. None of what the call allocates is in a reference cycle (tuples of ints and
    floats, frozen dataclasses, numpy arrays), so reference counting frees all of it
    without the collector; cycles made elsewhere wait until the collector is back on.
    Measured (n = 128, all-to-all, 3 swaps x 3 repetitions, alternated, load 2.8-3.4):
    warm CPU median 0.403 -> 0.353 s on random 8-regular graphs, 0.421 -> 0.395 s on
    4-regular ones (cold route-approx, not paused: 0.79 and 1.39 s; paused it would take
    0.61 and 1.26 s)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def fast_warm_route(instance, links, previous, options):
    """``route-approx`` on ``links`` warm-started from ``previous`` without rebuilding what a
    topology change leaves alone (:func:`patched_problem`; the previous result's
    :class:`WarmStart` is kept for the next call, so a chain of swaps never re-reads a
    routing). The result is the same as the method's: the objective recomputed from the
    routing by :func:`..formulations.route.finish`, the bound certified by
    :func:`.approx_min_congestion`. ``None`` where the fast path does not apply. Runs with
    the garbage collector paused (:func:`gc_paused`)."""
    with gc_paused():
        return _fast_warm_route(instance, links, previous, options)


def _fast_warm_route(instance, links, previous, options):
    import scipy

    from ...core.backends.pulp_backend import BackendOutcome, highs_version
    from ...core.result import Status
    from ...core.topology import Commodity, Routing
    from .. import model_data as _exact
    from ..formulations import route
    from .common import Limits
    from .paths import solve_paths

    t0 = time.perf_counter()
    P = patched_problem(instance, links, options)
    if P is None or previous is None or previous.routing is None:
        return None
    tp = time.perf_counter()
    warm = _recall("warm", previous)
    if warm is None:
        warm = WarmStart.from_solution(previous, instance.n)
        _remember("warm", previous, warm)  # the next candidate from the same result
    tw = time.perf_counter()
    eps = float(options.method.epsilon)
    n, m = instance.n, len(P.arcs)
    arc_id = np.full((n, n), -1, np.int64)
    arc_id[P.arcs[:, 0], P.arcs[:, 1]] = np.arange(m)
    # approx_min_congestion's path branch, its input checks done by the patching (one
    # resource per arc, distinct arcs, positive capacities, every demand connected)
    res_of_arc, cap, D = np.arange(m), P.res_cap, P.D
    rev = reverse.applies(P)
    if rev:  # symmetric demand: half the pairs, one resource per link (.reverse)
        res_arcs, cap, D = reverse.reduce(n, P.arcs, P.res_cap, P.D)
        res_of_arc = np.empty(m, np.int64)
        res_of_arc[np.concatenate(res_arcs)] = np.repeat(np.arange(len(res_arcs)), 2)
    res = solve_paths(n, P.arcs, arc_id, res_of_arc, cap, D,
                      Limits(t0, options.time_left(), MAX_ITER, eps),
                      max(4 * len(cap) * (2 if rev else 1), n * n // 16), 1, options.seed,
                      warm)
    t = time.perf_counter()
    nxt = WarmStart.from_approx(res, P.arcs, D)
    if rev:
        nxt = nxt.with_reverses()
    paths = nxt.pair_paths()
    routed = []
    for c in P.commodities:
        pp = paths.get((c.src, c.dst))
        if pp is None:
            break
        routed.append(Commodity(c.src, c.dst, c.bytes, c.kind, c.tag, pp))
    if len(routed) == len(P.commodities):
        routing = Routing(tuple(P.rings), tuple(routed))
    else:  # a commodity without volume: the method's own assembly gives it a shortest path
        routing = _exact.routing_from_pair_paths(
            instance, P.topology, P.rings, {k: list(v) for k, v in paths.items()},
            options.seed)
    assemble = time.perf_counter() - t
    status = Status.OPTIMAL if res.gap <= OPTIMAL_GAP else Status.FEASIBLE
    tm = ", ".join(f"{k} {v:.2f}" for k, v in res.timings.items())
    note = (f"formulation=paths; warm start (patched problem); "
            f"{'reversal-symmetric pairs; ' if rev else ''}epsilon={eps:g}; "
            f"certified gap {res.gap:.3g} after {res.iterations} rounds ({res.status}); "
            f"times [s]: problem {tp - t0:.2f}, warm state {tw - tp:.2f}, {tm}, "
            f"routing {assemble:.2f}")
    outcome = BackendOutcome(status, res.upper, res.lower, res.timings["total"], "approx-cg",
                             f"highspy {highs_version()}, scipy {scipy.__version__}", {})
    out = route.finish("route-approx", P, options, outcome, routing,
                       res.upper * P.sec_per_unit, res.lower * P.sec_per_unit,
                       time.perf_counter() - t0, note=note)
    out = out.with_(info={**out.info, INFO_KEY: nxt.info()})
    _remember("warm", out, nxt)
    return out
