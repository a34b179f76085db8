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
    C = cost[np.ix_(m, m)]
    start = int(rng.integers(k))
    seq, free = [start], np.ones(k, dtype=bool)
    free[start] = False
    for _ in range(k - 1):
        row = np.where(free, C[seq[-1]], np.inf)
        nxt = int(np.argmin(row))
        seq.append(nxt)
        free[nxt] = False
    s = np.asarray(seq)
    for _ in range(max_passes):
        improved = False
        for i in range(k - 2):
            a, b = s[i], s[i + 1]
            c = s[i + 2:]  # candidates for the second removed edge (c_j, c_j+1)
            d = np.append(s[i + 3:], s[0])[: len(c)]
            delta = C[a, c] + C[b, d] - C[a, b] - C[c, d]
            if i == 0:
                delta[-1] = 0.0  # the edge (s[k-1], s[0]) shares s[0] with (a, b)
            j = int(np.argmin(delta))
            if delta[j] < -1e-12:
                j += i + 2
                s[i + 1: j + 1] = s[i + 1: j + 1][::-1].copy()
                improved = True
        if not improved:
            break
    return tuple(int(m[v]) for v in s)


def tour_hops(dist: np.ndarray, order: Order) -> float:
    """Total hop length ``sum dist(o_i, o_{i+1})`` of a cyclic order."""
    o = np.asarray(order)
    return float(dist[o, np.roll(o, -1)].sum())


def canonical(order: Order) -> Order:
    """The rotation of ``order`` that starts at its smallest member (the orders of
    :func:`topoopt_milp.methods.formulations.ring_lp.candidate_orders` start there too)."""
    k = order.index(min(order))
    return tuple(order[k:] + order[:k])
