"""Hop-balanced routing: one shortest path per pair, loads balanced, certified by the hop
bound (the fast path of :mod:`.method` before any column generation).

Why. With equal lengths the certified bound of :mod:`.method` is the hop bound
``LB_hop = sum_k d_k hops(k) / sum_r cap(r)``. On random regular graphs of degree 8 it is
tight or nearly so (all-to-all, measured: n = 128 optimum = ``LB_hop`` to 1e-6, n = 256
within 0.05%). When it is tight every optimal routing uses shortest paths only and loads
every resource exactly at ``LB_hop`` (a longer path adds to ``sum_r load(r) / sum_r cap(r)``,
which is at most the congestion). So the primal only has to balance loads among shortest
paths, and no master LP is needed: at n = 1024, d = 8 one interior-point master took 196 CPU
s (254k columns) against a hop bound that was already the optimum's certificate.

Algorithm (numba kernels): every pair with demand takes one hop-shortest path, greedily in a
seeded random order, each hop to the next node (one hop closer to the target) whose
resource is least loaded after the step. Then passes of rip-up and re-route: the pairs
whose path touches a resource within ``HOT`` of the current maximum are taken off and
routed again, in random order, on the shortest path minimising ``sum_hops ((load + d) /
(cap U))^POWER`` (a smooth stand-in for the path's largest load), found by dynamic
programming over the shortest-path DAG from ``s`` to ``t`` (nodes ``x`` with ``hops(s, x) +
hops(x, t) = hops(s, t)``). It stops when the certified gap ``(U - LB_hop) / U`` is at most
the target, after ``PASSES`` passes, after ``PATIENCE`` passes in a row that do not lower
``U`` (one, when the gap is still above ``FAR`` epsilon), or at the time limit.

The result is a routing (one path per pair) with its congestion ``U`` recomputed from the
paths, and the hop bound with the floating-point margin of :mod:`.method` (hop counts are
exact integers; ``math.fsum`` and one division). The caller keeps it only when the gap is
within epsilon; otherwise the column generation runs as before (a graph of degree 4 is not
tight: n = 256, optimum 1.6% above ``LB_hop``). Pairs are unsplittable here, so a resource's
load moves in steps of one pair's demand: with few pairs per resource (n = 128, d = 8: 40
per link) the gap cannot reach 1%, and the fast path gives way to the column generation.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ...core.jit import njit
from .common import U_ROUND

PASSES = 40  # rip-up and re-route passes at most
HOT = 0.02  # a pair is re-routed when its path touches a resource within 2% of the maximum
FAR = 3.0  # a pass without progress ends it at once when the gap is above FAR x epsilon
PATIENCE = 3  # passes in a row without a lower maximum that end it
POWER = 16.0  # exponent of the path cost (load / (cap U))^POWER: a smooth maximum
MIN_PAIRS_PER_RES = 50  # fewer pairs per resource: loads too coarse for 1% (docstring)


@njit(cache=True)
def _greedy(indptr, nbr, slot_res, H, src, dst, vol, cap, load, order, ptr,
            nodes):  # pragma: no cover - compiled
    for k in order:
        s, t, w = src[k], dst[k], vol[k]
        u = s
        p = ptr[k]
        nodes[p] = s
        h = H[s, t]
        for step in range(1, h + 1):
            best, best_v, best_r = np.inf, -1, -1
            deg = indptr[u + 1] - indptr[u]
            off = (k * 7 + step) % deg  # a pair-dependent first slot: no bias among ties
            for j in range(deg):
                slot = indptr[u] + (off + j) % deg
                v = nbr[slot]
                if H[v, t] == h - step:
                    r = slot_res[slot]
                    c = (load[r] + w) / cap[r]
                    if c < best:
                        best, best_v, best_r = c, v, r
            load[best_r] += w
            nodes[p + step] = best_v
            u = best_v


@njit(cache=True)
def _reroute(indptr, nbr, slot_res, H, src, dst, vol, cap, load, which, ptr, nodes, U, power,
             arc_res, dist, stamp, pred, frontier, nxt):  # pragma: no cover - compiled
    for k in which:
        s, t, w = src[k], dst[k], vol[k]
        h = H[s, t]
        p = ptr[k]
        for i in range(h):  # take the pair off
            load[arc_res[p + i]] -= w
        tag = k + 1
        stamp[s] = tag
        dist[s] = 0.0
        frontier[0] = s
        nf = 1
        for step in range(1, h + 1):
            nn = 0
            for i in range(nf):
                u = frontier[i]
                for slot in range(indptr[u], indptr[u + 1]):
                    v = nbr[slot]
                    if H[v, t] == h - step:
                        r = slot_res[slot]
                        c = dist[u] + ((load[r] + w) / (cap[r] * U)) ** power
                        if stamp[v] != tag:
                            stamp[v] = tag
                            dist[v] = c
                            pred[v] = slot
                            nxt[nn] = v
                            nn += 1
                        elif c < dist[v]:
                            dist[v] = c
                            pred[v] = slot
            for i in range(nn):
                frontier[i] = nxt[i]
            nf = nn
        v = t
        for i in range(h, 0, -1):  # walk back, put the pair on its new path
            slot = pred[v]
            nodes[p + i] = v
            r = slot_res[slot]
            load[r] += w
            arc_res[p + i - 1] = r
            lo, hi = 0, indptr.shape[0] - 1  # the tail of slot: indptr[u] <= slot < indptr[u+1]
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if indptr[mid] <= slot:
                    lo = mid
                else:
                    hi = mid
            v = lo
        nodes[p] = s


def hop_bound(H, src, dst, vol, cap, n) -> float:
    """The certified hop bound ``sum_k d_k hops(k) / sum_r cap(r)`` with the margin of
    :mod:`.method` (exact integer hops, ``math.fsum``, one division)."""
    total = math.fsum((vol * H[src, dst]).tolist()) / math.fsum(np.asarray(cap).tolist())
    return total * (1.0 - 4.0 * (n + 8) * U_ROUND)


def balanced(n, arcs, res_of_arc, cap, D, epsilon, H, deadline=None, seed=0):
    """Hop-balanced routing of demand ``D`` (module docstring), or ``None`` when it does not
    apply (too few pairs per resource). ``H``: the hop distances, or a function giving them.
    Returns ``(src, dst, nodes, ptr, upper, lower, passes)``: pair ``j`` from ``src[j]`` to
    ``dst[j]`` on nodes ``nodes[ptr[j]:ptr[j+1]]``;
    ``upper`` its congestion (recomputed), ``lower`` the certified hop bound (model units).
    ``deadline``: a :func:`time.perf_counter` reading to stop at."""
    src, dst = np.nonzero(D > 0)
    R = len(cap)
    if len(src) < MIN_PAIRS_PER_RES * R:
        return None
    if callable(H):  # computed only when the fast path applies (n x n: 800 MB at n = 10^4)
        H = H()
    vol = D[src, dst].astype(float)
    Hi = np.where(np.isfinite(H), H, -1).astype(np.int32)
    if (Hi[src, dst] < 0).any():
        return None  # disconnected demand: the column generation reports it
    order = np.argsort(arcs[:, 0], kind="stable")
    indptr = np.searchsorted(arcs[order, 0], np.arange(n + 1)).astype(np.int64)
    nbr = arcs[order, 1].astype(np.int64)
    slot_res = np.asarray(res_of_arc)[order].astype(np.int64)
    lens = Hi[src, dst].astype(np.int64)
    ptr = np.concatenate([[0], np.cumsum(lens + 1)]).astype(np.int64)
    nodes = np.empty(int(ptr[-1]), np.int64)
    load = np.zeros(R)
    cap = np.asarray(cap, float)
    rng = np.random.default_rng(seed)
    _greedy(indptr, nbr, slot_res, Hi, src, dst, vol, cap, load, rng.permutation(len(src)),
            ptr, nodes)
    lower = hop_bound(Hi, src, dst, vol, cap, n)
    arc_id = np.full((n, n), -1, np.int64)
    arc_id[arcs[:, 0], arcs[:, 1]] = np.arange(len(arcs))
    owner = np.repeat(np.arange(len(src)), lens)
    first = np.repeat(ptr[:-1], lens)
    hop = np.arange(len(owner)) - np.repeat(np.cumsum(lens) - lens, lens)
    arc_res = np.asarray(res_of_arc)[arc_id[nodes[first + hop], nodes[first + hop + 1]]]
    arc_res = _hop_layout(arc_res, lens, ptr)
    work = [np.zeros(n), np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64),
            np.zeros(n, np.int64)]
    upper = float((load / cap).max())
    passes = still = 0
    while (upper - lower) > epsilon * upper and passes < PASSES and still < PATIENCE:
        if deadline is not None and time.perf_counter() > deadline:
            break
        passes += 1
        ratio = load / cap
        hot = ratio[arc_res] >= (1.0 - HOT) * upper
        which = np.unique(owner[hot[_hop_index(lens, ptr)]])
        _reroute(indptr, nbr, slot_res, Hi, src, dst, vol, cap, load, rng.permutation(which),
                 ptr, nodes, upper, POWER, arc_res, *work)
        new = float((load / cap).max())
        still = still + 1 if new >= upper * (1 - 1e-6) else 0
        upper = min(upper, new)
        if still and upper - lower > FAR * epsilon * upper:
            break  # stalled far from the target: the hop bound is not tight here
    load = np.bincount(arc_res[_hop_index(lens, ptr)], weights=vol[owner], minlength=R)
    upper = float((load / cap).max())  # recomputed from the paths
    return src, dst, nodes, ptr, upper, min(lower, upper), passes


def _hop_index(lens, ptr):
    """Positions in a ``ptr``-laid array (one slot per node) of every path's hops."""
    return np.repeat(ptr[:-1], lens) + (np.arange(int(lens.sum()))
                                        - np.repeat(np.cumsum(lens) - lens, lens))


def _hop_layout(per_hop, lens, ptr):
    """``per_hop`` (one entry per hop, paths in order) laid out like the nodes (``ptr``)."""
    out = np.full(int(ptr[-1]), -1, np.int64)
    out[_hop_index(lens, ptr)] = per_hop
    return out


class BalancedResult:
    """What :mod:`.method` reads of a column-generation result (:class:`.common.ApproxResult`),
    for a hop-balanced routing: one path per pair, the hop bound and its (equal) lengths."""

    def __init__(self, n, src, dst, nodes, ptr, upper, lower, passes, arcs, cap, timings):
        self.n, self.upper, self.lower, self.iterations = n, upper, lower, passes
        self._src, self._dst, self._nodes, self._ptr = src, dst, nodes, ptr
        self.status = "converged (hop-balanced shortest paths)"
        self.timings = timings
        # the bound's lengths: equal, normalised to sum_r mu_r cap(r) = 1 (per arc)
        self.lengths = np.full(len(arcs), 1.0 / math.fsum(np.asarray(cap).tolist()))

    @property
    def gap(self) -> float:
        return (self.upper - self.lower) / self.upper if self.upper > 0 else 0.0

    def pair_paths(self, demand):
        nodes, ptr = self._nodes.tolist(), self._ptr.tolist()
        for j, (s, t) in enumerate(zip(self._src.tolist(), self._dst.tolist(), strict=True)):
            yield s, t, [(tuple(nodes[ptr[j]:ptr[j + 1]]), 1.0)]


def solve(n, arcs, res_arcs, cap, D, epsilon, time_limit, H, seed=0):
    """:func:`balanced` on a problem given by resources (``res_arcs``), as a
    :class:`BalancedResult` when its certified gap is within ``epsilon``, else ``None``."""
    t0 = time.perf_counter()
    res_of_arc = np.empty(len(arcs), np.int64)
    res_of_arc[np.concatenate(res_arcs)] = np.repeat(np.arange(len(res_arcs)),
                                                     [len(a) for a in res_arcs])
    deadline = None if time_limit is None else t0 + 0.5 * time_limit  # the rest: the CG
    out = balanced(n, arcs, res_of_arc, cap, D, epsilon, H, deadline, seed)
    if out is None:
        return None
    src, dst, nodes, ptr, upper, lower, passes = out
    if upper - lower > epsilon * upper:
        return None
    timings = {"balance": time.perf_counter() - t0, "total": time.perf_counter() - t0}
    return BalancedResult(n, src, dst, nodes, ptr, upper, lower, passes, arcs, cap, timings)
