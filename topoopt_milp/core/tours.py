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
HAM_STEPS = 10**7  # search steps of hamiltonian_cycles (1-2 s at k = 32..128)


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


def hamiltonian_cycles(adj: np.ndarray, count: int, budget: int = HAM_STEPS) -> list[Order]:
    """Up to ``count`` distinct Hamiltonian cycles of the graph ``adj`` (``k x k``, nonzero =
    edge) on positions ``0..k-1``, as orders from position 0: one depth-first search from
    position 0 that tries the neighbours of a position in increasing order and enumerates
    cycles until it has ``count`` or has taken ``budget`` steps (about 1-2 s).
    Fewer come back when the graph has fewer or the search runs out of steps; none for a
    graph without one. A cycle and its reverse count once.

    Why this search: on a ring plus a matching (three ports, :func:`..methods.heuristics.
    group_split.pattern`) it finds the ring first and then, backtracking, cycles through
    the matching; a split of the ring bytes over them loads no arc above 1/3 (every arc
    equally) with the matchings i + 5 at k = 8 (6 cycles), i + 7 at k = 16 (24) and i + 13
    at k = 32 (all 138), and 3/8 over the 5 cycles of i <-> i + 4 at k = 8; searches that
    try the neighbours in a random order (restarted, Warnsdorff's rule or not) ran out of
    steps with 1-30 cycles at k = 32, over which no split stays below 0.4. 2-opt
    tours (:func:`tour`) that need no second hop are mostly the ring itself. All 138
    cycles of the k = 32 pattern take ~4 M steps, hence the budget."""
    k = len(adj)
    if k < 3:
        return [tuple(range(k))] if k else []
    nbrs = [sorted(np.flatnonzero(adj[v]).tolist(), reverse=True) for v in range(k)]
    seen: set[Order] = set()
    out: list[Order] = []
    path, used, steps = [0], [False] * k, 0
    used[0] = True
    stack = [list(nbrs[0])]  # popped from the end: the lowest position first
    while stack and steps < budget and len(out) < count:
        steps += 1
        if not stack[-1]:
            stack.pop()
            used[path.pop()] = False
            continue
        v = stack[-1].pop()
        if used[v]:
            continue
        if len(path) == k - 1:
            if adj[v, 0]:
                o = (*path, v)
                key = min(o, (o[0], *reversed(o[1:])))
                if key not in seen:
                    seen.add(key)
                    out.append(o)
            continue
        path.append(v)
        used[v] = True
        stack.append(list(nbrs[v]))
    return out
