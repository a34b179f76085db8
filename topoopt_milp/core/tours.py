"""Short cyclic orders of a node set under a pair cost: nearest neighbour, then 2-opt.

A ring AllReduce order along a topology's links is a tour of the group's members whose
consecutive pairs are neighbours; the cost of a pair is its hop distance (plus, for a
caller that wants variety, a small term that ranks tours of the same length). These are
heuristics for a travelling-salesman tour: :func:`tour` returns the cheapest of a few
2-opt local optima, not a proven shortest tour.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .jit import njit

Order = tuple[int, ...]


def tour(members: Sequence[int], cost: np.ndarray, rng: np.random.Generator,
         restarts: int = 4) -> Order:
    """The cheapest of ``restarts`` :func:`two_opt` tours from random first members."""
    best, val = None, np.inf
    m = np.asarray(list(members), dtype=np.int64)
    C = cost[np.ix_(m, m)]
    for _ in range(max(1, restarts)):
        o = two_opt(members, cost, rng)
        pos = {v: i for i, v in enumerate(m.tolist())}
        idx = np.asarray([pos[v] for v in o])
        c = float(C[idx, np.roll(idx, -1)].sum())
        if c < val - 1e-12:
            best, val = o, c
    return best


def two_opt(members: Sequence[int], cost: np.ndarray, rng: np.random.Generator,
            max_passes: int = 50) -> Order:
    """A short cyclic order of ``members`` under the pair cost ``cost`` (module docstring):
    nearest neighbour from a random member, then 2-opt."""
    m = np.asarray(list(members), dtype=np.int64)
    k = len(m)
    if k <= 3:
        return tuple(int(v) for v in m)
    C = np.ascontiguousarray(cost[np.ix_(m, m)], dtype=np.float64)
    s = _nearest_then_two_opt(C, int(rng.integers(k)), max_passes)
    return tuple(int(m[v]) for v in s)


@njit(cache=True)
def _nearest_then_two_opt(C, start, max_passes):  # pragma: no cover - compiled
    """:func:`two_opt`'s positions: nearest neighbour from ``start``, then passes of 2-opt
    (for each ``i`` the best exchange of ``(s_i, s_i+1)`` with a later edge, if it gains)."""
    k = C.shape[0]
    s = np.empty(k, dtype=np.int64)
    free = np.ones(k, dtype=np.bool_)
    s[0] = start
    free[start] = False
    for t in range(1, k):
        last, nxt, low = s[t - 1], -1, np.inf
        for v in range(k):
            if free[v] and (nxt < 0 or C[last, v] < low):
                nxt, low = v, C[last, v]
        s[t] = nxt
        free[nxt] = False
    for _ in range(max_passes):
        improved = False
        for i in range(k - 2):
            a, b = s[i], s[i + 1]
            j_best, low = -1, np.inf
            for j in range(i + 2, k):  # the second removed edge (s_j, s_j+1)
                c, d = s[j], s[(j + 1) % k]
                delta = C[a, c] + C[b, d] - C[a, b] - C[c, d]
                if i == 0 and j == k - 1:
                    delta = 0.0  # the edge (s[k-1], s[0]) shares s[0] with (a, b)
                if delta < low:
                    j_best, low = j, delta
            if low < -1e-12:
                s[i + 1: j_best + 1] = s[i + 1: j_best + 1][::-1].copy()
                improved = True
        if not improved:
            break
    return s


def tour_hops(dist: np.ndarray, order: Order) -> float:
    """Total hop length ``sum dist(o_i, o_{i+1})`` of a cyclic order."""
    o = np.asarray(order)
    return float(dist[o, np.roll(o, -1)].sum())


def canonical(order: Order) -> Order:
    """The rotation of ``order`` that starts at its smallest member (the orders of
    :func:`topoopt_milp.methods.formulations.ring_lp.candidate_orders` start there too)."""
    k = order.index(min(order))
    return tuple(order[k:] + order[:k])
